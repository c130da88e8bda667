#!/usr/bin/env bash
# Installs what xnic's 32-bit ARM VM test needs (TestFECIMX6UL in make
# vmtest: QEMU's mcimx6ul-evk, an i.MX6UL with a Cortex-A7), without touching
# the system's apt configuration:
#
#   - Debian's armhf multiplatform kernel from bookworm-backports
#     (linux-image-6.12.*-armmp, not -lpae), downloaded and unpacked with
#     dpkg -x into the cache; the guest boots that package's own
#     imx6ul-14x14-evk.dtb;
#   - qemu-system-arm with the mcimx6ul-evk machine comes from setup-arm64.sh
#     (the same Debian package holds qemu-system-aarch64 and qemu-system-arm).
#
# Idempotent: a second run only checks. Network steps are retried. Writes
# $CACHE/vmtest-armhf.env, which the Go harness reads when
# XNIC_VMTEST_ARMHF_QEMU, XNIC_VMTEST_ARMHF_KERNEL and XNIC_VMTEST_ARMHF_DTB
# are unset. Environment: as setup-arm64.sh.
set -euo pipefail

SETUP_NAME=vmtest-setup-armhf
# shellcheck source=internal/vmtest/setuplib.bash
. "$(dirname "$0")/setuplib.bash"
KPATTERN='^linux-image-6\.12\.[0-9.+~a-z-]*-armmp$'

APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/lists-armhf/partial" "$APTDIR/cache/archives/partial" "$CACHE/kernel-armhf"
opts="arch=armhf"
[ -r "$KEYRING" ] && opts="$opts signed-by=$KEYRING"
cat >"$APTDIR/sources-armhf.list.new" <<SRC
deb [$opts] ${MIRROR} ${BACKPORTS} main
SRC
mv "$APTDIR/sources-armhf.list.new" "$APTDIR/sources-armhf.list"
APT_OPTS=(
	-o "Dir::Etc::sourcelist=$APTDIR/sources-armhf.list"
	-o "Dir::Etc::sourceparts=-"
	-o "Dir::State::Lists=$APTDIR/lists-armhf"
	-o "Dir::Cache=$APTDIR/cache"
	-o "APT::Architectures=armhf"
	-o "APT::Get::List-Cleanup=0"
	-o "Acquire::Retries=3"
)

QEMU=$(command -v qemu-system-arm || true)
if [ -z "$QEMU" ] || ! "$QEMU" -machine help 2>/dev/null | grep -q '^mcimx6ul-evk'; then
	log "no qemu-system-arm with the mcimx6ul-evk machine yet: running setup-arm64.sh first"
	bash "$(dirname "$0")/setup-arm64.sh" >/dev/null
	QEMU=$(command -v qemu-system-arm) || die "qemu-system-arm missing after setup-arm64.sh"
fi

KDIR="$CACHE/kernel-armhf"
if [ -L "$KDIR/current" ] && [ "${XNIC_VMTEST_REFRESH:-0}" != 1 ] &&
	compgen -G "$KDIR/current/boot/vmlinuz-*" >/dev/null; then
	log "kernel already unpacked: $(readlink "$KDIR/current")"
else
	log "updating private armhf package lists from $MIRROR ($BACKPORTS)"
	retry "${SUDO[@]}" apt-get -q "${APT_OPTS[@]}" update || die "apt-get update against $MIRROR failed"
	pkg=$(apt-cache "${APT_OPTS[@]}" pkgnames linux-image-6.12 2>/dev/null |
		grep -E "$KPATTERN" | grep -v -e -lpae -e -rt- -e -dbg | sort -V | tail -n1 || true)
	[ -n "$pkg" ] || die "no $KPATTERN package in $BACKPORTS"
	log "downloading $pkg:armhf"
	mkdir -p "$KDIR/debs"
	rm -f "$KDIR/debs/${pkg}"_*.deb
	(cd "$KDIR/debs" && retry apt-get -q "${APT_OPTS[@]}" download "$pkg:armhf") || die "apt-get download $pkg:armhf failed"
	deb=$(ls "$KDIR/debs/${pkg}"_*_armhf.deb | head -n1)
	rm -rf "$KDIR/$pkg.tmp"
	dpkg -x "$deb" "$KDIR/$pkg.tmp"
	# The guest loads no module: keep the kernel and the device trees only.
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
DTB=$(ls "$KROOT"/usr/lib/linux-image-"$KVER"/imx6ul-14x14-evk.dtb "$KROOT"/usr/lib/linux-image-"$KVER"/nxp/imx/imx6ul-14x14-evk.dtb 2>/dev/null | head -n1 || true)
[ -n "$DTB" ] && [ -r "$DTB" ] || die "no imx6ul-14x14-evk.dtb in the kernel package ($KROOT/usr/lib/linux-image-$KVER)"

cat >"$CACHE/vmtest-armhf.env.new" <<ENV
XNIC_VMTEST_ARMHF_QEMU=$QEMU
XNIC_VMTEST_ARMHF_KERNEL=$KERNEL
XNIC_VMTEST_ARMHF_DTB=$DTB
ENV
mv "$CACHE/vmtest-armhf.env.new" "$CACHE/vmtest-armhf.env"
echo "QEMU:    $QEMU ($("$QEMU" --version | head -n1))"
echo "kernel:  $KERNEL"
echo "dtb:     $DTB"
echo "env:     $CACHE/vmtest-armhf.env"
