#!/usr/bin/env bash
# One call on the GPU machine: install the carried wheels, build the CPU
# backend's C kernels for that machine's Python, run every GPU test, then the
# kernel benchmark. Run through the device tool with carry [".whl", ".prebuilt"]
# (".prebuilt": cubins from `cuzk kernels --nvcc .prebuilt`,
# which skip NVRTC's long compiles; optional) and, optionally, ".devpayload"
# holding a c1.json to prove on the GPU:
#   bash scripts/device-check.sh                      # GPU tests + full kernel benchmark
#   CUZK_BENCH_ARGS=--quick CUZK_C1=.devpayload/c1-2k.json bash scripts/device-check.sh
# A PoRep C2 of a size made there (a synthetic C1; its memory plan printed
# first), witnesses in CUZK_PROCESSES worker processes (default: nproc / 2):
#   CUZK_SKIP_TESTS=1 CUZK_SKIP_BENCH=1 CUZK_GEN_C1=32GiB CUZK_C1_LIMIT=540 bash scripts/device-check.sh
# CUZK_PROVE_ARGS adds prove-c1 arguments (e.g. "--key memory --partitions 0,1");
# CUZK_GPU_PROOF_LOG=24 times a 2^24-constraint demo proof step by step
# (cuzk-bench gpu-proof; its witness and key take minutes before the proofs).
# CUZK_LOAD_LOG=27 streams a generated 2^27-point key file into the GPU
# (cuzk-bench load-params: GB/s cold and warm, host peak) before the benchmark.
# Logs and JSON go to $OUT. Each step has its own time limit (seconds):
# CUZK_TEST_LIMIT (default 300), CUZK_C1_LIMIT (200), CUZK_BENCH_LIMIT (240).
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
status=0
if [ -z "${CUZK_SKIP_TESTS:-}" ]; then
  step "GPU tests"
  timeout "${CUZK_TEST_LIMIT:-300}" python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra" "$@" \
    2>&1 | tee "$OUT/pytest-gpu.log" | tail -30
  status=${PIPESTATUS[0]}
fi
if [ -n "${CUZK_GEN_C1:-}" ]; then
  step "memory plan and a synthetic $CUZK_GEN_C1 C1"
  python3 -m cuzk.cli.main memory-plan porep --sector-size "$CUZK_GEN_C1" | tee "$OUT/memory-plan.txt"
  CUZK_C1=/tmp/c1-$CUZK_GEN_C1.json
  python3 -m cuzk.cli.bench gen-c1 --sector-size "$CUZK_GEN_C1" --out "$CUZK_C1" 2>&1 | tail -3
fi
if [ -n "${CUZK_C1:-}" ]; then
  procs=${CUZK_PROCESSES:-$(( $(nproc) / 2 ))}
  step "prove-c1 on the GPU: $CUZK_C1 (witnesses in $procs processes)"
  # shellcheck disable=SC2086
  timeout "${CUZK_C1_LIMIT:-200}" python3 -m cuzk.cli.bench --log-level INFO prove-c1 --c1 "$CUZK_C1" \
    --backend cuda --processes "$procs" --json ${CUZK_PROVE_ARGS:-} 2>&1 | tee "$OUT/prove-c1.log" | tail -30
  free -g | tee -a "$OUT/steps.log"; dmesg 2>/dev/null | grep -i "out of memory" | tail -3
fi
if [ -n "${CUZK_LOAD_LOG:-}" ]; then
  step "load-params 2^$CUZK_LOAD_LOG"
  timeout "${CUZK_LOAD_LIMIT:-240}" python3 -m cuzk.cli.bench --log-level INFO load-params \
    --log "$CUZK_LOAD_LOG" --backend cuda --dir /tmp 2>&1 | tee "$OUT/load-params.log" | tail -20
fi
if [ -n "${CUZK_GPU_PROOF_LOG:-}" ]; then
  step "gpu-proof 2^$CUZK_GPU_PROOF_LOG (demo circuit: witness and key made first, then timed proofs)"
  timeout "${CUZK_GPU_PROOF_LIMIT:-400}" python3 -m cuzk.cli.bench --log-level INFO gpu-proof \
    --log-constraints "$CUZK_GPU_PROOF_LOG" --json "$OUT/gpu-proof.json" 2>&1 | tail -5
fi
if [ -z "${CUZK_SKIP_BENCH:-}" ]; then
  step "kernel benchmark ${CUZK_BENCH_ARGS:-}"
  # shellcheck disable=SC2086
  timeout "${CUZK_BENCH_LIMIT:-240}" python3 -m cuzk.cli.bench kernels ${CUZK_BENCH_ARGS:-} --json "$OUT/kernels.json" \
    2>"$OUT/bench.err" | tee "$OUT/bench.log"
  tail -3 "$OUT/bench.err"
fi
step "done (tests exit $status)"
exit "$status"
