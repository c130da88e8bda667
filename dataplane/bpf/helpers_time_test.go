package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
	"golang.org/x/sys/unix"
)

// clockSpec stores bpf_ktime_get_ns, _boot_ns, _coarse_ns and _tai_ns, in
// that order, as u64s at the start of the frame.
func clockSpec() *ebpf.CollectionSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 32),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
	}
	for i, fn := range []asm.BuiltinFunc{asm.FnKtimeGetNs, asm.FnKtimeGetBootNs, asm.FnKtimeGetCoarseNs, asm.FnKtimeGetTaiNs} {
		insns = append(insns, fn.Call(), asm.StoreMem(asm.R7, int16(8*i), asm.R0, asm.DWord))
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"clocks": {Name: "clocks", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

var clockIDs = [4]int32{unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME, unix.CLOCK_MONOTONIC_COARSE, unix.CLOCK_TAI}
var clockNames = [4]string{"ktime_get_ns", "ktime_get_boot_ns", "ktime_get_coarse_ns", "ktime_get_tai_ns"}

func readClocks(t *testing.T) (v [4]uint64) {
	for i, id := range clockIDs {
		var ts unix.Timespec
		if err := unix.ClockGettime(id, &ts); err != nil {
			t.Fatal(err)
		}
		v[i] = uint64(ts.Nano())
	}
	return v
}

// clockSlack widens [lo, hi] by ktimeErrBound for ktime_get_ns and
// _coarse_ns (clocks 0 and 2), which may come from the CPU counter's line
// (ktime_counter.go), within that bound of clock_gettime.
func clockSlack(i int, lo, hi uint64) (uint64, uint64) {
	if i != 0 && i != 2 {
		return lo, hi
	}
	return lo - uint64(ktimeErrBound), hi + uint64(ktimeErrBound)
}

func frameClocks(b []byte) (v [4]uint64) {
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return v
}

// TestClocksMatchUserSpace: xnic's time helpers read the clocks user space
// reads with clock_gettime (the coarse one may be up to a tick ahead of
// CLOCK_MONOTONIC_COARSE, never behind).
func TestClocksMatchUserSpace(t *testing.T) {
	c, err := LoadCollectionSpec(clockSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("clocks")
	r := NewRunner(0)
	for range 100 {
		before := readClocks(t)
		f := newFrame(make([]byte, 64))
		if got := r.Run(p, f); got != ActionPass {
			t.Fatalf("clocks: %v (%v)", got, r.Fault())
		}
		x := frameClocks(f.Buf[f.Data:])
		after := readClocks(t)
		for i := range x {
			lo, hi := before[i], after[i]
			if i == 2 {
				hi = after[0] // coarse: the precise monotonic time
			}
			lo, hi = clockSlack(i, lo, hi)
			if x[i] < lo || x[i] > hi {
				t.Fatalf("%s = %d, outside [%d, %d] read by user space", clockNames[i], x[i], before[i], hi)
			}
		}
	}
}

// TestClocksMatchKernel runs the same program in the kernel just before
// xnic: both read the same clocks, so kernel <= xnic and both sit between
// user-space readings around them.
func TestClocksMatchKernel(t *testing.T) {
	needKernel(t)
	k, err := kernelxdp.LoadSpec(clockSpec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	c, err := LoadCollectionSpec(clockSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("clocks")
	r := NewRunner(0)
	for range 50 {
		before := readClocks(t)
		kr, err := k.Run("clocks", kernelxdp.Input{Frame: make([]byte, 64)})
		if err != nil {
			t.Fatal(err)
		}
		f := newFrame(make([]byte, 64))
		r.Run(p, f)
		after := readClocks(t)
		kv, xv := frameClocks(kr.Frame), frameClocks(f.Buf[f.Data:])
		for i := range kv {
			hi := after[i]
			if i == 2 {
				hi = after[0]
			}
			if kv[i] < before[i] || kv[i] > after[i] {
				t.Fatalf("kernel %s = %d outside [%d, %d]", clockNames[i], kv[i], before[i], after[i])
			}
			lo := kv[i]
			lo, hi = clockSlack(i, lo, hi)
			if xv[i] < lo || xv[i] > hi {
				t.Fatalf("xnic %s = %d, kernel read %d just before; user space %d after", clockNames[i], xv[i], kv[i], hi)
			}
		}
	}
}
