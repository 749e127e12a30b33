#!/usr/bin/env bash
# One call on the GPU machine: install the carried wheels, run the GPU tests,
# then the kernel benchmark. Run through the device tool with carry [".whl"]:
#   bash scripts/device-check.sh [pytest args...]
# Outputs (logs, JSON) go to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/cuzk-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export CUZK_KERNEL_CACHE=${CUZK_KERNEL_CACHE:-/tmp/cuzk-kernels}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pytest -m gpu -q -p no:cacheprovider "$@" 2>&1 | tee "$OUT/pytest-gpu.log" | tail -40
status=${PIPESTATUS[0]}
python3 -m cuzk.cli.bench kernels --json "$OUT/kernels.json" 2>&1 | tee "$OUT/bench.log" | tail -40
exit "$status"
