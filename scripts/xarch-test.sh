#!/usr/bin/env bash
# Runs the island and codec tests (golden bytes included) on foreign
# architectures under qemu user-mode emulation:
#   s390x       64-bit big-endian
#   mips        32-bit big-endian
#   arm GOARM=7 32-bit little-endian
#   arm64       64-bit little-endian
#   ppc64       64-bit big-endian (a second one)
#   riscv64     64-bit little-endian
# GOARCH=386 is not listed: these machines cannot run it.
# Installs qemu-user-static when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v qemu-s390x-static >/dev/null 2>&1; then
  echo "xarch: installing qemu-user-static"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
fi

pkgs=(./island ./codec ./quant ./baseline ./token)  # codec holds the frame and the control records, token the connect token
run() {
  local qemu=$1; shift
  echo "xarch: $* go test ${pkgs[*]} (exec $qemu)"
  env CGO_ENABLED=0 "$@" go test -count=1 -exec "$qemu" "${pkgs[@]}"
}

run qemu-s390x-static   GOARCH=s390x
run qemu-mips-static    GOARCH=mips
run qemu-arm-static     GOARCH=arm GOARM=7
run qemu-aarch64-static GOARCH=arm64
run qemu-ppc64-static   GOARCH=ppc64
run qemu-riscv64-static GOARCH=riscv64
echo "xarch: all architectures passed"
