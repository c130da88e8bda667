package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestKeepsPacketRows: the range analysis keeps packet ranges across a
// call of every helper xnic runs except those that move data or data_end
// (the three the kernel's bpf_helper_changes_pkt_data names for XDP,
// net/core/filter.c) and those that run program code (callbacks, tail
// calls), after which it forgets everything.
func TestKeepsPacketRows(t *testing.T) {
	moves := map[asm.BuiltinFunc]bool{
		asm.FnXdpAdjustHead: true, asm.FnXdpAdjustMeta: true, asm.FnXdpAdjustTail: true,
		asm.FnLoop: true, asm.FnForEachMapElem: true, asm.FnTailCall: true,
	}
	for i := range helperRows {
		h := &helperRows[i]
		if h.why != "" {
			continue // refused
		}
		if want := !moves[h.id]; h.keepsPacket != want {
			t.Errorf("%v: keepsPacket %v, want %v", h.id, h.keepsPacket, want)
		}
	}
}

// TestJITRangesAcrossHelpers: a packet pointer in r6 proven before a
// call of bpf_csum_diff, bpf_fib_lookup or bpf_xdp_load_bytes stays
// proven after it (as in xdp_adjust_tail and xdp_fib_router), one proven
// too short is still checked, and both engines agree on every frame
// length around the bound.
func TestJITRangesAcrossHelpers(t *testing.T) {
	needJIT(t)
	calls := map[string]asm.Instructions{
		"csum_diff": {asm.Mov.Imm(asm.R1, 0), asm.Mov.Imm(asm.R2, 0), asm.Mov.Reg(asm.R3, asm.R6),
			asm.Mov.Imm(asm.R4, 4), asm.Mov.Imm(asm.R5, 0), asm.FnCsumDiff.Call()},
		"fib_lookup": {asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -64),
			asm.Mov.Imm(asm.R3, 64), asm.Mov.Imm(asm.R4, 0), asm.FnFibLookup.Call()},
		"xdp_load_bytes": {asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Imm(asm.R2, 0), asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8), asm.Mov.Imm(asm.R4, 8), asm.FnXdpLoadBytes.Call()},
	}
	for name, call := range calls {
		for _, n := range []int32{14, 13} {
			pre := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1)}
			for off := int16(-64); off < 0; off += 8 {
				pre = append(pre, asm.StoreMem(asm.RFP, off, asm.R0, asm.DWord))
			}
			insns := rangeProg(bound(n), pre, call, asm.Instructions{asm.Mov.Reg(asm.R2, asm.R6)},
				ld(asm.R5, asm.R2, 12, asm.Half))
			want := 1
			if n == 13 {
				want = 0
			}
			pi, pj := rangePair(t, insns, want) // jit_meta_test.go
			ri, rj := NewRunner(0), NewRunner(0)
			full := udpFrame(9)
			faults := 0
			for l := 0; l <= len(full); l++ {
				if !guardedDiff(t, ri, rj, pi, pj, full[:l], nil) {
					faults++
				}
			}
			if n == 13 && faults == 0 {
				t.Errorf("%s: no frame faults", name)
			}
		}
	}
}
