package bpf

import _ "unsafe" // go:linkname

// nanotime is the Go runtime's monotonic clock: on Linux it reads
// CLOCK_MONOTONIC through the vDSO, the clock bpf_ktime_get_ns reads in the
// kernel (ktime_get_mono_fast_ns). The runtime keeps this symbol available
// to linkname (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
