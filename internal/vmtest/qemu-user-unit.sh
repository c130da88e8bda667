#!/usr/bin/env bash
# Runs the unit tests of xnic's driver-side packages as Linux binaries of
# another architecture under qemu-user (Debian's qemu-user-static), so the
# code of that architecture is executed, not only compiled:
#
#   arm64  physmem's DC CVAC / DC CIVAC cache maintenance, CTR_EL0, the
#          DMB/DSB barriers, every GOARCH=arm64 file and the arm64 JIT: a wrong
#          instruction encoding is a SIGILL and the package fails;
#   arm    32-bit ARMv7 (GOARM=7: the i.MX6, i.MX7 and Vybrid cores): 32-bit
#          int and uintptr, 64-bit atomics on a 32-bit CPU, the interpreter
#          as the only BPF engine, physmem's refusal of cached DMA memory.
#
# binfmt_misc need not be registered: go test -exec starts each test binary
# through the emulator. Tests run with -short (the same tests, smaller soak
# sizes); as root, physmem's TestRealHugePage reserves and maps real huge
# pages through the emulator (arm64; on arm it asserts the refusal).
#
# Usage: internal/vmtest/qemu-user-unit.sh arm64|arm [go test flags...]
# Environment:
#   XNIC_USER_PKGS    packages to run (default below; XNIC_ARM64_PKGS is read
#                     too for arm64)
#   XNIC_QEMU_USER    the emulator (default: qemu-ARCH-static, else qemu-ARCH,
#                     on PATH; XNIC_QEMU_AARCH64 is read too for arm64)
set -euo pipefail

arch=${1:-}
case $arch in
arm64)
	qarch=aarch64
	goenv=(GOARCH=arm64)
	defpkgs="./dma/... ./physmem/... ./sim/... ./nic/... ./igb/... ./dwmac/... ./fec/... ./dataplane ./dataplane/bpf"
	PKGS=${XNIC_USER_PKGS:-${XNIC_ARM64_PKGS:-$defpkgs}}
	QEMU=${XNIC_QEMU_USER:-${XNIC_QEMU_AARCH64:-}}
	;;
arm)
	qarch=arm
	goenv=(GOARCH=arm GOARM=7)
	defpkgs="./dma/... ./physmem/... ./sim/... ./nic/... ./fec/... ./dataplane ./dataplane/bpf"
	PKGS=${XNIC_USER_PKGS:-$defpkgs}
	QEMU=${XNIC_QEMU_USER:-}
	;;
*)
	echo "usage: $0 arm64|arm [go test flags...]" >&2
	exit 2
	;;
esac
shift

log() { echo "$arch-unit: $*" >&2; }

cd "$(dirname "$0")/../.."
if [ -z "$QEMU" ]; then
	QEMU=$(command -v "qemu-$qarch-static" || command -v "qemu-$qarch" || true)
fi
if [ -z "$QEMU" ] || [ ! -x "$QEMU" ]; then
	log "error: no qemu-$qarch-static on PATH: apt-get install qemu-user-static (bookworm-backports; internal/vmtest/setup-arm64.sh installs it)"
	exit 1
fi
version=$("$QEMU" --version | head -n1)
log "$version"
# QEMU 7.2 (Debian bookworm's qemu-user-static) fails physmem's
# TestRealHugePage on arm64: its linux-user mmap returns EINVAL for
# MAP_HUGETLB, so no huge page can be mapped. 10.0 (bookworm-backports) maps
# them (and, with guest addresses equal to host ones, /proc/self/pagemap gives
# their real frames). Versions in between were not tried; the arm tier uses
# the same package.
major=$(echo "$version" | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
if [ -z "$major" ] || [ "$major" -lt 10 ]; then
	log "error: $QEMU is older than QEMU 10 (tested: 7.2 cannot map huge pages for the emulated program); install qemu-user-static from bookworm-backports (internal/vmtest/setup-arm64.sh does)"
	exit 1
fi

start=$(date +%s)
# shellcheck disable=SC2086 # PKGS is a list of patterns
env CGO_ENABLED=0 GOOS=linux "${goenv[@]}" go test -count=1 -short -timeout 20m \
	-exec "$QEMU" "$@" $PKGS
log "passed in $(($(date +%s) - start)) s"
