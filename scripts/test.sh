#!/usr/bin/env bash
# `make test`: installs what the tiers need (scripts/setup.sh; as root only),
# then runs every tier in turn and ends with one line per tier: passed,
# FAILED, or not run and why. Exits non-zero when a tier failed, or when a
# tier that root could have run was not run. Tiers (each also a make target):
#
#   tidy         go mod tidy changes nothing
#   lint         go vet + staticcheck; build and vet for GOARCH=arm and 386;
#                the generated interpreter cases are current
#   unit         go test ./... (unit tier; as root also the privileged tier:
#                kernel-differential, TAP and netns tests)
#   bench-smoke  every benchmark once (-benchtime 1x)
#   cachemodel   the dwmac and fec suites under sim's CPU cache model, 4 seeds
#   arm64        unit tests of the arm64 code as arm64 binaries under qemu-user
#   arm          the same for 32-bit ARMv7 (GOARM=7) binaries
#   vmtest       the VM tiers (QEMU TCG guests; see internal/vmtest)
#
# XNIC_TEST_TIERS="unit lint" runs only those.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
tiers=${XNIC_TEST_TIERS:-tidy lint unit cachemodel bench-smoke arm64 arm vmtest}

root=0
[ "$(id -u)" = 0 ] && root=1
if [ "$root" = 1 ]; then
	bash scripts/setup.sh || { echo "test: scripts/setup.sh failed: the tiers that need what it installs will fail" >&2; }
fi

summary=()
failures=()
failed=0
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
note() { summary+=("$(printf '%-12s %s' "$1" "$2")"); }

# why_not TIER prints why TIER cannot run here, or nothing when it can.
why_not() {
	case $1 in
	arm64)
		command -v qemu-aarch64-static >/dev/null || echo "qemu-aarch64-static missing (internal/vmtest/setup-arm64.sh installs it; make test runs it as root)"
		;;
	arm)
		command -v qemu-arm-static >/dev/null || echo "qemu-arm-static missing (qemu-user-static; internal/vmtest/setup-arm64.sh installs it; make test runs it as root)"
		;;
	vmtest)
		if [ "$root" != 1 ]; then
			echo "needs root (QEMU and guest kernels installed by scripts/setup.sh; the guests' /dev/kvm-less TCG runs need no more)"
		fi
		;;
	esac
}

for t in $tiers; do
	reason=$(why_not "$t")
	if [ -n "$reason" ]; then
		note "$t" "not run: $reason"
		[ "$root" = 1 ] && failed=1
		continue
	fi
	echo "=== tier $t" >&2
	start=$SECONDS
	if "$MAKE" --no-print-directory "$t" 2>&1 | tee "$logdir/$t.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
		note "$t" "passed ($((SECONDS - start)) s)"
	else
		note "$t" "FAILED ($((SECONDS - start)) s)"
		failed=1
		# The failing tests' names and first lines, repeated after the
		# summary: a CI log is often read from its tail only.
		# The verdict lines first, then the tests' messages (without the
		# VM tier's guest console, which it logs through t.Log).
		while IFS= read -r l; do failures+=("$t: $l"); done < <(
			grep -E -e '--- FAIL|^FAIL|panic:|^make.*Error' "$logdir/$t.log" | head -n 20
			grep -E -e '_test\.go:[0-9]+:' "$logdir/$t.log" | grep -v 'guest:' | head -n 20)
	fi
done

echo
echo "tiers:"
for s in "${summary[@]}"; do echo "  $s"; done
if [ "${#failures[@]}" -gt 0 ]; then
	echo
	echo "failures (first lines of each failed tier):"
	for s in "${failures[@]}"; do echo "  $s"; done
fi
exit "$failed"
