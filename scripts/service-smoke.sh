#!/usr/bin/env bash
# The service as an operator runs it: islandserver, islandwatch with the
# printed fingerprint for a few seconds (its JSON summary: islands seen,
# frames committed, no half-frame), a wrong pin refused, a restart that
# keeps the fingerprint (the identity lives in the state directory), and
# connect tokens: refused without one, served with one islandtoken mints.
# SIGINT must stop the server cleanly every time.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
srv=
trap 'kill $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
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

start
"$tmp/islandwatch" -addr "$addr" -pin "$pin" -duration 3s -json >"$tmp/summary.json"
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
"$tmp/islandwatch" -addr "$addr" -pin "$old" -duration 2s -json >"$tmp/summary.json"
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
"$tmp/islandwatch" -addr "$addr" -pin "$pin" -token "$tok" -duration 2s -json >"$tmp/summary.json"
check
stop
echo "service smoke: ok"
