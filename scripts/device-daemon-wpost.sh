#!/usr/bin/env bash
# One call on the GPU machine: the daemon on the CUDA backend proves the 32GiB
# WindowPoSt partition of Curio's real vanilla proof (tests/data/curio-windowpost-32g)
# through `cuzk-bench single`, with development parameters (the .params file of
# this circuit does not fit the machine's disk beside its matrices, so the key is
# made straight into GPU memory). Host memory of the daemon's process tree is
# sampled throughout. Carry [".whl", ".prebuilt"]; logs go to $OUT.
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
# Room on the disk for this circuit's matrices (a PoRep cache may be left from an earlier call).
rm -f "${CUZK_CIRCUIT_CACHE:-$HOME/.cache/cuzk/circuits}"/porep_* 2>/dev/null
home=/tmp/cuzk-home
mkdir -p "$home/params"
cat >"$home/cuzk.toml" <<EOF
[daemon]
listen = "unix://$home/cuzk.sock"
journal = "$home/journal.sqlite"
[gpus]
backend = "cuda"
[memory]
total_budget = "110GiB"
[srs]
param_cache = "$home/params"
generate_dev_keys = true
EOF
step "daemon start"
python3 -m cuzk.cli.daemon --config "$home/cuzk.toml" >"$OUT/daemon.log" 2>&1 &
daemon=$!
peak=0
( while kill -0 "$daemon" 2>/dev/null; do
    t=0; a=0
    for p in $daemon $(pgrep -P "$daemon"); do
      r=$(awk '/^VmRSS/{print $2}' /proc/$p/status 2>/dev/null); t=$((t + ${r:-0}))
      r=$(awk '/^RssAnon/{print $2}' /proc/$p/status 2>/dev/null); a=$((a + ${r:-0}))
    done
    echo "$t $a" >>"$OUT/daemon-mem.txt"
    sleep 1
  done ) &
sampler=$!
addr="unix://$home/cuzk.sock"
for _ in $(seq 120); do [ -S "$home/cuzk.sock" ] && break; sleep 0.5; done
vanilla=tests/data/curio-windowpost-32g/post.vproof
step "single window-post 32GiB (Curio's vanilla proof)"
timeout "${CUZK_LIMIT:-480}" python3 -m cuzk.cli.bench single -a "$addr" -t wpost --vanilla "$vanilla" \
  --registered-proof 8 --sector-num 1 --miner-id 1000 2>&1 | tee "$OUT/single.log" | tail -15
python3 -m cuzk.cli.bench status -a "$addr" 2>&1 | tee "$OUT/status.log" | head -30
kill "$daemon"; wait "$daemon" 2>/dev/null; kill "$sampler" 2>/dev/null
sort -n "$OUT/daemon-mem.txt" | tail -1 | awk '{printf "daemon peak VmRSS %.1f GiB\n", $1/1048576}'
sort -n -k2 "$OUT/daemon-mem.txt" | tail -1 | awk '{printf "daemon peak RssAnon %.1f GiB\n", $2/1048576}'
grep -E "loading|development|matrices|INSECURE|ERROR|Traceback" "$OUT/daemon.log" | tail -15
step "done"
