#!/usr/bin/env bash
# Installs what xnic's VM tier (make vmtest) needs, without touching the
# system's apt configuration:
#
#   - qemu-system-x86 from Debian bookworm-backports (QEMU >= 8 has the igb
#     model; bookworm's own 7.2 does not), installed system-wide with apt-get
#     but resolved against a private sources list and private package lists;
#   - the Debian cloud kernel (the package linux-image-cloud-amd64 points at),
#     downloaded and unpacked with dpkg -x into the cache, then depmod -b.
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
# On success it prints where things are and writes them to $CACHE/vmtest.env,
# which the Go harness (internal/vmtest) reads when its own variables
# (XNIC_VMTEST_QEMU, XNIC_VMTEST_KERNEL, XNIC_VMTEST_MODULES) are unset.
set -euo pipefail

SETUP_NAME=vmtest-setup
# shellcheck source=internal/vmtest/setuplib.bash
. "$(dirname "$0")/setuplib.bash"

APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$CACHE/kernel"
signed=""
[ -r "$KEYRING" ] && signed="[signed-by=$KEYRING] "
cat >"$APTDIR/sources.list.new" <<SRC
deb ${signed}${MIRROR} ${SUITE} main
deb ${signed}${MIRROR} ${BACKPORTS} main
SRC
mv "$APTDIR/sources.list.new" "$APTDIR/sources.list"

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
	log "updating private package lists from $MIRROR ($SUITE, $BACKPORTS)"
	retry "${SUDO[@]}" apt-get -q "${APT_OPTS[@]}" update || die "apt-get update against $MIRROR failed"
	lists_fresh=1
}
# Reuse lists younger than a day unless a refresh is asked for.
if [ "${XNIC_VMTEST_REFRESH:-0}" = 1 ] || [ -z "$(find "$APTDIR/lists" -maxdepth 1 -name '*_Packages*' -mtime -1 2>/dev/null | head -n1)" ]; then
	lists_stale=1
else
	lists_stale=0
fi

have_igb_qemu() {
	local q
	q=$(command -v qemu-system-x86_64) || return 1
	"$q" -device help 2>/dev/null | grep -q '"igb"'
}

# 1. QEMU with the igb model.
if have_igb_qemu; then
	log "QEMU with igb already installed: $(qemu-system-x86_64 --version | head -n1)"
else
	update_lists
	log "installing qemu-system-x86 from $BACKPORTS"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends -t "$BACKPORTS" qemu-system-x86 ||
		die "apt-get install qemu-system-x86 from $BACKPORTS failed"
	have_igb_qemu || die "installed QEMU has no igb model: $(qemu-system-x86_64 --version | head -n1)"
fi
QEMU=$(command -v qemu-system-x86_64)

# depmod comes with kmod (not on minimal images).
if ! command -v depmod >/dev/null && [ ! -x /usr/sbin/depmod ] && [ ! -x /sbin/depmod ]; then
	update_lists
	log "installing kmod (for depmod)"
	retry "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_OPTS[@]}" \
		install --no-install-recommends kmod || die "apt-get install kmod failed"
fi
DEPMOD=$(command -v depmod || echo /usr/sbin/depmod)

# 2. The Debian cloud kernel, unpacked under $CACHE/kernel/<package>.
KDIR="$CACHE/kernel"
if [ -L "$KDIR/current" ] && [ "${XNIC_VMTEST_REFRESH:-0}" != 1 ] &&
	compgen -G "$KDIR/current/boot/vmlinuz-*" >/dev/null; then
	log "kernel already unpacked: $(readlink "$KDIR/current")"
else
	[ "$lists_stale" = 1 ] && update_lists
	if ! pkg=$(apt-cache "${APT_OPTS[@]}" depends linux-image-cloud-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }') || [ -z "$pkg" ]; then
		update_lists
		pkg=$(apt-cache "${APT_OPTS[@]}" depends linux-image-cloud-amd64 |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	fi
	[ -n "$pkg" ] || die "apt-cache depends linux-image-cloud-amd64 named no kernel package"
	log "downloading $pkg"
	mkdir -p "$KDIR/debs"
	rm -f "$KDIR/debs/${pkg}"_*.deb
	# apt-get download writes into the current directory; as root it warns that
	# the _apt user cannot write there and downloads unsandboxed, which is fine.
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
fi
KROOT=$(cd "$KDIR/current" && pwd -P)
KERNEL=$(ls "$KROOT"/boot/vmlinuz-* | head -n1)
KVER=${KERNEL##*/vmlinuz-}
MODULES="$KROOT/lib/modules/$KVER"
[ -d "$MODULES" ] || die "no module directory $MODULES"

cat >"$CACHE/vmtest.env.new" <<ENV
XNIC_VMTEST_QEMU=$QEMU
XNIC_VMTEST_KERNEL=$KERNEL
XNIC_VMTEST_MODULES=$MODULES
ENV
mv "$CACHE/vmtest.env.new" "$CACHE/vmtest.env"
echo "QEMU:    $QEMU ($("$QEMU" --version | head -n1))"
echo "kernel:  $KERNEL"
echo "modules: $MODULES"
echo "env:     $CACHE/vmtest.env"
