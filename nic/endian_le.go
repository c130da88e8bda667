//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package nic

// HostBigEndian reports whether this host stores a uint32 most significant
// byte first. Here it does not: the order of every descriptor the drivers
// and models share with a device (little-endian), so their one-instruction
// atomic descriptor accesses need no swap. It is a constant, so the swap
// paths compile away. A GOARCH in neither this file's list nor
// endian_be.go's does not build (HostBigEndian undefined): add it to the
// right list after checking its byte order.
const HostBigEndian = false
