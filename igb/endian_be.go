//go:build mips || mips64 || ppc64 || s390x

package igb

// hostBigEndian: this host stores a uint32 most significant byte first; the
// atomic descriptor loads swap bytes back into little-endian order.
const hostBigEndian = true
