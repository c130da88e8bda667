#!/usr/bin/env bash
# Installs what `make test`'s tiers need on a Debian 12 machine, as root:
#
#   - from Debian's own archive: clang and llvm (the example XDP objects and the
#     kernel-differential tests), libbpf-dev (bpf_helpers.h), iproute2 and
#     iputils-ping (network-namespace tests), kmod (depmod);
#   - internal/vmtest/setup*.sh: the VM tiers' QEMU builds and guest kernels,
#     and qemu-user-static >= 10 for the arm64 tier, each cached under
#     /var/cache/xnic-vmtest and leaving the system's apt sources alone.
#
# Idempotent: what is installed already is only checked, so a second run costs
# seconds. Without root it installs nothing and says so (exit 0): `make test`
# then runs the tiers it can and lists the others.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "setup: $*" >&2; }
retry() {
	local n
	for n in 1 2 3; do
		"$@" && return 0
		log "attempt $n failed: $*"
		sleep $((n * 5))
	done
	return 1
}

if [ "$(id -u)" != 0 ]; then
	log "not root: installing nothing (the privileged, arm64 and VM tiers need what root installs)"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
need=()
command -v clang >/dev/null || need+=(clang)
command -v llvm-objdump >/dev/null || need+=(llvm)
[ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
command -v ip >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
command -v depmod >/dev/null || [ -x /usr/sbin/depmod ] || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	retry apt-get update -q
	retry apt-get install -y -q --no-install-recommends "${need[@]}"
fi

for s in internal/vmtest/setup*.sh; do
	log "running $s"
	retry bash "$s"
done
