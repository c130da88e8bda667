#!/usr/bin/env bash
# Installs what xnic's arm64 tiers need (TestFECQEMU in make vmtest, and
# arm64-unit.sh), without touching the system's apt configuration:
#
#   - qemu-system-arm (qemu-system-aarch64 with the imx8mp-evk machine and its
#     imx.enet model) from Debian bookworm-backports, installed system-wide
#     with apt-get but resolved against a private sources list and private
#     package lists (the same ones setup.sh uses);
#   - Debian's generic arm64 kernel from bookworm-backports
#     (linux-image-6.12.*-arm64; the cloud-arm64 flavour has no i.MX support),
#     downloaded and unpacked with dpkg -x into the cache; the device tree the
#     guest boots is that package's own freescale/imx8mp-evk.dtb;
#   - qemu-user-static >= 10 from bookworm-backports, for arm64-unit.sh.
#
# Idempotent: a second run only checks. Network steps are retried.
#
# Environment:
#   XNIC_VMTEST_CACHE   cache directory (default /var/cache/xnic-vmtest as root,
#                       ${XDG_CACHE_HOME:-~/.cache}/xnic-vmtest otherwise)
#   XNIC_DEBIAN_MIRROR  Debian mirror URI (default: the one the system's apt
#                       sources already use, else http://deb.debian.org/debian)
#   XNIC_VMTEST_REFRESH=1  re-download the package lists and the kernel
#
# On success it prints where things are and writes them to
# $CACHE/vmtest-arm64.env, which the Go harness reads when its own variables
# (XNIC_VMTEST_ARM64_QEMU, XNIC_VMTEST_ARM64_KERNEL, XNIC_VMTEST_ARM64_DTB)
# are unset.
set -euo pipefail

SETUP_NAME=vmtest-setup-arm64
# shellcheck source=internal/vmtest/setuplib.bash
. "$(dirname "$0")/setuplib.bash"
# The kernel: the newest linux-image-6.12.*-arm64 (not -cloud-, not -rt-,
# not -dbg) that the backports lists have.
KPATTERN='^linux-image-6\.12\.[0-9.+~a-z-]*-arm64$'

# Private apt state. The arm64 lists live beside setup.sh's amd64 ones
# (apt-get update with APT::Architectures adds them), so both scripts can
# share the directory.
APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$CACHE/kernel-arm64"
opts="arch=amd64,arm64"
[ -r "$KEYRING" ] && opts="$opts signed-by=$KEYRING"
cat >"$APTDIR/sources-arm64.list.new" <<SRC
deb [$opts] ${MIRROR} ${SUITE} main
deb [$opts] ${MIRROR} ${BACKPORTS} main
SRC
mv "$APTDIR/sources-arm64.list.new" "$APTDIR/sources-arm64.list"

APT_OPTS=(
	-o "Dir::Etc::sourcelist=$APTDIR/sources-arm64.list"
	-o "Dir::Etc::sourceparts=-"
	-o "Dir::State::Lists=$APTDIR/lists-arm64"
	-o "Dir::Cache=$APTDIR/cache"
	-o "APT::Architectures=amd64,arm64"
	-o "APT::Get::List-Cleanup=0"
	-o "Acquire::Retries=3"
)
mkdir -p "$APTDIR/lists-arm64/partial"

lists_fresh=0
update_lists() {
	[ "$lists_fresh" = 1 ] && return 0
	log "updating private package lists from $MIRROR ($SUITE, $BACKPORTS; amd64, arm64)"
	retry "${SUDO[@]}" apt-get -q "${APT_OPTS[@]}" update || die "apt-get update against $MIRROR failed"
	lists_fresh=1
}
if [ "${XNIC_VMTEST_REFRESH:-0}" = 1 ] || [ -z "$(find "$APTDIR/lists-arm64" -maxdepth 1 -name '*_Packages*' -mtime -1 2>/dev/null | head -n1)" ]; then
	lists_stale=1
else
	lists_stale=0
fi

have_imx_qemu() {
	local q
	q=$(command -v qemu-system-aarch64) || return 1
	"$q" -machine help 2>/dev/null | grep -q '^imx8mp-evk'
}

# 1. QEMU with the imx8mp-evk machine (QEMU >= 9.2; bookworm has 7.2).
if have_imx_qemu; then
	log "QEMU with imx8mp-evk already installed: $(qemu-system-aarch64 --version | head -n1)"
