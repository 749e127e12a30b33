#!/usr/bin/env bash
# Issue 16 on `nvidia-h200-x2`: the daemon on both GPUs against the daemon on
# GPU 0 alone, each proving `cuzk-bench batch -t porep --c1 c1-32g.json -c 6 -j 2`
# with the 32GiB PoRep key resident on every GPU it uses; then a GPU made to
# fail mid-batch. Acceptance: sustained seconds a proof on two GPUs ≤ 0.55 × on
# one, every proof verified; with GPU 1 failing, its partitions finish on GPU 0.
#
# One phase per device call (each stays under the 10-minute limit of a call; the
# machine must stay warm between them: the c1, the matrix cache, the key file
# and the results live under /tmp/cuzk-multigpu and ~/.cache/cuzk):
#   bash scripts/device-multigpu.sh prep   # gen-c1, matrices, the development key, loaded on both GPUs
#   bash scripts/device-multigpu.sh two    # [gpus] devices = [0, 1]: batch, sustained s/proof
#   bash scripts/device-multigpu.sh one    # [gpus] devices = [0]: batch, the ratio against `two`
#   bash scripts/device-multigpu.sh fail   # both GPUs, CUZK_FAIL_DEVICE=1:3: its partitions go to GPU 0
#   bash scripts/device-multigpu.sh all    # all four in one call (a machine without the call limit)
#   bash scripts/device-multigpu.sh headline  # one GPU (any machine): gen-c1 and the key file
#                                             # (gen-params) when missing, then `one`
# Carry [".whl", ".prebuilt"] as for scripts/device-check.sh. Settings (environment):
# CUZK_COUNT (6) and CUZK_CONCURRENCY (2): the batch; CUZK_PROCESSES (16): witness
# processes (with the witness on the GPU they check vanilla proofs and make hint
# tables, ≈ 7 s a 32GiB partition); CUZK_HOST_BUDGET (80 % of the host's memory);
# CUZK_LOOKAHEAD ([pipeline] synthesis_lookahead, 1); CUZK_FAIL_AFTER (3);
# CUZK_BATCH_LIMIT (560 s, the batch's time limit); CUZK_SHARED_PASS ([gpus]
# shared_pass_partitions, 0: a job's partitions share L, A and B's passes where
# those bases stream; 1: off, the side branch instead); CUZK_VRAM_BUDGET ([gpus]
# vram_budget, e.g. 16GiB: a smaller card's tier on the H200); CUZK_KEY_FILE=0: no key
# file for `headline` (the daemon makes the key in memory: a streamed tier's pinned
# copy and a key file in /dev/shm do not fit a 128 GiB host together). The key is a development key
# (INSECURE), written as a .params file when the disk has room for it beside the
# matrices, else made straight into each GPU's memory (engine/keystore/sources.py).
# Logs, /status and /metrics snapshots and multigpu.txt (the figures) go to $OUT.
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
phase=${1:-all}
home=/tmp/cuzk-multigpu
# where the key's .params file lives (the daemon writes a development one there
# when it has room): CUZK_PARAM_CACHE=/dev/shm/params keeps a 32GiB PoRep file
# (44.2 GiB) beside the 32 GB matrix cache on a 64 GiB disk
params=${CUZK_PARAM_CACHE:-$home/params}
mkdir -p "$home" "$params"
c1=${CUZK_C1:-$home/c1-32g.json}
count=${CUZK_COUNT:-6}
conc=${CUZK_CONCURRENCY:-2}
procs=${CUZK_PROCESSES:-16}
http=127.0.0.1:9821
results=$home/multigpu.txt
daemon=""
sampler=""

write_config() {  # name, devices
  GPUS_EXTRA="devices = $2
gpu_workers_per_device = 2
shared_pass_partitions = ${CUZK_SHARED_PASS:-0}" PIPELINE_EXTRA="synthesis_lookahead = ${CUZK_LOOKAHEAD:-1}" \
    daemon_config "$home/$1.toml" "unix://$home/$1.sock" "$home/$1-journal.sqlite" "$params" \
    "${CUZK_HOST_BUDGET:-$(awk '/MemTotal/{printf "%dGiB", $2 * 0.8 / 1048576}' /proc/meminfo)}" "$procs"
}

