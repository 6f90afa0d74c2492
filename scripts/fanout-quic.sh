#!/usr/bin/env bash
# What each observer costs the authority over real QUIC on 127.0.0.1:
# islandserver serves the big world (10,100 bodies in 3,560 islands on a
# 2 km floor) at 20 Hz with a per-observer budget, first to no observer,
# then to each count given (default: 1 and 8), every islandwatch in its own
# process watching its own 80 × 30 m area spread along the floor. The
# watchers are stand-ins (islandwatch -confirm-only): each confirms every
# datagram without restoring it, which to the server is an observer that
# receives everything, at a fraction of a real one's CPU, so that 64 of
# them fit beside the server on a small machine; FULL=1 runs the whole
# receive path in each instead. For each count it reads the server's
# process_cpu_seconds_total and islandsync_steps_total over a window once
# every watcher has received datagrams, and prints the server's CPU per
# step, and what the observers added to it per observer per broadcast (a
# broadcast is every third step at 20 Hz), against the run with none. A
# measurement, not a test: the watchers share the server's cores, so
# compare the counts within one run.
#
#   scripts/fanout-quic.sh [COUNT…]     (env: WINDOW seconds, default 10;
#                                        BUDGET kbit/s, default 256;
#                                        FULL=1: real watchers)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/scrape.sh
counts=("${@:-1 8}")
# shellcheck disable=SC2206
counts=(${counts[*]})
window=${WINDOW:-10}
budget=${BUDGET:-256}
stand_in=-confirm-only
[ -n "${FULL:-}" ] && stand_in=
tmp=$(mktemp -d)
srv=
watchers=()
trap 'kill $srv "${watchers[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/islandserver" ./cmd/islandserver
go build -o "$tmp/islandwatch" ./cmd/islandwatch

at_least() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v + 0 >= m + 0) }'; }

# run N: serves N watchers; sets cpu_per_step (ms) and steps_per_s.
run() {
  local n=$1 i x
  "$tmp/islandserver" -listen 127.0.0.1:0 -state '' -scenario bigworld -budget "$budget" \
    -max-observers 1024 -metrics 127.0.0.1:0 -cycle 0 >"$tmp/out" 2>"$tmp/log" &
  srv=$!
  for _ in $(seq 300); do grep -q '^metrics on' "$tmp/out" 2>/dev/null && break; sleep 0.1; done
  addr=$(awk '/^islandserver listening on/{print $4}' "$tmp/out")
  pin=$(awk '/^certificate sha256/{print $3}' "$tmp/out")
  smetrics=$(sed -n 's|^metrics on http://\([^/]*\)/metrics$|\1|p' "$tmp/out")
  [ -n "$addr" ] && [ -n "$pin" ] && [ -n "$smetrics" ] || { echo "server did not start"; cat "$tmp/out" "$tmp/log"; exit 1; }
  watchers=()
  for ((i = 0; i < n; i++)); do
    x=$(awk -v i="$i" -v n="$n" 'BEGIN { printf "%.0f", (i + 0.5) * 1900 / n }')
    "$tmp/islandwatch" -addr "$addr" -pin "$pin" -aoi "$x,-5,$((x + 80)),25" -json $stand_in \
      -metrics 127.0.0.1:0 >/dev/null 2>"$tmp/w$i.err" &
    watchers+=($!)
  done
  # Every watcher has received datagrams, and the world has settled (its
  # first seconds step slowly): 300 steps at least.
  for ((i = 0; i < n; i++)); do
    local maddr=
    for _ in $(seq 600); do
      maddr=$(sed -n 's|^islandwatch: metrics on http://\([^/]*\)/metrics$|\1|p' "$tmp/w$i.err")
      [ -n "$maddr" ] && break
      sleep 0.1
    done
    for _ in $(seq 1200); do
      at_least "$(scrape "$maddr" islandsync_watch_datagrams_received_total)" 1 && break
      sleep 0.1
    done
    at_least "$(scrape "$maddr" islandsync_watch_datagrams_received_total)" 1 || { echo "watcher $i received nothing"; cat "$tmp/w$i.err"; exit 1; }
  done
  for _ in $(seq 1200); do at_least "$(scrape "$smetrics" islandsync_steps_total)" 300 && break; sleep 0.1; done
  local c0 s0 c1 s1
  c0=$(scrape "$smetrics" process_cpu_seconds_total); s0=$(scrape "$smetrics" islandsync_steps_total)
  sleep "$window"
  c1=$(scrape "$smetrics" process_cpu_seconds_total); s1=$(scrape "$smetrics" islandsync_steps_total)
  cpu_per_step=$(awk -v a="$c0" -v b="$c1" -v s="$s0" -v t="$s1" 'BEGIN { printf "%.3f", 1000 * (b - a) / (t - s) }')
  steps_per_s=$(awk -v s="$s0" -v t="$s1" -v w="$window" 'BEGIN { printf "%.1f", (t - s) / w }')
  if ((n > 0)); then
    kill "${watchers[@]}" 2>/dev/null || true
    wait "${watchers[@]}" 2>/dev/null || true
  fi
  watchers=()
  kill -INT "$srv"; wait "$srv" || true; srv=
}

run 0
base=$cpu_per_step
printf '%-10s %14s %10s %28s\n' observers "cpu ms/step" steps/s "added ms/observer/broadcast"
printf '%-10s %14s %10s %28s\n' 0 "$base" "$steps_per_s" -
for n in "${counts[@]}"; do
  run "$n"
  added=$(awk -v c="$cpu_per_step" -v b="$base" -v n="$n" 'BEGIN { printf "%.3f", 3 * (c - b) / n }')
  printf '%-10s %14s %10s %28s\n' "$n" "$cpu_per_step" "$steps_per_s" "$added"
done
