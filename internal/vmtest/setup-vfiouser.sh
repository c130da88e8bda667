#!/usr/bin/env bash
# Installs what xnic's guest tier (TestLinuxDriver, TestVFIOUser in
# internal/vmtest) needs on top of setup.sh, without touching the system's apt
# configuration or its installed packages:
#
#   - QEMU >= 10.1 for x86_64, the first version with the vfio-user client
#     (-device vfio-user-pci). Debian bookworm (12) has 7.2 and
#     bookworm-backports 10.0; the newest Debian build is in trixie-backports
#     (11.x in December 2026), built against trixie's libc 2.41, which
#     bookworm's 2.36 cannot run. So the script builds a minimal trixie root
#     with mmdebstrap (variant essential plus qemu-system-x86 and its
#     dependencies from trixie-backports, no recommends) under
#     $CACHE/qemu-trixie/root, and writes a wrapper that starts that QEMU
#     through the root's own dynamic loader with --library-path and -L for its
#     firmware. No chroot and no bind mounts are needed at run time: QEMU sees
#     the host's file system (sockets in /tmp, memfd backends, the kernel and
#     initramfs) as any host program does, runs as the calling user, and the
#     root is only a library and firmware tree. A cold run of this script
#     took 2 min 37 s here (2 shared cores, deb.debian.org: the root about
#     2 min and 185 MiB, the kernel a 70 MB download, 430 MiB unpacked); a
#     warm one 0.4 s. The alternatives were worse: building QEMU from
#     source takes longer than the whole VM tier, and installing trixie
#     packages into a bookworm system would replace its libc.
#   - Debian's generic amd64 kernel (the package bookworm's linux-image-amd64
#     points at), unpacked with dpkg -x under $CACHE/kernel-generic and
#     depmod'ed. Unlike the cloud kernel setup.sh fetches it has stmmac,
#     dwmac-intel, pcs-xpcs and phylink as modules (Debian's 6.1 builds no
#     stmmac-pci; dwmac-intel is the Intel mGbE's PCI glue), as well as igb
#     and vfio-pci.
#
# Idempotent: a second run only checks. Network steps are retried. Missing
# tools (mmdebstrap, kmod's depmod) come from bookworm through the same
# private package lists.
#
# Environment (as setup.sh):
#   XNIC_VMTEST_CACHE   cache directory (default /var/cache/xnic-vmtest as root)
#   XNIC_DEBIAN_MIRROR  Debian mirror URI (default: the system's, as setup.sh)
#   XNIC_VMTEST_REFRESH=1  rebuild the QEMU root and re-download the kernel
#
# On success it writes $CACHE/vfiouser.env with XNIC_VFIOUSER_QEMU,
# XNIC_VFIOUSER_KERNEL, XNIC_VFIOUSER_MODULES and XNIC_VFIOUSER_ETHTOOL_ROOT
# (the guest's ethtool, step 3), which the Go harness reads
# when those variables are not set in its environment.
set -euo pipefail

SETUP_NAME=vmtest-setup-vfiouser
# shellcheck source=internal/vmtest/setuplib.bash
. "$(dirname "$0")/setuplib.bash"

[ "$(id -u)" = 0 ] || die "run as root: mmdebstrap's root mode and the cache in /var/cache need it"
REFRESH="${XNIC_VMTEST_REFRESH:-0}"
QSUITE=trixie
QBACKPORTS=trixie-backports
KSUITE=bookworm
mkdir -p "$CACHE"

# version_ge A B: is QEMU version A >= B (dotted numbers)?
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# Private package lists for bookworm (the kernel, and mmdebstrap and kmod if
# missing), as setup.sh keeps its own: the system's sources stay untouched.
KDIR="$CACHE/kernel-generic"
APTDIR="$KDIR/apt"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$KDIR/debs"
signed=""
[ -r "$KEYRING" ] && signed="[signed-by=$KEYRING] "
echo "deb ${signed}${MIRROR} ${KSUITE} main" >"$APTDIR/sources.list"
APT_OPTS=(
	-o "Dir::Etc::sourcelist=$APTDIR/sources.list"
	-o "Dir::Etc::sourceparts=-"
	-o "Dir::State::Lists=$APTDIR/lists"
	-o "Dir::Cache=$APTDIR/cache"
	-o "APT::Get::List-Cleanup=0"
	-o "Acquire::Retries=3"
)
lists_fresh=0
update_lists() {
	[ "$lists_fresh" = 1 ] && return 0
	log "updating private package lists ($KSUITE)"
	retry apt-get -q "${APT_OPTS[@]}" update || die "apt-get update against $MIRROR failed"
	lists_fresh=1
}
need_tool() { # need_tool COMMAND PACKAGE
	command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ] && return 0
	update_lists
	log "installing $2"
	retry env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends "$2" || die "apt-get install $2 failed"
}

