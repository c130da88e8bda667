package bpf

// hashKeyMax is the longest hash key the shared native code takes (the
// hash writes, maps of maps' descriptors: two key words); the lookups of
// both backends in a map known at compile time take keys of up to
// maps.NativeKeyMax bytes (hashForKeys), arm64's keeping the words past
// the second in jitState.hs.
const hashKeyMax = 16
