#!/usr/bin/env bash
# The service as an operator runs it: islandserver, islandwatch with the
# printed fingerprint until it has committed 50 frames (its JSON summary: islands seen,
# frames committed, no half-frame), a wrong pin refused, a restart that
# keeps the fingerprint (the identity lives in the state directory), and
# connect tokens: refused without one, served with one islandtoken mints.
# SIGINT must stop the server cleanly every time.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/scrape.sh
tmp=$(mktemp -d)
srv=
watcher=
pids=()
trap 'kill $srv $watcher "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/islandserver" ./cmd/islandserver
go build -o "$tmp/islandwatch" ./cmd/islandwatch
go build -o "$tmp/islandtoken" ./cmd/islandtoken

# start ARGS…: runs the server, sets addr and pin from what it prints.
start() {
  : >"$tmp/out"
  "$tmp/islandserver" -listen 127.0.0.1:0 -state "$tmp/state" "$@" >"$tmp/out" 2>"$tmp/log" &
  srv=$!
  for _ in $(seq 100); do
    grep -q '^identity' "$tmp/out" 2>/dev/null && break
    sleep 0.1
  done
  addr=$(awk '/^islandserver listening on/{print $4}' "$tmp/out")
  pin=$(awk '/^certificate sha256/{print $3}' "$tmp/out")
  [ -n "$addr" ] && [ -n "$pin" ] || { echo "server did not start"; cat "$tmp/out" "$tmp/log"; exit 1; }
}
stop() { kill -INT "$srv"; wait "$srv"; srv=; }
check() {
  cat "$tmp/summary.json"
  grep -Eq '"islands": [1-9]' "$tmp/summary.json" || { echo "no island seen"; exit 1; }
  grep -Eq '"frames_committed": [1-9]' "$tmp/summary.json" || { echo "no frame committed"; exit 1; }
  grep -Eq '"half_frames_applied": 0,' "$tmp/summary.json" || { echo "half-frames shown"; exit 1; }
}

# watch OUT ARGS…: runs islandwatch ARGS… in the background with its
# metrics on (maddr: where), its -json summary going to OUT.
watch() {
  local out=$1; shift
  : >"$tmp/watch.err"
  "$tmp/islandwatch" "$@" -duration 5m -json -metrics 127.0.0.1:0 >"$out" 2>"$tmp/watch.err" &
  watcher=$!
  for _ in $(seq 200); do grep -q 'metrics on http://' "$tmp/watch.err" && break; sleep 0.1; done
  maddr=$(sed -n 's|^islandwatch: metrics on http://\([^/]*\)/metrics$|\1|p' "$tmp/watch.err")
  [ -n "$maddr" ] || { echo "islandwatch did not start"; cat "$tmp/watch.err"; exit 1; }
}
metric() { scrape "$maddr" "islandsync_watch_$1"; } # NAME: the watcher's islandsync_watch_NAME now
wait_metric() { # NAME MIN: until the metric reaches MIN (at most 60 s)
  for _ in $(seq 600); do
    awk -v v="$(metric "$1")" -v m="$2" 'BEGIN { exit !(v + 0 >= m + 0) }' && return 0
    sleep 0.1
  done
  echo "never: $1 >= $2"; cat "$tmp/watch.err" "$tmp/log"; exit 1
}
# served ARGS…: a watcher until it has committed 50 frames, then
# interrupted; its summary in summary.json.
served() {
  watch "$tmp/summary.json" "$@"
  wait_metric frames_committed_total 50
  kill -INT "$watcher"; wait "$watcher"; watcher=
}

start
served -addr "$addr" -pin "$pin"
check
# A wrong pin must fail with exit 1, at once.
if "$tmp/islandwatch" -addr "$addr" -pin "$(printf '0%.0s' $(seq 64))" -duration 2s 2>"$tmp/err"; then
  echo "a wrong pin connected"; exit 1
fi
grep -q 'does not match the pinned fingerprint' "$tmp/err" || { echo "wrong pin: $(cat "$tmp/err")"; exit 1; }
stop

