#!/usr/bin/env bash
# One call on the GPU machine for the GPU witness (issue 13): the witness
# kernels' GPU tests (bit-exact against the CPU twins: SHA-256, Poseidon,
# random programs, PoRep / SnapDeals / PoSt partitions up to 8MiB), then
# scripts/gpu_witness.py on the cases given (default: the 32GiB PoRep
# partition, checked against its CPU witness and timed). Run through the
# device tool from a clean checkout with carry [".whl"] (the wheels of
# docs/device-notes/next-runs.md):
#   bash scripts/device-witness.sh
#   CUZK_WITNESS_CASES="porep:32GiB snap:32GiB" CUZK_WITNESS_ARGS="--no-check --repeat 5" \
#     CUZK_SKIP_TESTS=1 bash scripts/device-witness.sh
# Logs and JSON lines go to $OUT. Time limits (seconds): CUZK_TEST_LIMIT
# (default 300), CUZK_WITNESS_LIMIT (400).
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
status=0
if [ -z "${CUZK_SKIP_TESTS:-}" ]; then
  step "witness GPU tests"
  timeout "${CUZK_TEST_LIMIT:-300}" python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra" \
    tests/backends/cuda/test_witness.py 2>&1 | tee "$OUT/pytest-witness.log" | tail -15
  status=${PIPESTATUS[0]}
fi
step "gpu_witness.py ${CUZK_WITNESS_CASES:-porep:32GiB}"
# shellcheck disable=SC2086
timeout "${CUZK_WITNESS_LIMIT:-400}" python3 scripts/gpu_witness.py ${CUZK_WITNESS_ARGS:-} \
  ${CUZK_WITNESS_CASES:-porep:32GiB} 2>"$OUT/gpu-witness.err" | tee "$OUT/gpu-witness.jsonl"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tail -5 "$OUT/gpu-witness.err"
free -g | tee -a "$OUT/steps.log"
step "done (exit $status)"
exit "$status"