else
	update_lists
	log "installing qemu-system-arm from $BACKPORTS"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends -t "$BACKPORTS" qemu-system-arm ||
		die "apt-get install qemu-system-arm from $BACKPORTS failed"
	have_imx_qemu || die "installed QEMU has no imx8mp-evk machine: $(qemu-system-aarch64 --version | head -n1)"
fi
QEMU=$(command -v qemu-system-aarch64)

# 1b. qemu-user-static >= 10 for arm64-unit.sh (bookworm's 7.2 cannot map huge
# pages for the emulated program: mmap with MAP_HUGETLB fails with EINVAL).
user_major() {
	local q
	q=$(command -v qemu-aarch64-static) || { echo 0; return; }
	"$q" --version | sed -n '1s/.*version \([0-9][0-9]*\)\..*/\1/p'
}
if [ "$(user_major)" -ge 10 ] 2>/dev/null; then
	log "qemu-user-static already installed: $(qemu-aarch64-static --version | head -n1)"
else
	update_lists
	log "installing qemu-user-static from $BACKPORTS"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends -t "$BACKPORTS" qemu-user-static ||
		die "apt-get install qemu-user-static from $BACKPORTS failed"
	[ "$(user_major)" -ge 10 ] 2>/dev/null || die "qemu-aarch64-static is still older than 10: $(qemu-aarch64-static --version | head -n1)"
fi

# 2. The generic arm64 kernel, unpacked under $CACHE/kernel-arm64/<package>.
KDIR="$CACHE/kernel-arm64"
if [ -L "$KDIR/current" ] && [ "${XNIC_VMTEST_REFRESH:-0}" != 1 ] &&
	compgen -G "$KDIR/current/boot/vmlinuz-*" >/dev/null; then
	log "kernel already unpacked: $(readlink "$KDIR/current")"
else
	[ "$lists_stale" = 1 ] && update_lists
	pick() {
		apt-cache "${APT_OPTS[@]}" pkgnames linux-image-6.12 2>/dev/null |
			grep -E "$KPATTERN" | grep -v -e -cloud- -e -rt- -e -dbg | sort -V | tail -n1
	}
	pkg=$(pick || true)
	if [ -z "$pkg" ]; then
		update_lists
		pkg=$(pick || true)
	fi
	[ -n "$pkg" ] || die "no $KPATTERN package in $BACKPORTS"
	log "downloading $pkg:arm64"
	mkdir -p "$KDIR/debs"
	rm -f "$KDIR/debs/${pkg}"_*.deb
	(cd "$KDIR/debs" && retry apt-get -q "${APT_OPTS[@]}" download "$pkg:arm64") || die "apt-get download $pkg:arm64 failed"
	deb=$(ls "$KDIR/debs/${pkg}"_*_arm64.deb | head -n1)
	rm -rf "$KDIR/$pkg.tmp"
	dpkg -x "$deb" "$KDIR/$pkg.tmp"
	# The modules are not needed (the guest loads none): drop them to keep
	# the cache small, but keep the device trees.
	rm -rf "$KDIR/$pkg.tmp/lib/modules" "$KDIR/$pkg.tmp/usr/lib/modules"
	compgen -G "$KDIR/$pkg.tmp/boot/vmlinuz-*" >/dev/null || die "$deb has no /boot/vmlinuz-*"
	chmod a+r "$KDIR/$pkg.tmp"/boot/vmlinuz-*
	rm -rf "${KDIR:?}/$pkg"
	mv "$KDIR/$pkg.tmp" "$KDIR/$pkg"
	ln -sfn "$pkg" "$KDIR/current"
	rm -f "$deb"
fi
KROOT=$(cd "$KDIR/current" && pwd -P)
KERNEL=$(ls "$KROOT"/boot/vmlinuz-* | head -n1)
KVER=${KERNEL##*/vmlinuz-}
DTB="$KROOT/usr/lib/linux-image-$KVER/freescale/imx8mp-evk.dtb"
[ -r "$DTB" ] || die "no device tree $DTB in the kernel package"

cat >"$CACHE/vmtest-arm64.env.new" <<ENV
XNIC_VMTEST_ARM64_QEMU=$QEMU
XNIC_VMTEST_ARM64_KERNEL=$KERNEL
XNIC_VMTEST_ARM64_DTB=$DTB
ENV
mv "$CACHE/vmtest-arm64.env.new" "$CACHE/vmtest-arm64.env"
echo "QEMU:    $QEMU ($("$QEMU" --version | head -n1))"
echo "kernel:  $KERNEL"
echo "dtb:     $DTB"
echo "env:     $CACHE/vmtest-arm64.env"
