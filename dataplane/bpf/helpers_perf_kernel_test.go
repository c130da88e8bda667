package bpf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/perf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
	"golang.org/x/sys/unix"
)

// perfSpec calls bpf_perf_event_output(ctx, &events, flags, buf, meta), buf
// a stack copy of data[8:112],
// with the u64 flags at data[0:8] and stores the return value at
// data[120:128]; frames shorter than 128 bytes pass untouched.
func perfSpec(meta int32, cpus uint32) *ebpf.CollectionSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 128),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
	}
	// The helper takes no packet pointers: the data goes through the stack.
	for i := int16(0); i < 104; i += 8 {
		insns = append(insns, asm.LoadMem(asm.R3, asm.R7, 8+i, asm.DWord), asm.StoreMem(asm.R10, -104+i, asm.R3, asm.DWord))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, 0).WithReference("events"),
		asm.LoadMem(asm.R3, asm.R7, 0, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.R10),
		asm.Add.Imm(asm.R4, -104),
		asm.Mov.Imm(asm.R5, meta),
		asm.FnPerfEventOutput.Call(),
		asm.StoreMem(asm.R7, 120, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	)
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"events": {Name: "events", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: cpus},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"perf": {Name: "perf", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
		},
	}
}

// onCPU0 runs f on a thread pinned to CPU 0 (perf events are per CPU: the
// kernel refuses output to another CPU's slot).
func onCPU0(t *testing.T, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Errorf("pin to CPU 0: %v", err)
			return
		}
		f()
	}()
	<-done
}

type perfRec struct {
	raw  string
	lost uint64
}

func TestPerfEventOutputMatchesKernel(t *testing.T) {
	needKernel(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	all := map[int64]int{}
	var allLost uint64
	for _, meta := range []int32{0, 4, 13, 16, 100} {
		t.Run(fmt.Sprintf("meta%d", meta), func(t *testing.T) {
			spec := perfSpec(meta, uint32(cpus))
			k, err := kernelxdp.LoadSpec(spec.Copy(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			km, _ := k.Map("events")
			kr, err := perf.NewReader(km, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer kr.Close()
			c, err := LoadCollectionSpec(spec.Copy(), &Options{NumCPU: cpus})
			if err != nil {
				t.Fatal(err)
			}
			xm, _ := c.Map("events")
			xr, err := maps.NewPerfReader(xm.(*maps.PerfEventArray), 4096)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := c.Program("perf")
			r := NewRunner(0)
			rets := map[int64]int{}
			onCPU0(t, func() {
				for i := range 150 {
					fr := make([]byte, 128+rng.IntN(200))
					for j := range fr {
						fr[j] = byte(rng.Uint32())
					}
					idx := []uint64{maps.PerfCurrentCPU, maps.PerfCurrentCPU, 0, 1, 5}[rng.IntN(5)]
					ctxLen := []uint64{0, 0, 1, 14, uint64(len(fr)), uint64(len(fr) + 1)}[rng.IntN(6)]
					flags := idx | ctxLen<<32
					if rng.IntN(20) == 0 {
						flags |= 1 << 60
					}
					binary.LittleEndian.PutUint64(fr, flags)
					res, err := k.Run("perf", kernelxdp.Input{Frame: fr})
					if err != nil {
						t.Errorf("kernel run: %v", err)
						return
					}
					f := newFrame(fr)
					r.Run(p, f)
					kret := int64(binary.LittleEndian.Uint64(res.Frame[120:]))
					xret := int64(binary.LittleEndian.Uint64(f.Buf[f.Data+120:]))
					rets[kret]++
					if kret != xret {
						t.Errorf("frame %d flags %#x len %d: kernel %d, xnic %d", i, flags, len(fr), kret, xret)
						return
					}
				}
			})
			var want, got []perfRec
			for {
				kr.SetDeadline(time.Now())
				rec, err := kr.Read()
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, perfRec{string(rec.RawSample), rec.LostSamples})
			}
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				rec, err := xr.Read(ctx)
				cancel()
				if err != nil {
					break
				}
				got = append(got, perfRec{string(rec.RawSample), rec.LostSamples})
			}
			if len(got) != len(want) {
				t.Fatalf("%d records from xnic, %d from the kernel (returns %v)", len(got), len(want), rets)
			}
			lost := uint64(0)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("record %d: xnic %x lost %d, kernel %x lost %d", i, got[i].raw, got[i].lost, want[i].raw, want[i].lost)
				}
				lost += want[i].lost
			}
			t.Logf("returns %v, %d records, %d lost", rets, len(want), lost)
			for k, v := range rets {
				all[k] += v
			}
			allLost += lost
		})
	}
	for _, e := range []int64{0, -int64(unix.ENOSPC), -int64(unix.E2BIG), -int64(unix.EOPNOTSUPP), -int64(unix.EFAULT), -int64(unix.EINVAL)} {
		if all[e] == 0 {
			t.Errorf("no output returned %d (returns %v)", e, all)
		}
	}
	if allLost == 0 {
		t.Error("no loss record: the inputs never overflowed a ring and then fitted a sample")
	}
}
