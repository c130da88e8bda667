//go:build !(linux && (amd64 || arm64))

package bpf

// pcpuInsertArch: the JIT inserts keys into per-CPU hash maps natively
// (amd64 and arm64: none here).
const pcpuInsertArch = false

// evictArch: the JIT evicts from a full LRU hash map natively (amd64 and
// arm64: none here).
const evictArch = false

// longKeyWriteArch: the JIT inserts, replaces and deletes hash keys of 17
// to maps.NativeKeyMax bytes natively (amd64 and arm64: none here).
const longKeyWriteArch = false
