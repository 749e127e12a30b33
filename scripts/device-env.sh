# Sourced by the scripts/device-*.sh calls on the GPU machine: $OUT for logs (a
# call brings back at most 8 files: the set-up's own logs stay in $AUX), a
# step() logger, the carried wheels installed into /tmp/site (--upgrade: a warm
# machine keeps them), the source tree and kernel caches on the paths, the CPU
# backend's C kernels built for that machine's Python.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/cuzk-out}
AUX=${AUX:-/tmp/cuzk-aux}
mkdir -p "$OUT" "$AUX"
SECONDS=0
step() { echo "[t=${SECONDS}s] $*" | tee -a "$OUT/steps.log"; }
# shellcheck source=scripts/device-config.sh
source scripts/device-config.sh
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir \
    --target /tmp/site .whl/*.whl 2>"$AUX/pip.log" || tail -5 "$AUX/pip.log"
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export CUZK_KERNEL_CACHE=${CUZK_KERNEL_CACHE:-/tmp/cuzk-kernels}
[ -d .prebuilt ] && export CUZK_KERNEL_PREBUILT=${CUZK_KERNEL_PREBUILT:-$PWD/.prebuilt}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$AUX/gpu.txt"
step "build native CPU kernels"
python3 setup.py -q build_ext --inplace -j "$(nproc)" >"$AUX/build.log" 2>&1 ||
  { echo "native build failed: CPU reference falls back to Python ints:"; tail -20 "$AUX/build.log"; }
