#!/usr/bin/env bash
# Instructions per `dunning_debtors_create` of a kobana-dunning binary, counted by
# callgrind over the whole server process (`benches/README.md`, run D):
#
#   benches/callgrind/create.sh BIN PRELOAD N
#
# starts `BIN serve` (blocking transport, rate limits off, the demo data) under
# valgrind's callgrind, sends PRELOAD creates (new debtors: the table grows), zeroes the
# counters, sends N creates one after another on one keep-alive connection, dumps, and
# prints the instructions per create. Instruction counts do not move with machine load.
# Needs valgrind and python3; about a minute per 1,000 creates.
set -euo pipefail
BIN=$(realpath "$1"); PRE=${2:-0}; N=${3:-100}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d); trap 'kill "$VP" 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export D="$WORK/data"; mkdir -p "$D"; printf '[rate_limit]\nenabled = false\n' > "$D/off.toml"
valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "$BIN" serve --transport blocking \
  --listen "127.0.0.1:$PORT" --data-dir "$D" --config "$D/off.toml" > "$D/out" 2> "$D/err" &
VP=$!
for _ in $(seq 1 600); do grep -q 'Ready:\|"ready"' "$D/err" 2>/dev/null && break; sleep 0.5; done
[ "$PRE" -gt 0 ] && python3 "$HERE/drive.py" "$BIN" "$PORT" "$PRE" 0
callgrind_control -z "$VP" >/dev/null
python3 "$HERE/drive.py" "$BIN" "$PORT" "$N" 500000
callgrind_control -d "$VP" >/dev/null
sleep 1
IR=$(grep -h -m1 '^summary:\|^totals:' "$(ls -t "$WORK"/cg.out.* | head -n 1)" | awk '{print $2}')
echo "preload=$PRE creates=$N instructions=$IR per_create=$((IR / N))"