# 1. QEMU >= 10.1 in a trixie root.
QDIR="$CACHE/qemu-trixie"
QROOT="$QDIR/root"
WRAPPER="$QDIR/qemu-system-x86_64"

write_wrapper() {
	local ldso
	ldso=$(cd "$QROOT" && ls lib64/ld-linux-x86-64.so.2 usr/lib64/ld-linux-x86-64.so.2 2>/dev/null | head -n1)
	[ -n "$ldso" ] || die "$QROOT has no x86-64 dynamic loader"
	# QEMU_MODULE_DIR: QEMU loads its optional modules (accel, display, ...)
	# from the root too, not from a host QEMU of another version.
	cat >"$WRAPPER.new" <<WRAP
#!/bin/sh
# Written by internal/vmtest/setup-vfiouser.sh: QEMU from Debian $QBACKPORTS,
# run through its own root's loader and libraries (see that script).
R="$QROOT"
export QEMU_MODULE_DIR="\$R/usr/lib/x86_64-linux-gnu/qemu"
exec "\$R/$ldso" --library-path "\$R/usr/lib/x86_64-linux-gnu:\$R/lib/x86_64-linux-gnu:\$R/usr/lib/x86_64-linux-gnu/ceph" \\
	"\$R/usr/bin/qemu-system-x86_64" -L "\$R/usr/share/qemu" -L "\$R/usr/share/seabios" "\$@"
WRAP
	chmod 0755 "$WRAPPER.new"
	mv "$WRAPPER.new" "$WRAPPER"
}

qemu_ok() {
	[ -x "$WRAPPER" ] || return 1
	local v
	v=$("$WRAPPER" --version 2>/dev/null | awk 'NR == 1 { print $4 }') || return 1
	[ -n "$v" ] && version_ge "$v" 10.1 || return 1
	"$WRAPPER" -device help 2>/dev/null | grep -q '"vfio-user-pci"'
}

if [ "$REFRESH" != 1 ] && qemu_ok; then
	log "QEMU with vfio-user-pci already there: $("$WRAPPER" --version | head -n1)"
else
	need_tool mmdebstrap mmdebstrap
	rm -rf "$QROOT.tmp"
	mkdir -p "$QDIR"
	signed=""
	[ -r "$KEYRING" ] && signed="[signed-by=$KEYRING] "
	log "building a $QSUITE root with qemu-system-x86 from $QBACKPORTS in $QROOT (a few minutes)"
	begin=$(date +%s)
	# APT::Default-Release makes apt take qemu and whatever it depends on from
	# backports where backports has it, the rest from trixie.
	retry mmdebstrap --variant=essential --mode=root --components=main \
		--aptopt="APT::Default-Release \"$QBACKPORTS\"" \
		--aptopt='APT::Install-Recommends "false"' \
		--include=qemu-system-x86 \
		"$QSUITE" "$QROOT.tmp" \
		"deb ${signed}${MIRROR} $QSUITE main" \
		"deb ${signed}${MIRROR} $QBACKPORTS main" ||
		die "mmdebstrap of $QSUITE with qemu-system-x86 failed"
	# The root is a library tree, not a system: no apt cache, docs or locales.
	rm -rf "$QROOT.tmp/var/cache/apt/archives/"*.deb "$QROOT.tmp/usr/share/doc" \
		"$QROOT.tmp/usr/share/man" "$QROOT.tmp/usr/share/locale"
	rm -rf "$QROOT"
	mv "$QROOT.tmp" "$QROOT"
	write_wrapper
	qemu_ok || die "QEMU in $QROOT is older than 10.1 or has no vfio-user-pci: $("$WRAPPER" --version 2>&1 | head -n1)"
	log "QEMU root built in $(($(date +%s) - begin))s, $(du -sh "$QROOT" | cut -f1)"
fi
write_wrapper # cheap; keeps the wrapper in step with this script