start_daemon() {  # name, devices; the rest of the environment is the caller's
  write_config "$1" "$2"
  rm -f "$home/$1-journal.sqlite"* "$home/$1.sock"
  step "daemon '$1': [gpus] devices = $2"
  python3 -m cuzk.cli.daemon --config "$home/$1.toml" --log-level info >"$OUT/daemon-$1.log" 2>&1 &
  daemon=$!
  # the daemon's process tree (synthesis workers included): peak host memory at its end
  python3 -m cuzk.bench.hostmem "$daemon" >"$OUT/hostmem-$1.json" 2>/dev/null &
  sampler=$!
  for _ in $(seq 240); do [ -S "$home/$1.sock" ] && return 0; sleep 0.5; done
  echo "daemon '$1' did not start:"; tail -20 "$OUT/daemon-$1.log"; return 1
}

stop_daemon() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -n "$sampler" ] && wait "$sampler"  # it prints the peaks once the daemon is gone
  daemon="" sampler=""
}
trap stop_daemon EXIT

snapshot() {  # name: /status and /metrics into $OUT, a per-device summary on stdout
  python3 - "$1" "$http" "$OUT" <<'PY'
import json, sys, urllib.request
name, http, out = sys.argv[1:]
status = json.load(urllib.request.urlopen(f"http://{http}/status"))
metrics = urllib.request.urlopen(f"http://{http}/metrics").read().decode()
json.dump(status, open(f"{out}/status-{name}.json", "w"), indent=1)
open(f"{out}/metrics-{name}.txt", "w").write(metrics)
for d in status["devices"]:
    keys = ", ".join(k["circuit_id"] for k in d["resident_keys"])
    print(f"  GPU {d['ordinal']}: {d['health']}, {d['partitions_proven']} partitions proven, "
          f"busy {d['busy_secs']:.0f} s, {d['failures']} failures "
          f"({d['partitions_failed_over']} failed over), keys: {keys or '-'}, "
          f"peak {d['budget_peak_bytes'] / 2**30:.1f} of {d['budget_limit_bytes'] / 2**30:.1f} GiB"
          + (f", last failure: {d['last_failure']}" if d["last_failure"] else ""))
def mean(stage):
    s = c = 0.0
    for line in metrics.splitlines():
        if line.startswith("cuzk_stage_duration_seconds_") and f'stage="{stage}"' in line \
                and 'proof_kind="porep"' in line:
            if line.startswith("cuzk_stage_duration_seconds_sum"): s = float(line.split()[-1])
            if line.startswith("cuzk_stage_duration_seconds_count"): c = float(line.split()[-1])
    return s / c if c else float("nan")
print(f"  per partition: synthesis {mean('synthesis'):.1f} s, gpu {mean('gpu'):.1f} s, "
      f"queue {mean('queue'):.1f} s")
PY
}

sustained() { awk '/^sustained:/{sub("s/proof", "", $2); print $2}' "$OUT/batch-$1.log"; }

batch_run() {  # name, devices
  start_daemon "$1" "$2" || return 1
  step "preload porep-32g on every GPU of '$1'"
  timeout 400 python3 -m cuzk.cli.bench -a "unix://$home/$1.sock" preload -c porep-32g
  step "batch '$1': -c $count -j $conc"
  timeout "${CUZK_BATCH_LIMIT:-560}" python3 -m cuzk.cli.bench -a "unix://$home/$1.sock" \
    batch -t porep --c1 "$c1" -c "$count" -j "$conc" 2>&1 | tee "$OUT/batch-$1.log" | tail -9
  local rc=${PIPESTATUS[0]}
  snapshot "$1" | tee -a "$OUT/steps.log"
  stop_daemon
  echo "  host peak of the daemon and its workers: $(tail -1 "$OUT/hostmem-$1.json" 2>/dev/null)" |
    tee -a "$OUT/steps.log"
  local s
  s=$(sustained "$1")
  echo "$1: devices $2, batch exit $rc, sustained ${s:-none} s/proof (-c $count -j $conc)" | tee -a "$results"
  return "$rc"
}

