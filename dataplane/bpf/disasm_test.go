package bpf

import (
	"encoding/hex"
	"testing"
)

// TestInsnText: each instruction class in LLVM's BPF syntax, the
// expected text as llvm-objdump 14 prints it (and, for the ISA v4
// operations LLVM 14 does not know, as LLVM 17 and later print them).
func TestInsnText(t *testing.T) {
	labels := map[int]string{41: "LBB0_15"}
	for hx, want := range map[string]string{
		"6112040000000000":                      "r2 = *(u32 *)(r1 + 4)",
		"633afcff00000000":                      "*(u32 *)(r10 - 4) = r3",
		"7a1af8ff2a000000":                      "*(u64 *)(r10 - 8) = 42",
		"2d23220000000000":                      "if r3 > r2 goto +34 <LBB0_15>",
		"05000000fbffffff":                      "goto +0",
		"0500fbff00000000":                      "goto -5",
		"1801000000000000" + "0000000000000000": "r1 = 0 ll",
		"18010000ffffffff" + "00000000ffffffff": "r1 = -1 ll",
		"8500000001000000":                      "call 1",
		"9500000000000000":                      "exit",
		"0714000001000000":                      "r4 += 1",
		"07020000fcffffff":                      "r2 += -4",
		"0c14000000000000":                      "w4 += w1",
		"b401000007000000":                      "w1 = 7",
		"bf13000000000000":                      "r3 = r1",
		"8701000000000000":                      "r1 = -r1",
		"c701000003000000":                      "r1 s>>= 3",
		"dc01000010000000":                      "r1 = be16 r1",
		"d401000020000000":                      "r1 = le32 r1",
		"1601020005000000":                      "if w1 == 5 goto +2",
		"db42000000000000":                      "lock *(u64 *)(r2 + 0) += r4",
		"db54000041000000":                      "r5 = atomic_fetch_or((u64 *)(r4 + 0), r5)",
		"db340000e1000000":                      "r3 = xchg_64(r4 + 0, r3)",
		"db540000f1000000":                      "r0 = cmpxchg_64(r4 + 0, r0, r5)",
		"c312000051000000":                      "w1 = atomic_fetch_and((u32 *)(r2 + 0), w1)",
		"c3120000f1000000":                      "w0 = cmpxchg32_32(r2 + 0, w0, w1)",
		"3000000002000000":                      "r0 = *(u8 *)skb[2]",
		"5012000003000000":                      "r0 = *(u8 *)skb[r1 + 3]",
		"3f12010000000000":                      "r2 s/= r1",
		"9701010007000000":                      "r1 s%= 7",
		"bf21080000000000":                      "r1 = (s8)r2",
		"bc21100000000000":                      "w1 = (s16)w2",
		"d701000020000000":                      "r1 = bswap32 r1",
		"0600000022000000":                      "gotol +34 <LBB0_15>",
		"8112020000000000":                      "r2 = *(s32 *)(r1 + 2)",
		"8d01000000000000":                      "callx r1",
		"a601000005000000":                      "if w1 < 5 goto +0",
		"1801000000000000":                      "r1 = <lddw without its second slot>",
		"ff00000000000000":                      "<unknown opcode 0xff>",
	} {
		b, _ := hex.DecodeString(hx)
		if got := InsnText(b, 6, labels); got != want {
			t.Errorf("%s: %q, want %q", hx, got, want)
		}
	}
}
