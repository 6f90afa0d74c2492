# shellcheck shell=bash
# scrape ADDR NAME: prints the value of the unlabelled Prometheus metric
# NAME served at http://ADDR/metrics (0 when absent), with bash's /dev/tcp,
# so the scripts that source this need no curl.
scrape() {
  local v
  exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
  v=$(awk -v n="$2" '$1 == n { print $2 }' <&3)
  exec 3<&-
  echo "${v:-0}"
}
