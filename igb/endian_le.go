//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package igb

// hostBigEndian: this host stores a uint32 least significant byte first, the
// descriptors' own order. A GOARCH in neither this file's list nor
// endian_be.go's does not build (hostBigEndian undefined): add it to the right
// list after checking its byte order.
const hostBigEndian = false
