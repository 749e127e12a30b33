#!/usr/bin/env bash
# One call on the GPU machine: the residency tiers' GPU tests (streamed
# matrices and bases, the lean H step, MSM passes over shared bases, lean
# proofs over streamed key parts, the engine at capped budgets), then their
# primitives timed beside the resident ones (python -m cuzk.bench.tiers).
# Carry [".whl", ".prebuilt"]; logs go to $OUT. CUZK_TEST_LIMIT (420 s),
# CUZK_BENCH_LIMIT (150 s); CUZK_TIERS_ARGS adds cuzk.bench.tiers arguments.
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
step "GPU tests of the tiers"
timeout "${CUZK_TEST_LIMIT:-420}" python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra" \
  tests/backends/cuda/test_spmv.py tests/backends/cuda/test_hpoly.py \
  tests/backends/cuda/test_msm.py tests/backends/cuda/test_load_bases.py \
  tests/backends/cuda/test_backend.py tests/groth16/test_prove_gpu.py \
  tests/groth16/test_prove_lean.py tests/engine/test_tiers_gpu.py \
  2>&1 | tee "$OUT/pytest-tiers.log" | tail -25
status=${PIPESTATUS[0]}
step "tier primitives beside the resident ones"
# shellcheck disable=SC2086
timeout "${CUZK_BENCH_LIMIT:-150}" python3 -m cuzk.bench.tiers --json "$OUT/tiers.json" \
  ${CUZK_TIERS_ARGS:-} 2>&1 | tee "$OUT/tiers.log" | tail -15
free -g | tee -a "$OUT/steps.log"
step "done (tests exit $status)"
exit "$status"
