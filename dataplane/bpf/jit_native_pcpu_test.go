//go:build linux && (amd64 || arm64)

package bpf

// pcpuInsertArch: the JIT inserts keys into per-CPU hash maps natively
// (both backends).
const pcpuInsertArch = true

// evictArch: the JIT evicts from a full LRU hash map natively (both
// backends).
const evictArch = true

// longKeyWriteArch: the JIT inserts, replaces and deletes hash keys of 17
// to maps.NativeKeyMax bytes natively (both backends: hashWriteKeyMax).
const longKeyWriteArch = true
