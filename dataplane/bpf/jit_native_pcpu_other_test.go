//go:build !(linux && amd64)

package bpf

// pcpuInsertArch: the JIT inserts keys into per-CPU hash maps natively
// (amd64 only).
const pcpuInsertArch = false

// evictArch: the JIT evicts from a full LRU hash map natively (amd64 only).
const evictArch = false
