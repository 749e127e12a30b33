#!/usr/bin/env bash
# One call on the GPU machine: where the G1 MSM's time goes (issue 12). Runs
# `python -m cuzk.bench.msm --profile LOG` (a warm-up MSM of 2^LOG random
# scalars, then the same MSM between the CUDA profiler's start and stop) under
# Nsight Compute, on the kernels that take its time (the affine rounds, the
# counting sort's scatter, the XYZZ tail and the bucket reduction). Carry
# [".whl", ".prebuilt"]; the report goes to $OUT/ncu-msm.txt, the phases of the
# profiled MSM to $OUT/msm-profile.json.
#   bash scripts/device-ncu-msm.sh                    # 2^26, the first 12 such kernels
#   CUZK_PROFILE_LOG=27 CUZK_NCU_COUNT=20 bash scripts/device-ncu-msm.sh
#   CUZK_NCU_FULL=1 CUZK_NCU_KERNELS='affine_first|affine_round' CUZK_NCU_COUNT=2 \
#     CUZK_PROFILE_LOG=24 bash scripts/device-ncu-msm.sh   # every section of two launches
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
lg=${CUZK_PROFILE_LOG:-26}
step "the MSM of 2^$lg once, phases without the profiler"
python3 -m cuzk.bench.msm --profile "$lg" | tee "$OUT/msm-profile.json"
kernels=${CUZK_NCU_KERNELS:-affine_first|affine_round|digits_scatter|accumulate_strided|bucket_reduce}
if [ -n "${CUZK_NCU_FULL:-}" ]; then
  # Every section, with its tables (stall reasons, pipe use, L1/L2 traffic).
  sections=(--set full --print-details all)
else
  sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats
    --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis)
fi
step "ncu: $kernels at 2^$lg ${CUZK_NCU_FULL:+(full set)}"
timeout "${CUZK_NCU_LIMIT:-420}" ncu --profile-from-start off --launch-count "${CUZK_NCU_COUNT:-12}" \
  -k "regex:$kernels" "${sections[@]}" \
  python3 -m cuzk.bench.msm --profile "$lg" >"$OUT/ncu-msm.txt" 2>"$OUT/ncu-msm.err"
echo "ncu exit $?"
grep -E "^  [a-z_]+ \(|Duration|Compute \(SM\) Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Stall" \
  "$OUT/ncu-msm.txt" | head -120
step "done"
