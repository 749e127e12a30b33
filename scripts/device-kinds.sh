#!/usr/bin/env bash
# One call on the GPU machine: every 32GiB proof kind through one daemon, in
# turn (the GPU regression check before an issue that touched the GPU path is
# resolved). Each kind: its vanilla proofs or C1 made here, one request with
# `cuzk-bench single` (the daemon verifies every proof before it answers), then
# its key evicted and its matrix cache deleted, so the next kind has the disk
# (a 64 GiB disk holds one 32GiB circuit's matrices at a time).
# Carry [".whl", ".prebuilt"]; logs go to $OUT; kinds.txt is the summary table.
#   bash scripts/device-kinds.sh                       # winning snap wpost porep, default budget
#   CUZK_VRAM_BUDGET=16GiB bash scripts/device-kinds.sh   # a 16 GB card's tiers on the H200
#   CUZK_KINDS="wpost porep" bash scripts/device-kinds.sh
# Settings: CUZK_KINDS (the order), CUZK_KIND_LIMIT (seconds a kind's request
# may take, 300), CUZK_HOST_BUDGET ([memory] total_budget, 100GiB). Keys are
# development keys made straight into GPU memory (no key file: a streamed
# tier's pinned copy and a key file in /dev/shm do not fit 128 GiB together).
# Cold, the four kinds need about 12-14 minutes (the matrices of each are
# built once): more than one call's 10. A warm machine (its ~/.cache/cuzk
# and /tmp/cuzk-kinds kept) runs what is left; `CUZK_KINDS` splits them.
set -uo pipefail
# shellcheck source=scripts/device-env.sh
source "$(dirname "$0")/device-env.sh"
home=/tmp/cuzk-kinds
cache=${CUZK_CIRCUIT_CACHE:-$HOME/.cache/cuzk/circuits}
mkdir -p "$home/params"
addr="unix://$home/cuzk.sock"
http=127.0.0.1:9821
summary="$OUT/kinds.txt"
daemon_config "$home/cuzk.toml" "$addr" "$home/journal.sqlite" "$home/params" \
  "${CUZK_HOST_BUDGET:-100GiB}" 8
step "daemon start (vram_budget ${CUZK_VRAM_BUDGET:-default})"
python3 -m cuzk.cli.daemon --config "$home/cuzk.toml" >"$OUT/daemon.log" 2>&1 &
daemon=$!
python3 -m cuzk.bench.hostmem "$daemon" >"$AUX/hostmem.json" 2>/dev/null &
sampler=$!
trap 'kill "$daemon" 2>/dev/null' EXIT
for _ in $(seq 240); do [ -S "$home/cuzk.sock" ] && break; sleep 0.5; done
bench() { python3 -m cuzk.cli.bench -a "$addr" "$@"; }
printf "%-8s %-10s %8s  %s\n" kind result seconds detail | tee "$summary"

submit_of() {  # gen-vanilla's JSON line: its "submit" command, without "cuzk-bench single"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["submit"])' "$1" | cut -d' ' -f3-
}

for kind in ${CUZK_KINDS:-winning snap wpost porep}; do
  step "kind $kind"
  case $kind in
    winning)
      bench gen-vanilla winning-post --registered-proof 3 -o "$home/winning.json" >"$AUX/gen-$kind.json"
      read -r -a args <<<"$(submit_of "$AUX/gen-$kind.json")"; cid=winning-32g ;;
    snap)
      bench gen-vanilla snap-prove --registered-proof 3 -o "$home/snap.json" >"$AUX/gen-$kind.json"
      read -r -a args <<<"$(submit_of "$AUX/gen-$kind.json")"; cid=snap-32g ;;
    wpost)
      args=(-t wpost --vanilla tests/data/curio-windowpost-32g/post.vproof --registered-proof 8
            --sector-num 1 --miner-id 1000); cid=wpost-32g ;;
    porep)
      [ -s "$home/c1-32g.json" ] || bench gen-c1 --sector-size 32GiB --out "$home/c1-32g.json" >/dev/null
      args=(-t porep --c1 "$home/c1-32g.json"); cid=porep-32g ;;
    *) echo "unknown kind $kind"; continue ;;
  esac
  SECONDS_KIND=$SECONDS
  timeout "${CUZK_KIND_LIMIT:-300}" python3 -m cuzk.cli.bench -a "$addr" single "${args[@]}" \
    >"$OUT/single-$kind.log" 2>&1
  rc=$?
  took=$((SECONDS - SECONDS_KIND))
  verdict=$(grep -m1 -E "^(state|status|result)" "$OUT/single-$kind.log" | tr -s ' ' | cut -c1-40)
  ok=FAILED; grep -q "verified: *yes" "$OUT/single-$kind.log" && ok=verified
  [ "$rc" = 124 ] && ok=TIMEOUT
  part=$(grep -E "partition [0-9]+ proved on" "$OUT/daemon.log" | tail -1 | sed 's/.* in \([0-9.]*\) s.*/\1 s a partition (last)/')
  printf "%-8s %-10s %8s  %s %s\n" "$kind" "$ok" "$took" "${part:-}" "${verdict:-}" | tee -a "$summary"
  bench evict -c "$cid" >/dev/null 2>&1
  find "$cache" -maxdepth 1 -type f -size +100M -delete 2>/dev/null  # the next kind's matrices need the disk
done
bench status >"$OUT/status.log" 2>&1
kill "$daemon"; wait "$daemon" 2>/dev/null; wait "$sampler"
echo "daemon process tree, host peak: $(tail -1 "$AUX/hostmem.json")" | tee -a "$summary"
grep -E "ERROR|Traceback|overdr" "$OUT/daemon.log" | head -5
step "done"
