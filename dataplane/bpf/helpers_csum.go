package bpf

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// bpf_csum_diff, as net/core/filter.c computes it. Two versions exist:
//
//   - Linux 6.13 and later ("bpf: bpf_csum_diff: optimize and homogenize for
//     all archs"): csum_partial of to (seeded) and of from are computed
//     separately, combined with csum_sub and folded to 16 bits with
//     csum_from32to16 (include/net/checksum.h); from alone gives
//     ~csum_partial(from, ~seed) folded, and neither gives the seed folded.
//     Every architecture returns the same u16; no limit on the sizes but
//     the memory's (measured on 6.18 against BPF_PROG_TEST_RUN).
//   - Before 6.13: the words of from, inverted, then the words of to are
//     copied to a per-CPU scratch buffer and the result is the unfolded
//     32-bit csum_partial of that buffer, seeded; more than 512 bytes in all
//     is -EINVAL.
//
// Both need sizes that are multiples of 4 (else -EINVAL). xnic follows the
// kernel it runs on (uname), the current behaviour when the release cannot
// be read. The 32-bit values are those of x86-64's csum_partial
// (arch/x86/lib/csum-partial_64.c: 64-bit adds with carry, the ILP loop for
// 64 bytes and more, a fold to 32 bits at the end), whose exact value
// (0 against 0xffffffff, for one) a program that folds the result itself
// sees.

// csumDiffFolded selects the 6.13+ semantics; set from the running kernel.
var csumDiffFolded = kernelAtLeast(6, 13)

// kernelAtLeast reports whether the running kernel's release is major.minor
// or later; true when the release cannot be read (not Linux, odd string).
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return true
	}
	maj, min, ok := parseRelease(unix.ByteSliceToString(u.Release[:]))
	if !ok {
		return true
	}
	return maj > major || maj == major && min >= minor
}

// parseRelease reads "6.18.44-foo" as 6, 18.
func parseRelease(s string) (major, minor int, ok bool) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	end := 0
	for end < len(parts[1]) && parts[1][end] >= '0' && parts[1][end] <= '9' {
		end++
	}
	minor, err2 := strconv.Atoi(parts[1][:end])
	return major, minor, err1 == nil && err2 == nil
}

// csumPartial is x86-64's csum_partial of b seeded with sum, for any length.
func csumPartial(b []byte, sum uint32) uint32 {
	t := uint64(sum)
	if len(b) == 40 {
		return csumFinalize(addWords(t, b))
	}
	if len(b) >= 64 {
		var accum, carries, c uint64
		for len(b) >= 64 {
			t, c = addChain(t, b[:32])
			carries += c
			accum, c = addChain(accum, b[32:64])
			carries += c
			b = b[64:]
		}
		t, c = bits.Add64(t, accum, 0)
		t, c = bits.Add64(t, carries, c)
		t += c
	}
	for _, n := range [...]int{32, 16, 8} {
		if len(b) >= n {
			t = addWords(t, b[:n])
			b = b[n:]
		}
	}
	if len(b) > 0 {
		var tail [8]byte
		copy(tail[:], b)
		t, c := bits.Add64(t, binary.LittleEndian.Uint64(tail[:]), 0)
		t += c
		return csumFinalize(t)
	}
	return csumFinalize(t)
}

// addChain adds the 8-byte words of b to t in one add-with-carry chain and
// returns the sum and the chain's last carry (not added back).
func addChain(t uint64, b []byte) (uint64, uint64) {
	var c uint64
	for i := 0; i < len(b); i += 8 {
		t, c = bits.Add64(t, binary.LittleEndian.Uint64(b[i:]), c)
	}
	return t, c
}

// addWords is addChain with the last carry added back ("adcq $0").
func addWords(t uint64, b []byte) uint64 {
	t, c := addChain(t, b)
	return t + c
}

// csumFinalize folds 64 bits to 32 with the end-around carry.
func csumFinalize(t uint64) uint32 {
	return uint32((t + bits.RotateLeft64(t, -32)) >> 32)
}

// csumAdd is csum_add: 32-bit ones' complement addition.
func csumAdd(a, b uint32) uint32 {
	r := a + b
	if r < b {
		r++
	}
	return r
}

// csumFrom32to16 folds 32 bits to 16 with the end-around carry.
func csumFrom32to16(s uint32) uint16 {
	s += bits.RotateLeft32(s, 16)
	return uint16(s >> 16)
}

// csumDiffValue is bpf_csum_diff's result for from, to (multiples of 4
// bytes, at most csumDiffMax together for the old semantics) and seed.
func csumDiffValue(from, to []byte, seed uint32, scratch *[csumDiffMax]byte) uint64 {
	if !csumDiffFolded {
		n := copy(scratch[:], from)
		for i := 0; i < n; i++ {
			scratch[i] = ^scratch[i]
		}
		n += copy(scratch[n:], to)
		return uint64(csumPartial(scratch[:n], seed))
	}
	switch {
	case len(from) > 0 && len(to) > 0:
		return uint64(csumFrom32to16(csumAdd(csumPartial(to, seed), ^csumPartial(from, 0))))
	case len(to) > 0:
		return uint64(csumFrom32to16(csumPartial(to, seed)))
	case len(from) > 0:
		return uint64(csumFrom32to16(^csumPartial(from, ^seed)))
	}
	return uint64(csumFrom32to16(seed))
}

// csumDiff is the bpf_csum_diff helper: sizes that are not multiples of 4
// (or, before 6.13, more than 512 bytes together) give -EINVAL; memory the
// program cannot read faults, as the kernel's verifier refuses it.
func (r *Runner) csumDiff(p *Program, pc int, reg *[16]uint64) uint64 {
	fromSize, toSize := reg[2]&0xffffffff, reg[4]&0xffffffff
	if (fromSize|toSize)&3 != 0 {
		return errno(syscall.EINVAL)
	}
	if !csumDiffFolded && fromSize+toSize > csumDiffMax {
		return errno(syscall.EINVAL)
	}
	var from, to []byte
	if fromSize > 0 {
		if from = loadSlice(r.regions, reg[1], fromSize); from == nil {
			return r.argFault(p, pc, argMem)
		}
	}
	if toSize > 0 {
		if to = loadSlice(r.regions, reg[3], toSize); to == nil {
			return r.argFault(p, pc, argMem)
		}
	}
	var scratch [csumDiffMax]byte // stays on the stack: no allocation
	return csumDiffValue(from, to, uint32(reg[5]), &scratch)
}
