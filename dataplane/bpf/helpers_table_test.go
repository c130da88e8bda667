package bpf

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestHelperTable: the rows are in the kernel's order, named by
// cilium/ebpf, and each either runs (in Go or in the interpreter's loop)
// or says why xnic refuses it.
func TestHelperTable(t *testing.T) {
	last := asm.BuiltinFunc(0)
	for _, h := range helperRows {
		if h.id <= last {
			t.Errorf("%v after %v: rows out of order", h.id, last)
		}
		last = h.id
		if strings.HasPrefix(h.name(), "BuiltinFunc(") {
			t.Errorf("helper %d: unknown to cilium/ebpf", h.id)
		}
		if h.implemented() == (h.why != "") {
			t.Errorf("%v: implemented %v, refusal %q: want exactly one", h.id, h.implemented(), h.why)
		}
		if h.run != nil && h.inLoop {
			t.Errorf("%v: both a Go implementation and the interpreter's loop", h.id)
		}
		if hi := helperOf(int64(h.id)); hi == nil || hi.id != h.id {
			t.Errorf("%v: not indexed", h.id)
		}
	}
	if got := helperOf(int64(helperMapLookupElem)).signature(); got != "FnMapLookupElem(map, key)" {
		t.Errorf("lookup signature %q", got)
	}
	for _, id := range []int64{0, -1, maxKnownHelper + 1, 1 << 40} {
		if helperOf(id) != nil || helperImplemented(int32(id)) {
			t.Errorf("helper %d known", id)
		}
	}
	if !helperImplemented(helperTailCall) || helperImplemented(int32(asm.FnJiffies64)) {
		t.Error("tail call not implemented or jiffies64 implemented")
	}
}

// TestHelperTableArgs holds the table's signatures to the implementations:
// a helper whose first argument must be a map, the context, memory (with a
// valid size after it) or a ring buffer record faults with that argument's
// reason when r1 is 0.
func TestHelperTableArgs(t *testing.T) {
	checked := 0
	for _, h := range helperRows {
		if h.run == nil || len(h.args) == 0 {
			continue
		}
		switch h.args[0] {
		case argMap, argCtx, argMem, argRecord:
		default:
			continue
		}
		size := int32(0)
		if h.args[0] == argMem && len(h.args) > 1 && h.args[1] == argSize {
			size = 4 // a valid size for the memory argument
		}
		prog := asmProg(
			ins(oMov64K, 1, 0, 0, 0),    // r1 = 0
			ins(oMov64K, 2, 0, 0, size), // r2 = size
			ins(oMov64K, 3, 0, 0, 0),    // r3 = 0
			ins(oMov64K, 4, 0, 0, 0),    // r4 = 0
			ins(oMov64K, 5, 0, 0, 0),    // r5 = 0
			ins(0x85, 0, 0, 0, int32(h.id)),
			ins(oMov64K, 0, 0, 0, 2), // r0 = 2
			exitInsn)
		p, err := LoadRaw(h.name(), prog, &Options{Engine: EngineInterp})
		if err != nil {
			t.Errorf("%v: %v", h.id, err)
			continue
		}
		r := NewRunner(0)
		a := r.Run(p, newFrame(udpFrame(1)))
		want := helperArgReason(int64(h.args[0]))
		if err := r.Fault(); a != ActionAborted || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with r1 = 0: %v %v, want the fault %q", h.signature(), a, err, want)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d helpers checked", checked)
	}
}

// TestHelperTableRefusals: the loader refuses every helper the table
// refuses, with the table's reason.
func TestHelperTableRefusals(t *testing.T) {
	for _, h := range helperRows {
		if h.why == "" {
			continue
		}
		_, err := LoadRaw("refused", asmProg(ins(0x85, 0, 0, 0, int32(h.id)), exitInsn), nil)
		err = explainRefusal(err)
		if !errors.Is(err, ErrHelperNotAllowed) || !strings.Contains(err.Error(), h.why) || !strings.Contains(err.Error(), h.name()) {
			t.Errorf("%v: %v", h.id, err)
		}
	}
}
