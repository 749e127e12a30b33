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
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
lg=${CUZK_PROFILE_LOG:-26}
step "the MSM of 2^$lg once, phases without the profiler"
python3 -m cuzk.bench.msm --profile "$lg" | tee "$OUT/msm-profile.json"
step "ncu: affine rounds, scatter, XYZZ tail, bucket reduction at 2^$lg"
timeout "${CUZK_NCU_LIMIT:-420}" ncu --profile-from-start off --launch-count "${CUZK_NCU_COUNT:-12}" \
  -k 'regex:affine_first|affine_round|digits_scatter|accumulate_strided|bucket_reduce' \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  python3 -m cuzk.bench.msm --profile "$lg" >"$OUT/ncu-msm.txt" 2>"$OUT/ncu-msm.err"
echo "ncu exit $?"
grep -E "^  [a-z_]+ \(|Duration|Compute \(SM\) Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Stall" \
  "$OUT/ncu-msm.txt" | head -120
step "done"
