package bpf

// The per-frame work of a native burst (jitEnterBurst) that a program may
// not need. The full loop, before each frame, clears the tail call state,
// sets the budget, trims the regions a lookup added and moves the redirect
// slot (jitState.rdo), each only in case the run before changed it. The
// lean loop (jitEnterBurstLean, both backends) does the first three once
// per entry into native code instead, and moves no slot: it runs the programs whose
// native code writes none of that state, jitProg.burst == 0. The state
// then changes only in Go (a helper Go ran for a frame burstCall resumes,
// or a run before the burst), and every entry into the lean loop, resumed
// or not, sets it before its first fresh frame, so every frame starts from
// what the full loop gives it.
const (
	// burstTail: the program calls bpf_tail_call, whose native code counts
	// in Runner.tails and names its target in jitState.tail (tailCall,
	// jit_amd64_helpers.go, jit_arm64_tail.go). Its targets may do anything: the program also
	// gets every other bit.
	burstTail uint8 = 1 << iota
	// burstBudget: the native code charges Runner.budget, which only
	// backward jumps (charge), bpf-to-bpf calls (a backward one charges)
	// and bpf_loop's iterations (loopIteration) do; callx is counted too.
	burstBudget
	// burstRegions: the native code appends to the region table, which on
	// both backends only valueRegion's code does (a lookup whose region is elided
	// appends none): jitCounts.regions counts them.
	burstRegions
	// burstRedirect: the program calls bpf_redirect or bpf_redirect_map,
	// the only helpers whose native code writes a redirect record at
	// jitState.rdo (jit_*_redirect.go).
	burstRedirect

	burstAll = burstTail | burstBudget | burstRegions | burstRedirect
)

// burstWork is what of the burst loop's per-frame work the program plain
// may need (the burst* bits), regions being the number of value-region
// appends its backend emitted. It looks at the instruction stream, not at
// the code, so that a helper made native later is counted by what it is:
// a jump or call backwards (insn.back), local calls (which also move r10
// and jitState.depth), callx (which may name any helper) and the helpers
// named above.
func burstWork(plain []insn, regions int) uint8 {
	var w uint8
	if regions > 0 {
		w |= burstRegions
	}
	for _, in := range plain {
		if in.back != 0 { // decode's mark of a jump or call at or before pc
			w |= burstBudget
		}
		switch in.op {
		case opTailCall, opCallX: // bpf_tail_call (decode's op); callx may name any helper
			return burstAll
		case opCallLocal:
			w |= burstBudget
		case opCall:
			switch in.imm {
			case int64(helperLoop):
				w |= burstBudget
			case int64(helperRedirect), int64(helperRedirectMap):
				w |= burstRedirect
			}
		}
	}
	return w
}
