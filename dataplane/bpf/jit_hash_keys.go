package bpf

// hashKeyMax is the longest hash key the shared native code takes (the
// arm64 lookup, the hash writes, maps of maps' descriptors: two key
// words); only amd64's lookup in a map known at compile time takes keys
// of up to maps.NativeKeyMax bytes (hashForKeys).
const hashKeyMax = 16
