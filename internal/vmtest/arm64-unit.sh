#!/usr/bin/env bash
# Runs the unit tests of xnic's driver-side packages as linux/arm64 binaries
# under qemu-user (Debian's qemu-user-static), so that the arm64 code paths
# (physmem's DC CVAC / DC CIVAC cache maintenance, CTR_EL0, the DMB/DSB
# barriers, every GOARCH=arm64 file) are executed, not only compiled: a wrong
# instruction encoding is a SIGILL and the package fails.
#
# binfmt_misc need not be registered: go test -exec starts each test binary
# through the emulator. Tests run with -short (the same tests, smaller soak
# sizes); as root, physmem's TestRealHugePage reserves and maps real huge
# pages through the emulator.
#
# Usage: internal/vmtest/arm64-unit.sh [go test flags...]
# Environment:
#   XNIC_ARM64_PKGS   packages to run (default below)
#   XNIC_QEMU_AARCH64 the emulator (default: qemu-aarch64-static, else
#                     qemu-aarch64, on PATH)
set -euo pipefail

log() { echo "arm64-unit: $*" >&2; }

cd "$(dirname "$0")/../.."
PKGS=${XNIC_ARM64_PKGS:-"./dma/... ./physmem/... ./sim/... ./nic/... ./igb/... ./dwmac/... ./fec/... ./dataplane ./dataplane/bpf"}

QEMU=${XNIC_QEMU_AARCH64:-}
if [ -z "$QEMU" ]; then
	QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
fi
if [ -z "$QEMU" ] || [ ! -x "$QEMU" ]; then
	log "error: no qemu-aarch64-static on PATH: apt-get install qemu-user-static (bookworm or newer)"
	exit 1
fi
version=$("$QEMU" --version | head -n1)
log "$version"
# QEMU 7.2 (Debian bookworm's qemu-user-static) fails physmem's
# TestRealHugePage: its linux-user mmap returns EINVAL for MAP_HUGETLB, so no
# huge page can be mapped. 10.0 (bookworm-backports) maps them (and, with
# guest addresses equal to host ones, /proc/self/pagemap gives their real
# frames). Versions in between were not tried.
major=$(echo "$version" | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
if [ -z "$major" ] || [ "$major" -lt 10 ]; then
	log "error: $QEMU is older than QEMU 10 (tested: 7.2 cannot map huge pages for the emulated program); install qemu-user-static from bookworm-backports (internal/vmtest/setup-arm64.sh does)"
	exit 1
fi

start=$(date +%s)
# shellcheck disable=SC2086 # PKGS is a list of patterns
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -count=1 -short -timeout 20m \
	-exec "$QEMU" "$@" $PKGS
log "passed in $(($(date +%s) - start)) s"
