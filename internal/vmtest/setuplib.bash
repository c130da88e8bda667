# shellcheck shell=bash
# What the VM tiers' setup scripts (setup.sh, setup-arm64.sh,
# setup-vfiouser.sh) share; each sources this file after setting SETUP_NAME
# (the prefix of its log lines). It defines log, die and retry, the cache
# directory (CACHE: XNIC_VMTEST_CACHE, else /var/cache/xnic-vmtest as root or
# ${XDG_CACHE_HOME:-~/.cache}/xnic-vmtest with sudo; SUDO is the prefix for
# commands that need root), the Debian suites, the archive keyring, and
# MIRROR: XNIC_DEBIAN_MIRROR, else the mirror the system's own apt sources use
# for bookworm, else deb.debian.org.

log() { echo "$SETUP_NAME: $*" >&2; }
die() { log "error: $*"; exit 1; }

# retry CMD...: runs CMD up to four times, waiting 5, 10, 15 s between tries.
retry() {
	local n
	for n in 1 2 3 4; do
		"$@" && return 0
		log "attempt $n failed: $*"
		sleep $((n * 5))
	done
	return 1
}

if [ "$(id -u)" = 0 ]; then
	SUDO=()
	default_cache=/var/cache/xnic-vmtest
else
	command -v sudo >/dev/null || die "installing QEMU needs root (or sudo)"
	SUDO=(sudo)
	default_cache="${XDG_CACHE_HOME:-$HOME/.cache}/xnic-vmtest"
fi
CACHE="${XNIC_VMTEST_CACHE:-$default_cache}"
SUITE=bookworm
BACKPORTS=bookworm-backports
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# detect_mirror prints the mirror the system already uses for Debian's main
# archive (deb822 .sources or one-line .list files), or deb.debian.org.
detect_mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		# deb822: take the URIs line of a stanza whose Suites include bookworm.
		uri=$(awk -v s="$SUITE" '
			/^[[:space:]]*$/ { if (u != "" && ok) { print u; exit } u=""; ok=0; next }
			/^URIs:/ { u=$2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok=1 }
			END { if (u != "" && ok) print u }' "$f" | head -n1)
		if [ -n "$uri" ]; then echo "$uri"; return; fi
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk -v s="$SUITE" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($(i+1) == s) print $i; break } }' "$f" | head -n1)
		if [ -n "$uri" ]; then echo "$uri"; return; fi
	done
	echo http://deb.debian.org/debian
}
MIRROR="${XNIC_DEBIAN_MIRROR:-$(detect_mirror)}"
