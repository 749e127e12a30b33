#!/usr/bin/env bash
# One call on the GPU machine: the MSM's GPU tests, then the explore rows of
# `python -m cuzk.bench.msm` (and its Fq product rows; build variants at G1 2^24 /
# 2^26 / 2^27 and G2 2^24, with phases and bit-exact checks against the CPU
# first) and, when .sppark/libsppark_msm.so is carried, sppark's MSM on the
# same bases and scalars (cuzk.bench.sppark; the library is built outside the
# repository and never committed). Carry [".whl", ".prebuilt", ".sppark"].
#   bash scripts/device-msm.sh
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
step "MSM GPU tests"
timeout "${CUZK_TEST_LIMIT:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra" \
  tests/backends/cuda/test_msm.py tests/backends/cuda/test_msm_arith.py 2>&1 |
  tee "$OUT/pytest-msm.log" | tail -6
sp=()
[ -f .sppark/libsppark_msm.so ] && sp=(--sppark .sppark/libsppark_msm.so)
step "explore rows ${sp[*]}"
timeout "${CUZK_BENCH_LIMIT:-360}" python3 -m cuzk.bench.msm --check --explore --parts fq "${sp[@]}" \
  --json "$OUT/msm-explore.json" 2>"$AUX/msm.err" | tee "$OUT/msm-explore.txt" | tail -40
echo "bench exit ${PIPESTATUS[0]}"
grep -E "Error|Traceback|sppark" "$AUX/msm.err" | head -20
cp "$AUX/msm.err" "$OUT/msm-explore.err"
free -g | head -2
step "done"
