#!/usr/bin/env bash
# The arm64 unit-test tier: qemu-user-unit.sh arm64 (which says what it runs).
# Usage: internal/vmtest/arm64-unit.sh [go test flags...]
exec bash "$(dirname "$0")/qemu-user-unit.sh" arm64 "$@"
