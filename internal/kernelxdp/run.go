package kernelxdp

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// xdpMD is struct xdp_md (include/uapi/linux/bpf.h) as BPF_PROG_TEST_RUN
// takes it in ctx_in and returns it in ctx_out. For the test run, data is the
// length of the metadata at the start of the data buffer, data_meta must be
// 0 and data_end is the length of the whole buffer (metadata included).
type xdpMD struct {
	Data           uint32
	DataEnd        uint32
	DataMeta       uint32
	IngressIfindex uint32
	RxQueueIndex   uint32
	EgressIfindex  uint32
}

// outSlack is how much more room than the input the output buffer gets: the
// most a program can grow a frame (adjust_head pushes at most 216 bytes,
// adjust_tail grows to the end of a 4 KiB page).
const outSlack = 4096 + 256

// Input is one run's input.
type Input struct {
	// Frame is the packet, Ethernet header first; at least 14 bytes.
	Frame []byte
	// Meta is metadata placed in front of the frame (data_meta..data), as
	// if a previous program had called bpf_xdp_adjust_meta; usually empty.
	// The kernel wants a multiple of 4 bytes.
	Meta []byte
	// IngressIfindex is the receiving device; 0 means the kernel's default
	// (the program sees the loopback device, ifindex 1).
	IngressIfindex uint32
	// RxQueueIndex is the receive queue; it must exist on IngressIfindex.
	RxQueueIndex uint32
}

// Result is what one run produced.
type Result struct {
	// Verdict is the program's return value (XDP_ABORTED 0 .. XDP_REDIRECT 4).
	Verdict uint32
	// Meta is the metadata in front of the frame after the run (the kernel
	// returns the output starting at data_meta).
	Meta []byte
	// Frame is the packet after the run (data..data_end).
	Frame []byte
}

// Run runs p once, with BPF_PROG_TEST_RUN, on in. The error is the kernel's
// (wrapped): EINVAL for a frame shorter than 14 bytes or a bad context,
// ENODEV for an unknown ifindex.
func Run(p *ebpf.Program, in Input) (Result, error) {
	data, ctxIn := in.testData()
	var ctxOut xdpMD
	opts := ebpf.RunOptions{
		Data:       data,
		DataOut:    make([]byte, len(data)+outSlack),
		Context:    ctxIn,
		ContextOut: &ctxOut,
		Repeat:     1,
	}
	ret, err := p.Run(&opts)
	if err != nil {
		return Result{}, fmt.Errorf("kernelxdp: BPF_PROG_TEST_RUN of %v: %w", p, err)
	}
	return testResult(ret, opts.DataOut, ctxOut)
}

// testData is in as BPF_PROG_TEST_RUN takes it: the metadata and the frame
// in one buffer, and the context.
func (in Input) testData() ([]byte, xdpMD) {
	data := make([]byte, 0, len(in.Meta)+len(in.Frame))
	data = append(data, in.Meta...)
	data = append(data, in.Frame...)
	return data, xdpMD{
		Data:           uint32(len(in.Meta)),
		DataEnd:        uint32(len(data)),
		IngressIfindex: in.IngressIfindex,
		RxQueueIndex:   in.RxQueueIndex,
	}
}

// testResult splits the kernel's output (out, from data_meta) by its
// context.
func testResult(verdict uint32, out []byte, ctxOut xdpMD) (Result, error) {
	metaLen := int(ctxOut.Data)
	if metaLen > len(out) || int(ctxOut.DataEnd) != len(out) {
		return Result{}, fmt.Errorf("kernelxdp: the kernel returned %d bytes with context data=%d data_end=%d: inconsistent",
			len(out), ctxOut.Data, ctxOut.DataEnd)
	}
	return Result{
		Verdict: verdict,
		Meta:    out[:metaLen:metaLen],
		Frame:   out[metaLen:],
	}, nil
}