# 2. Debian's generic kernel, unpacked under $CACHE/kernel-generic/<package>.
need_tool depmod kmod
DEPMOD=$(command -v depmod || echo /usr/sbin/depmod)

if [ -L "$KDIR/current" ] && [ "$REFRESH" != 1 ] &&
	compgen -G "$KDIR/current/boot/vmlinuz-*" >/dev/null; then
	log "generic kernel already unpacked: $(readlink "$KDIR/current")"
else
	update_lists
	pkg=$(apt-cache "${APT_OPTS[@]}" depends linux-image-amd64 |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	[ -n "$pkg" ] || die "apt-cache depends linux-image-amd64 named no kernel package"
	log "downloading $pkg"
	rm -f "$KDIR/debs/${pkg}"_*.deb
	(cd "$KDIR/debs" && retry apt-get -q "${APT_OPTS[@]}" download "$pkg") || die "apt-get download $pkg failed"
	deb=$(ls "$KDIR/debs/${pkg}"_*.deb | head -n1)
	rm -rf "$KDIR/$pkg.tmp"
	dpkg -x "$deb" "$KDIR/$pkg.tmp"
	kver=$(ls "$KDIR/$pkg.tmp/lib/modules" | head -n1)
	[ -n "$kver" ] || die "$deb has no /lib/modules"
	"$DEPMOD" -b "$KDIR/$pkg.tmp" "$kver" || die "depmod -b $KDIR/$pkg.tmp $kver failed"
	chmod a+r "$KDIR/$pkg.tmp/boot/vmlinuz-$kver"
	rm -rf "${KDIR:?}/$pkg"
	mv "$KDIR/$pkg.tmp" "$KDIR/$pkg"
	ln -sfn "$pkg" "$KDIR/current"
	rm -f "$deb"
fi
KROOT=$(cd "$KDIR/current" && pwd -P)
KERNEL=$(ls "$KROOT"/boot/vmlinuz-* | head -n1)
KVER=${KERNEL##*/vmlinuz-}
MODULES="$KROOT/lib/modules/$KVER"
[ -f "$MODULES/modules.dep" ] || die "no modules.dep in $MODULES"
for m in stmmac dwmac-intel pcs-xpcs phylink igb vfio-pci marvell realtek; do
	grep -Eq "/${m//-/[-_]}\.ko(\.[a-z]+)?:" "$MODULES/modules.dep" || die "kernel $KVER has no module $m"
done

# 3. ethtool for the guest (TestLinuxDriver's TestEthtool): Debian has no
# static build, so bookworm's ethtool with the libraries it links (libmnl0,
# libc6) is unpacked with dpkg -x under $CACHE/ethtool/root, about 4 MB of
# downloads; the harness copies the binary, libmnl, libc and the loader into
# the initramfs.
EDIR="$CACHE/ethtool"
if [ -x "$EDIR/root/sbin/ethtool" ] && [ "$REFRESH" != 1 ]; then
	log "guest ethtool already unpacked: $EDIR/root"
else
	update_lists
	rm -rf "$EDIR/debs" "$EDIR/root.tmp"
	mkdir -p "$EDIR/debs"
	(cd "$EDIR/debs" && retry apt-get -q "${APT_OPTS[@]}" download ethtool libmnl0 libc6) ||
		die "apt-get download ethtool libmnl0 libc6 failed"
	for deb in "$EDIR"/debs/*.deb; do dpkg -x "$deb" "$EDIR/root.tmp"; done
	[ -x "$EDIR/root.tmp/sbin/ethtool" ] || die "the ethtool package has no sbin/ethtool"
	rm -rf "$EDIR/root" "$EDIR/debs"
	mv "$EDIR/root.tmp" "$EDIR/root"
fi

cat >"$CACHE/vfiouser.env.new" <<ENV
XNIC_VFIOUSER_QEMU=$WRAPPER
XNIC_VFIOUSER_KERNEL=$KERNEL
XNIC_VFIOUSER_MODULES=$MODULES
XNIC_VFIOUSER_ETHTOOL_ROOT=$EDIR/root
ENV
mv "$CACHE/vfiouser.env.new" "$CACHE/vfiouser.env"
echo "QEMU:    $WRAPPER ($("$WRAPPER" --version | head -n1))"
echo "kernel:  $KERNEL"
echo "modules: $MODULES"
echo "env:     $CACHE/vfiouser.env"
