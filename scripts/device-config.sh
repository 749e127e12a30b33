# Sourced by scripts/device-env.sh: daemon_config, the one cuzk.toml of the
# device calls (the daemon on the CUDA backend with development keys).
#   daemon_config FILE LISTEN JOURNAL PARAM_CACHE HOST_BUDGET PROCESSES
# The status listener is $http (127.0.0.1:9821 unless the caller sets it);
# CUZK_VRAM_BUDGET caps the GPU budget (a smaller card on the H200);
# GPUS_EXTRA and PIPELINE_EXTRA are lines added to [gpus] and [pipeline].
daemon_config() {
  local procs=$6
  cat >"$1" <<EOF
[daemon]
listen = "$2"
journal = "$3"
status_listen = "${http:-127.0.0.1:9821}"
[gpus]
backend = "cuda"
${CUZK_VRAM_BUDGET:+vram_budget = \"$CUZK_VRAM_BUDGET\"}
${GPUS_EXTRA:-}
[memory]
total_budget = "$5"
[pipeline]
synthesis_concurrency = $((procs > 0 ? procs : 1))
synthesis_processes = $procs
${PIPELINE_EXTRA:-}
[srs]
param_cache = "$4"
generate_dev_keys = true
EOF
}
