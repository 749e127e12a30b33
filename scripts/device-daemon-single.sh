#!/usr/bin/env bash
# One call on the GPU machine: the daemon on the CUDA backend proves one 32GiB
# request through `cuzk-bench single`, with development parameters (written as
# a .params file when the param cache has room, else made straight into GPU
# memory). Host memory of the daemon's process tree is sampled throughout.
# Carry [".whl", ".prebuilt"]; logs go to $OUT.
#   bash scripts/device-daemon-single.sh            # WindowPoSt: Curio's real vanilla proof
#                                                   # (tests/data/curio-windowpost-32g)
#   CUZK_KIND=snap bash scripts/device-daemon-single.sh   # SnapDeals: 16 partitions of a
#                                                   # synthetic sector (gen-vanilla snap-prove)
# CUZK_PARAM_CACHE (default /tmp/cuzk-home/params; /dev/shm/params holds a key
# file that the disk cannot hold beside the matrices), CUZK_LIMIT (480 s),
# CUZK_PROCESSES (8: [pipeline] synthesis_processes, the vanilla checks off the
# daemon's interpreter; 0 = in its threads, as on 2026-12-01's SnapDeals run).
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
# Room on the disk for this circuit's matrices: other circuits' cache entries
# (a 32 GB PoRep matrix cache may be left from an earlier call) go.
kind=${CUZK_KIND:-wpost}
find "${CUZK_CIRCUIT_CACHE:-$HOME/.cache/cuzk/circuits}" -maxdepth 1 -type f ! -name "$kind-*" \
  -delete 2>/dev/null
home=/tmp/cuzk-home
params=${CUZK_PARAM_CACHE:-$home/params}
http=127.0.0.1:9821
procs=${CUZK_PROCESSES:-8}
mkdir -p "$home" "$params"
daemon_config "$home/cuzk.toml" "unix://$home/cuzk.sock" "$home/journal.sqlite" "$params" \
  "${CUZK_HOST_BUDGET:-110GiB}" "$procs"
step "daemon start"
python3 -m cuzk.cli.daemon --config "$home/cuzk.toml" >"$OUT/daemon.log" 2>&1 &
daemon=$!
# the daemon's process tree: peak host memory at its end
python3 -m cuzk.bench.hostmem "$daemon" >"$OUT/hostmem.json" 2>/dev/null &
sampler=$!
addr="unix://$home/cuzk.sock"
for _ in $(seq 120); do [ -S "$home/cuzk.sock" ] && break; sleep 0.5; done
if [ "$kind" = snap ]; then
  step "gen-vanilla snap-prove 32GiB (a synthetic sector's 16 partition proofs)"
  python3 -m cuzk.cli.bench gen-vanilla snap-prove --registered-proof 3 -o "$home/snap-vanilla.json" \
    >"$OUT/gen-vanilla.json"
  # its "submit" line is the single command with the request's commitments
  read -r -a submit < <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["submit"])' \
    "$OUT/gen-vanilla.json")
  step "single snap 32GiB"
  timeout "${CUZK_LIMIT:-480}" python3 -m cuzk.cli.bench single -a "$addr" "${submit[@]:2}" 2>&1 |
    tee "$OUT/single.log" | tail -15
else
  vanilla=tests/data/curio-windowpost-32g/post.vproof
  step "single window-post 32GiB (Curio's vanilla proof)"
  timeout "${CUZK_LIMIT:-480}" python3 -m cuzk.cli.bench single -a "$addr" -t wpost --vanilla "$vanilla" \
    --registered-proof 8 --sector-num 1 --miner-id 1000 2>&1 | tee "$OUT/single.log" | tail -15
fi
python3 -m cuzk.cli.bench status -a "$addr" 2>&1 | tee "$OUT/status.log" | head -30
python3 - "$http" "$OUT" <<'PY'
import sys, urllib.request
http, out = sys.argv[1:]
for name in ("status", "metrics"):
    with open(f"{out}/{name}-http.txt", "wb") as f:
        f.write(urllib.request.urlopen(f"http://{http}/{name}").read())
PY
kill "$daemon"; wait "$daemon" 2>/dev/null; wait "$sampler"
echo "daemon process tree, host peak: $(tail -1 "$OUT/hostmem.json")"
grep -E "loading|development|matrices|INSECURE|ERROR|Traceback|beyond" "$OUT/daemon.log" | grep -v "%)" | tail -12
grep -E "proved on" "$OUT/daemon.log" | sed 's/.*partition/partition/' | tail -20
step "done"
