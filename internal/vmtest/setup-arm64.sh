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
#   - qemu-user-static >= 10 from bookworm-backports, for arm64-unit.sh;
#   - of that kernel's modules only fec and nvmem-imx-ocotp with what they
#     depend on (decompressed, with modules.dep from depmod -b), for the
#     hand-over boots of TestHandoverQEMU: the guest loads fec itself;
#   - device-tree-compiler (fdtput), with which the harness writes the
#     README's hand-over DTB (the FEC node's compatible set to simple-pm-bus).
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
# (XNIC_VMTEST_ARM64_QEMU, XNIC_VMTEST_ARM64_KERNEL, XNIC_VMTEST_ARM64_DTB,
# XNIC_VMTEST_ARM64_MODULES, XNIC_VMTEST_FDTPUT) are unset.
set -euo pipefail

SETUP_NAME=vmtest-setup-arm64
# shellcheck source=internal/vmtest/setuplib.bash
. "$(dirname "$0")/setuplib.bash"
# The kernel: the newest linux-image-6.12.*-arm64 (not -cloud-, not -rt-,
# not -dbg) that the backports lists have.
KPATTERN='^linux-image-6\.12\.[0-9.+~a-z-]*-arm64$'
# The modules the hand-over boots load (with their dependencies).
KMODULES=(fec nvmem-imx-ocotp)

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

# depmod and modprobe come with kmod (not on minimal images).
if ! command -v depmod >/dev/null && [ ! -x /usr/sbin/depmod ]; then
	update_lists
	log "installing kmod (for depmod)"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends kmod || die "apt-get install kmod failed"
fi
DEPMOD=$(command -v depmod || echo /usr/sbin/depmod)
MODPROBE=$(command -v modprobe || echo /usr/sbin/modprobe)

# 2. The generic arm64 kernel, unpacked under $CACHE/kernel-arm64/<package>.
KDIR="$CACHE/kernel-arm64"
if [ -L "$KDIR/current" ] && [ "${XNIC_VMTEST_REFRESH:-0}" != 1 ] &&
	compgen -G "$KDIR/current/boot/vmlinuz-*" >/dev/null &&
	[ "$(cat "$KDIR"/current/lib/modules/*/xnic-kept 2>/dev/null)" = "${KMODULES[*]}" ]; then
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
	# Of the modules keep only KMODULES and their dependencies, decompressed
	# (the guest's finit_module loader takes plain .ko files), to keep the
	# cache small; keep the device trees.
	kver=$(ls "$KDIR/$pkg.tmp/lib/modules" | head -n1)
	[ -n "$kver" ] || die "$deb has no /lib/modules"
	mods="$KDIR/$pkg.tmp/lib/modules/$kver"
	"$DEPMOD" -b "$KDIR/$pkg.tmp" "$kver" || die "depmod -b $KDIR/$pkg.tmp $kver failed"
	keep=
	for m in "${KMODULES[@]}"; do # one at a time: further names would be parameters
		keep="$keep $("$MODPROBE" -d "$KDIR/$pkg.tmp" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }')" ||
			die "modprobe --show-depends $m failed"
	done
	keep=$(echo "$keep" | tr ' ' '\n' | sort -u)
	rm -rf "$KDIR/$pkg.keep" && mkdir -p "$KDIR/$pkg.keep"
	for m in $keep; do
		rel=${m#"$mods"/}
		mkdir -p "$KDIR/$pkg.keep/$(dirname "$rel")"
		mv "$m" "$KDIR/$pkg.keep/$rel"
	done
	rm -rf "$mods/kernel" "$KDIR/$pkg.tmp/usr/lib/modules"
	mv "$KDIR/$pkg.keep/kernel" "$mods/kernel" && rmdir "$KDIR/$pkg.keep"
	find "$mods/kernel" -name '*.ko.xz' -exec xz -d {} +
	"$DEPMOD" -b "$KDIR/$pkg.tmp" "$kver" || die "depmod -b (kept modules) failed"
	echo "${KMODULES[*]}" >"$mods/xnic-kept"
	log "kept $(find "$mods/kernel" -name '*.ko' | wc -l) modules for ${KMODULES[*]}"
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

MODULES="$KROOT/lib/modules/$KVER"
[ -r "$MODULES/modules.dep" ] || die "no $MODULES/modules.dep"

# 3. fdtput, for the hand-over DTB.
if ! command -v fdtput >/dev/null; then
	update_lists
	log "installing device-tree-compiler (fdtput)"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends device-tree-compiler || die "apt-get install device-tree-compiler failed"
fi
FDTPUT=$(command -v fdtput)

cat >"$CACHE/vmtest-arm64.env.new" <<ENV
XNIC_VMTEST_ARM64_QEMU=$QEMU
XNIC_VMTEST_ARM64_KERNEL=$KERNEL
XNIC_VMTEST_ARM64_DTB=$DTB
XNIC_VMTEST_ARM64_MODULES=$MODULES
XNIC_VMTEST_FDTPUT=$FDTPUT
ENV
mv "$CACHE/vmtest-arm64.env.new" "$CACHE/vmtest-arm64.env"
echo "QEMU:    $QEMU ($("$QEMU" --version | head -n1))"
echo "kernel:  $KERNEL"
echo "dtb:     $DTB"
echo "modules: $MODULES"
echo "fdtput:  $FDTPUT"
echo "env:     $CACHE/vmtest-arm64.env"
