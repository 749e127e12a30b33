#!/usr/bin/env bash
# One device call for the Fr / NTT / H / sparse family: install the carried
# wheels, check that NVRTC compiles the small modules, run the GPU tests of
# this family, then `cuzk-bench kernels`. Prebuilt cubins (.prebuilt/, from
# `cuzk kernels --nvcc .prebuilt`) skip the long NTT compile.
# Logs and JSON go to $OUT.   Usage: bash tests/backends/cuda/device_run.sh [bench args]
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/cuzk-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export CUZK_KERNEL_CACHE=${CUZK_KERNEL_CACHE:-/tmp/cuzk-kernels}
export CUZK_KERNEL_PREBUILT=${CUZK_KERNEL_PREBUILT:-$PWD/.prebuilt}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
SECONDS=0
CUZK_KERNEL_PREBUILT= python3 - <<'PY' 2>&1 | tee "$OUT/nvrtc.log"
import time, cupy
from cuzk.backends.cuda.kernels import backend_modules
from cuzk.backends.cuda.loader import load_module
defines = dict(backend_modules())  # the flags the backend loads each file with
for name, fn in (("fr_ops.cu", "fr_add_kernel"), ("spmv.cu", "spmv_warp_kernel"), ("hpoly.cu", "hpoly_final_kernel")):
    t = time.time()
    load_module(name, defines[name]).get_function(fn)  # compiles now
    print(f"nvrtc {name}: {time.time() - t:.1f} s, cupy {cupy.__version__}")
PY
echo "[t=${SECONDS}s] tests" | tee -a "$OUT/steps.log"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/cuda tests/bench 2>&1 | tee "$OUT/pytest.log" | tail -25
status=${PIPESTATUS[0]}
echo "[t=${SECONDS}s] bench" | tee -a "$OUT/steps.log"
python3 -m cuzk.bench.kernels --json "$OUT/kernels.json" "$@" 2>"$OUT/bench.err" | tee "$OUT/bench.log"
bstatus=${PIPESTATUS[0]}
tail -5 "$OUT/bench.err"
echo "[t=${SECONDS}s] done: tests $status, bench $bstatus" | tee -a "$OUT/steps.log"
exit $(( status | bstatus ))
