package maps

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// TestKernelRingBufDifferential drives a kernel ring buffer with a tiny XDP
// program (bpf_ringbuf_output of N bytes, N read from the test frame) through
// BPF_PROG_TEST_RUN, reads it with cilium/ebpf's ring buffer reader, and does
// the same to xnic's RingBuf: every output must succeed or fail (-EAGAIN)
// alike, every read return a record of the same length or nothing, and the
// unread byte count match, across many wraps of the ring.
func TestKernelRingBufDifferential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("differential test against a kernel ring buffer needs root (CAP_BPF); skipped")
	}
	_ = rlimit.RemoveMemlock()
	const size = 8192
	krb, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xnic_rb", Type: ebpf.RingBuf, MaxEntries: size})
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("kernel refuses BPF map creation (%v); skipped", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer krb.Close()
	src, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xnic_src", Type: ebpf.Array, KeySize: 4, ValueSize: 4096, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // xdp_md.data
			asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // xdp_md.data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 4),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R7, asm.R2, 0, asm.Word), // record size from the frame
			asm.JGT.Imm(asm.R7, 4096, "out"),
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, src.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.LoadMapPtr(asm.R1, krb.FD()),
			asm.Mov.Reg(asm.R3, asm.R7),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnRingbufOutput.Call(),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 99).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Skipf("kernel refuses the test program (%v); skipped", err)
	}
	defer prog.Close()
	// A second program reserves 200 bytes and discards them: discarded
	// records take space until the consumer passes them, then vanish.
	discard, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMapPtr(asm.R1, krb.FD()),
			asm.Mov.Imm(asm.R2, 200),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JNE.Imm(asm.R0, 0, "got"),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return(),
			asm.Mov.Reg(asm.R1, asm.R0).WithSymbol("got"),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		t.Skipf("kernel refuses the test program (%v); skipped", err)
	}
	defer discard.Close()
	rd, err := ringbuf.NewReader(krb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ours := newRing(t, size)

	frame := make([]byte, 64)
	buf := make([]byte, 4096)
	r := rand.New(rand.NewPCG(3, 4))
	sizes := []uint32{0, 1, 7, 8, 9, 100, 1000, 2040, 3000, 4088, 4096}
	outputs, fails := 0, 0
	for i := range 5000 {
		if r.IntN(6) == 0 {
			ret, err := discard.Run(&ebpf.RunOptions{Data: frame})
			if err != nil {
				t.Fatalf("op %d: test run: %v", i, err)
			}
			_, off, ok := ours.Reserve(200, 0)
			if ok {
				_ = ours.Discard(off, 0)
			}
			if (ret == 0) != ok {
				t.Fatalf("op %d: reserve+discard: kernel %d, xnic reserved %v", i, ret, ok)
			}
		} else if r.IntN(2) == 0 {
			n := sizes[r.IntN(len(sizes))]
			binary.LittleEndian.PutUint32(frame, n)
			ret, err := prog.Run(&ebpf.RunOptions{Data: frame})
			if err != nil {
				t.Fatalf("op %d: test run: %v", i, err)
			}
			oerr := ours.Output(make([]byte, n), 0)
			kok := ret == 0
			if kok != (oerr == nil) || (!kok && int32(ret) != -int32(syscall.EAGAIN)) {
				t.Fatalf("op %d: output of %d bytes: kernel returned %d, xnic %v", i, n, int32(ret), oerr)
			}
			outputs++
			if !kok {
				fails++
			}
		} else {
			rd.SetDeadline(time.Now())
			rec, kerr := rd.Read()
			n, oerr := ours.Read(buf)
			switch {
			case errors.Is(kerr, os.ErrDeadlineExceeded):
				if !errors.Is(oerr, ErrNoRecord) {
					t.Fatalf("op %d: kernel ring empty, xnic read %d bytes (%v)", i, n, oerr)
				}
			case kerr != nil:
				t.Fatalf("op %d: kernel read: %v", i, kerr)
			case oerr != nil || n != len(rec.RawSample):
				t.Fatalf("op %d: kernel record of %d bytes, xnic %d (%v)", i, len(rec.RawSample), n, oerr)
			}
		}
		if k, o := rd.AvailableBytes(), int(ours.Query(RingbufAvailData)); k != o {
			t.Fatalf("op %d: unread bytes: kernel %d, xnic %d", i, k, o)
		}
	}
	if fails == 0 || fails == outputs {
		t.Fatalf("%d of %d outputs failed: the sequence never (or always) filled the ring", fails, outputs)
	}
}
