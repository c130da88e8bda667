//go:build !linux || !(amd64 || arm64)

package bpf

// ktimeCounter: no counter line on this platform (ktime_counter.go): the
// time helpers read clock_gettime.
func ktimeCounter() (uint64, bool) { return 0, false }