gen_key() {  # the development .params file, made in a process of its own (with the matrices):
  # the daemon's host peak is then its key's load and the batch, as with Filecoin's files
  local name
  name=$(python3 -m cuzk.cli.main params-list --json | python3 -c 'import json, sys
print(next(r["params"]["file"] for r in json.load(sys.stdin)["circuits"] if r["circuit_id"] == "porep-32g"))')
  if [ ! -s "$params/$name" ]; then
    step "gen-params porep 32GiB into $params (matrices, the INSECURE key file)"
    python3 -m cuzk.cli.main gen-params porep --sector-size 32GiB --out "$params" --backend cuda \
      >"$OUT/gen-params.log" 2>&1 &
    local gen=$!
    python3 -m cuzk.bench.hostmem "$gen" >"$AUX/hostmem-gen.json" 2>/dev/null
    wait "$gen"
    echo "  gen-params exit $?, host peak: $(tail -1 "$AUX/hostmem-gen.json")" | tee -a "$OUT/steps.log"
    tail -3 "$OUT/gen-params.log"
  fi
}

gen_c1() {
  if [ ! -s "$c1" ]; then
    step "gen-c1 32GiB"
    python3 -m cuzk.cli.bench gen-c1 --sector-size 32GiB --out "$c1" 2>&1 | tail -2
  fi
}

prep() {
  gen_c1
  python3 -m cuzk.cli.main memory-plan porep --sector-size 32GiB | tee "$OUT/memory-plan.txt"
  df -h "$home" "${CUZK_CIRCUIT_CACHE:-$HOME/.cache/cuzk}" 2>/dev/null | tee "$OUT/disk.txt"
  rm -f "$params"/.*.partial  # a key file left half written by a prep cut short
  start_daemon prep "[0, 1]" || return 1
  step "preload porep-32g on both GPUs (matrices, the development key, two loads)"
  timeout 540 python3 -m cuzk.cli.bench -a "unix://$home/prep.sock" preload -c porep-32g
  snapshot prep
  grep -E "development|loading|matrices|ERROR" "$OUT/daemon-prep.log" | tail -12
  stop_daemon
  ls -la "$params"
}

ratio() {
  local two one
  two=$(awk -F'sustained ' '/^two:/{split($2, a, " "); v=a[1]} END{print v}' "$results")
  one=$(awk -F'sustained ' '/^one:/{split($2, a, " "); v=a[1]} END{print v}' "$results")
  python3 - "$two" "$one" <<'PY' | tee -a "$results"
import sys
try:
    two, one = float(sys.argv[1]), float(sys.argv[2])
except ValueError:
    sys.exit(print(f"ratio: needs both runs (two: {sys.argv[1]!r}, one: {sys.argv[2]!r})"))
r = two / one
print(f"ratio two/one = {two:.1f} / {one:.1f} = {r:.3f}: acceptance (<= 0.55) "
      + ("MET" if r <= 0.55 else "NOT MET"))
PY
}

fail_run() {
  local after=${CUZK_FAIL_AFTER:-3} fcount=${CUZK_FAIL_COUNT:-2}
  export CUZK_FAIL_DEVICE="1:$after"
  start_daemon fail "[0, 1]" || return 1
  unset CUZK_FAIL_DEVICE
  timeout 400 python3 -m cuzk.cli.bench -a "unix://$home/fail.sock" preload -c porep-32g
  step "batch 'fail': GPU 1 fails as it starts its partition $((after + 1)); -c $fcount -j $conc"
  timeout "${CUZK_BATCH_LIMIT:-560}" python3 -m cuzk.cli.bench -a "unix://$home/fail.sock" \
    batch -t porep --c1 "$c1" -c "$fcount" -j "$conc" 2>&1 | tee "$OUT/batch-fail.log" | tail -9
  local rc=${PIPESTATUS[0]}
  snapshot fail | tee -a "$OUT/steps.log"
  python3 - "$OUT/status-fail.json" "$after" "$fcount" <<'PY' | tee -a "$results"
import json, sys
status, after, count = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
d0, d1 = status["devices"][:2]
ok = (d1["health"] == "unhealthy" and d1["partitions_proven"] == after
      and d0["partitions_proven"] + d1["partitions_proven"] == 10 * count
      and status["totals"]["completed"] == count and status["totals"]["failed"] == 0)
print(f"fail: GPU 1 {d1['health']} after {d1['partitions_proven']} partitions "
      f"({d1['partitions_failed_over']} failed over), GPU 0 {d0['partitions_proven']}; "
      f"{status['totals']['completed']} of {count} proofs completed: "
      + ("MET (nothing lost, nothing proven twice)" if ok else "NOT MET"))
PY
  grep -E "failed|probe|goes to another" "$OUT/daemon-fail.log" | tail -8
  stop_daemon
  return "$rc"
}

status=0
case "$phase" in
  prep) prep || status=1 ;;
  two) batch_run two "[0, 1]" || status=1 ;;
  one) batch_run one "[0]" || status=1; ratio ;;
  fail) fail_run || status=1 ;;
  headline) gen_c1; [ "${CUZK_KEY_FILE:-1}" = 1 ] && gen_key; batch_run one "[0]" || status=1 ;;
  all) prep && batch_run two "[0, 1]" && batch_run one "[0]"; status=$?; ratio; fail_run || status=1 ;;
  *) echo "usage: $0 prep|two|one|fail|all|headline"; exit 2 ;;
esac
[ -f "$results" ] && [ "$phase" != headline ] && cp "$results" "$OUT/multigpu.txt"
step "done ($phase, exit $status)"
exit "$status"
