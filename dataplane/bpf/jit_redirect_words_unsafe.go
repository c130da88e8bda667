package bpf

import "unsafe"

// words is the record rd as two 64-bit words, so that fillRedirects
// compares two records with two loads instead of one per field. A record
// is 8-byte aligned where it is read (jitState.rds follows a uint64 and
// each is 16 bytes: TestJITRedirectLayout) and native code writes its
// padding word never, Go only when it clears it, so equal words are equal
// records.
func (rd *jitRedirect) words() (uint64, uint64) {
	w := (*[2]uint64)(unsafe.Pointer(rd))
	return w[0], w[1]
}
