//go:build mips || mips64 || ppc64 || s390x

package nic

// HostBigEndian: this host stores a uint32 most significant byte first, so an
// atomic 32-bit access to a little-endian descriptor word swaps bytes.
const HostBigEndian = true
