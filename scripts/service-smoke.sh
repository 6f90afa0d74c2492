#!/usr/bin/env bash
# Runs islandserver, connects islandwatch with the printed fingerprint for a
# few seconds, and checks the watcher's JSON summary: islands seen, frames
# committed, no half-frame. Then SIGINT must stop the server cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/islandserver" ./cmd/islandserver
go build -o "$tmp/islandwatch" ./cmd/islandwatch
"$tmp/islandserver" -listen 127.0.0.1:0 >"$tmp/out" 2>"$tmp/log" &
srv=$!
for _ in $(seq 100); do
  grep -q '^certificate sha256' "$tmp/out" 2>/dev/null && break
  sleep 0.1
done
addr=$(awk '/^islandserver listening on/{print $4}' "$tmp/out")
pin=$(awk '/^certificate sha256/{print $3}' "$tmp/out")
[ -n "$addr" ] && [ -n "$pin" ] || { echo "server did not start"; cat "$tmp/out" "$tmp/log"; exit 1; }
"$tmp/islandwatch" -addr "$addr" -pin "$pin" -duration 3s -json >"$tmp/summary.json"
cat "$tmp/summary.json"
grep -Eq '"islands": [1-9]' "$tmp/summary.json" || { echo "no island seen"; exit 1; }
grep -Eq '"frames_committed": [1-9]' "$tmp/summary.json" || { echo "no frame committed"; exit 1; }
grep -Eq '"half_frames_applied": 0,' "$tmp/summary.json" || { echo "half-frames shown"; exit 1; }
# A wrong pin must fail with exit 1.
if "$tmp/islandwatch" -addr "$addr" -pin "$(printf '0%.0s' $(seq 64))" -duration 2s 2>/dev/null; then
  echo "a wrong pin connected"; exit 1
fi
kill -INT $srv
wait $srv
echo "service smoke: ok"
