package bpf

// hashKeyMax is the longest hash key the shared native code takes (maps
// of maps' descriptors: two key words); the lookups and writes of both
// backends in a map known at compile time take keys of up to
// maps.NativeKeyMax bytes (hashForKeys, hashWriteKeyMax), arm64's keeping
// the words past the second in jitState.hs.
const hashKeyMax = 16