# A restart keeps the identity: the old pin still connects.
old=$pin
start
[ "$pin" = "$old" ] || { echo "restart changed the fingerprint: $old → $pin"; exit 1; }
served -addr "$addr" -pin "$old"
check
stop

# Connect tokens.
"$tmp/islandtoken" keygen -dir "$tmp/keys" >/dev/null
start -token-key "$tmp/keys/token.pub"
if "$tmp/islandwatch" -addr "$addr" -pin "$pin" -duration 2s 2>"$tmp/err"; then
  echo "a watcher without a token was served"; exit 1
fi
grep -q 'refused this observer: token' "$tmp/err" || { echo "no token: $(cat "$tmp/err")"; exit 1; }
tok=$("$tmp/islandtoken" mint -key "$tmp/keys/token.key" -observer 1 -ttl 1m)
served -addr "$addr" -pin "$pin" -token "$tok"
check
stop

# A cluster as the README runs it: an authority with etcd embedded, a second
# authority that accepts no connections (-dial: it dials the fronts' uplink
# ports), two fronts, a watcher on both fronts; the second authority drains
# (SIGINT) and the first front stops, and the watcher goes on.
member() { # NAME LOG ARGS…: runs one member in the background
  local log=$2; shift 2
  "$tmp/islandserver" "$@" >"$log" 2>&1 &
  pids+=($!)
}
wait_for() { # FILE PATTERN
  for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "never: $2 in $1"; cat "$1"; exit 1
}
port=$(( 20000 + RANDOM % 20000 ))
etcd="http://127.0.0.1:$port"
member one "$tmp/one.log" -etcd-embed "$tmp/world" -etcd-listen "127.0.0.1:$port" -role authority -name one -listen 127.0.0.1:0 -state "$tmp/one"
wait_for "$tmp/one.log" '^authority one serving'
member two "$tmp/two.log" -etcd "$etcd" -role authority -name two -dial -state "$tmp/two"
two=$!
member f1 "$tmp/f1.log" -etcd "$etcd" -role front -name f1 -listen 127.0.0.1:0 -uplink-listen 127.0.0.1:0 -state "$tmp/fronts"
f1=$!
wait_for "$tmp/f1.log" '^watch with'
member f2 "$tmp/f2.log" -etcd "$etcd" -role front -name f2 -listen 127.0.0.1:0 -uplink-listen 127.0.0.1:0 -state "$tmp/fronts"
wait_for "$tmp/f2.log" '^watch with'
wait_for "$tmp/two.log" 'shard gained'
wait_for "$tmp/f1.log" "uplink accepted"   # two, which accepts no connections, dialled f1
a1=$(awk '/^front f1 serving on/{print $5}' "$tmp/f1.log")
a2=$(awk '/^front f2 serving on/{print $5}' "$tmp/f2.log")
cpin=$(awk '/^watch with/{print $NF}' "$tmp/f1.log")
# The watcher runs until interrupted; its metrics say when each step has
# shown (events, not wall-clock windows: a loaded machine only slows it).
watch "$tmp/summary.json" -addr "$a1,$a2" -pin "$cpin"
wait_metric frames_committed_total 100      # the watcher is being served by f1
kill -INT "$two"; wait "$two"               # a drain exits 0
grep -q 'shard lost' "$tmp/two.log" || { echo "two drained nothing"; cat "$tmp/two.log"; exit 1; }
wait_metric hand_offs_total 1               # the watcher saw two's islands change holder
kill -INT "$f1"; wait "$f1"
wait_metric reconnects_total 1              # it moved to f2 …
wait_metric frames_committed_total "$(awk -v v="$(metric frames_committed_total)" 'BEGIN { print v + 100 }')"  # … and is served there
kill -INT "$watcher"; wait "$watcher"; watcher=
check
grep -Eq '"hand_offs": [1-9]' "$tmp/summary.json" || { echo "no hand-off seen"; exit 1; }
grep -Eq '"reconnects": [1-9]' "$tmp/summary.json" || { echo "the watcher did not move to f2"; exit 1; }
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
wait
echo "service smoke: ok"
