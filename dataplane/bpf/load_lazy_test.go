package bpf

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// lazySpec is an object with runnable programs next to ones xnic refuses: a
// helper xnic lacks (skb_store_bytes), a map type it cannot create (stack
// trace), a tail call into the first through a declared program array, and a
// tail call into that caller.
func lazySpec() *ebpf.CollectionSpec {
	ret := func(v int32) asm.Instructions {
		return asm.Instructions{asm.Mov.Imm(asm.R0, v), asm.Return()}
	}
	tail := func(m string) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R2, 0).WithReference(m),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnTailCall.Call(),
			asm.Mov.Imm(asm.R0, 2),
			asm.Return(),
		}
	}
	progs := map[string]*ebpf.ProgramSpec{
		"good": {Name: "good", SectionName: "xdp", Type: ebpf.XDP, Instructions: ret(1), License: "GPL"},
		"bad_helper": {Name: "bad_helper", SectionName: "xdp/bad", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R2, 0), asm.Mov.Imm(asm.R3, 0), asm.Mov.Imm(asm.R4, 0), asm.Mov.Imm(asm.R5, 0),
			asm.FnSkbStoreBytes.Call(), asm.Return(),
		}},
		"bad_map": {Name: "bad_map", SectionName: "xdp/map", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference("stacks"), asm.Mov.Imm(asm.R0, 2), asm.Return(),
		}},
		"caller":  {Name: "caller", SectionName: "xdp/caller", Type: ebpf.XDP, License: "GPL", Instructions: tail("jmp")},
		"caller2": {Name: "caller2", SectionName: "xdp/caller2", Type: ebpf.XDP, License: "GPL", Instructions: tail("jmp2")},
		"tc_prog": {Name: "tc_prog", SectionName: "tc", Type: ebpf.SchedCLS, Instructions: ret(0), License: "GPL"},
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"stacks": {Name: "stacks", Type: ebpf.StackTrace, KeySize: 4, ValueSize: 8, MaxEntries: 4},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 2,
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: "bad_helper"}}},
			"jmp2": {Name: "jmp2", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 2,
				Contents: []ebpf.MapKV{{Key: uint32(1), Value: "caller"}}},
		},
		Programs: progs,
	}
}

func TestLazyLoadRefusesOnlyWhatCannotRun(t *testing.T) {
	c, err := LoadCollectionSpec(lazySpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatalf("one program xnic cannot run stopped the object: %v", err)
	}
	defer c.Close()
	p, err := c.Program("good")
	if err != nil {
		t.Fatal(err)
	}
	if got := NewRunner(0).Run(p, newFrame(udpFrame(9))); got != ActionDrop {
		t.Errorf("good: %v, want XDP_DROP", got)
	}
	if q, err := c.ProgramBySection("xdp"); err != nil || q != p {
		t.Errorf("section xdp: %v, %v", q, err)
	}
	wantWhy := map[string]string{
		"bad_helper": "FnSkbStoreBytes",
		"bad_map":    "map stacks, which xnic cannot create",
		"caller":     "program array jmp holds program bad_helper",
		"caller2":    "program array jmp2 holds program caller",
		"tc_prog":    "is not XDP",
	}
	ref := c.Refused()
	if len(ref) != len(wantWhy) {
		t.Errorf("refused %v, want the %d of %v", ref, len(wantWhy), wantWhy)
	}
	for name, why := range wantWhy {
		if !strings.Contains(ref[name], why) {
			t.Errorf("refused[%s] = %q, want it to say %q", name, ref[name], why)
		}
		_, err := c.Program(name)
		if !errors.Is(err, ErrNoProgram) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Program(%s): %v, want ErrNoProgram saying refused and %q", name, err, why)
		}
	}
	if len(c.Programs()) != 1 {
		t.Errorf("loaded %d programs, want 1 (good)", len(c.Programs()))
	}
	for sec, why := range map[string]string{"xdp/bad": "FnSkbStoreBytes", "xdp/caller2": "jmp2", "tc": "not XDP"} {
		if _, err := c.ProgramBySection(sec); !errors.Is(err, ErrNoProgram) || !strings.Contains(err.Error(), why) {
			t.Errorf("section %s: %v, want the refusal saying %q", sec, err, why)
		}
	}
	// Five XDP programs in the object, four refused: no silent choice.
	if _, err := c.DefaultXDP(); err == nil || !strings.Contains(err.Error(), "bad_helper") {
		t.Errorf("DefaultXDP: %v, want an error naming the refused programs", err)
	}
	lines := c.RefusedList()
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "bad_helper (section xdp/bad): ") {
		t.Errorf("RefusedList: %q", lines)
	}
	// The program array slot of the refused program stays empty.
	if q, err := c.TailCall("jmp", 0); err != nil || q != nil {
		t.Errorf("jmp[0] = %v, %v; want empty", q, err)
	}
}

func TestLazyLoadOnlyRefusedXDP(t *testing.T) {
	s := lazySpec()
	delete(s.Programs, "good")
	c, err := LoadCollectionSpec(s, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.DefaultXDP()
	if !errors.Is(err, ErrNoProgram) || !strings.Contains(err.Error(), "no XDP program xnic can run") {
		t.Errorf("DefaultXDP: %v", err)
	}
}

func TestLazyLoadTailTargetRunnable(t *testing.T) {
	// With a runnable program in the slot, the caller loads and tail-calls.
	s := lazySpec()
	s.Maps["jmp"].Contents = []ebpf.MapKV{{Key: uint32(0), Value: "good"}}
	c, err := LoadCollectionSpec(s, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []string{"caller", "caller2"} {
		p, err := c.Program(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if n == "caller" {
			if got := NewRunner(0).Run(p, newFrame(udpFrame(9))); got != ActionDrop {
				t.Errorf("caller: %v, want XDP_DROP from good", got)
			}
		}
	}
}
