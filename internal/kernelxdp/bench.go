package kernelxdp

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Bench runs p repeat times on frame with BPF_PROG_TEST_RUN and returns the
// kernel's own measure of the time per run (the syscall's duration field:
// the time of the whole repeat loop, program and loop overhead included,
// divided by repeat in whole nanoseconds) and the verdict of the last run.
// Each run sees the frame as the previous run left it, as in the kernel.
func Bench(p *ebpf.Program, frame []byte, repeat int) (time.Duration, uint32, error) {
	if repeat < 1 {
		return 0, 0, fmt.Errorf("kernelxdp: bench repeat %d: want at least 1", repeat)
	}
	ret, per, err := p.Benchmark(frame, repeat, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("kernelxdp: BPF_PROG_TEST_RUN x%d of %v: %w", repeat, p, err)
	}
	return per, ret, nil
}

// BenchInput is Bench with the whole input of a run: the context's
// ingress_ifindex and rx_queue_index and the metadata (Bench gives the
// kernel's defaults: loopback, queue 0). An ifindex is resolved in the
// calling thread's network namespace (run it through Netns.Do for a
// Netns's devices). It returns the kernel's time per run (whole
// nanoseconds, as Bench) and what the last run left: its verdict, the frame
// and the metadata after repeat runs, each on what the one before left.
func BenchInput(p *ebpf.Program, in Input, repeat int) (time.Duration, Result, error) {
	if repeat < 1 || int64(repeat) > 1<<32-1 {
		return 0, Result{}, fmt.Errorf("kernelxdp: bench repeat %d: want 1..2^32-1", repeat)
	}
	data, ctxIn := in.testData()
	out := make([]byte, len(data)+outSlack)
	var ctxOut xdpMD
	verdict, n, per, err := testRun(p, data, out, &ctxIn, &ctxOut, uint32(repeat))
	if err != nil {
		return 0, Result{}, fmt.Errorf("kernelxdp: BPF_PROG_TEST_RUN x%d of %v: %w", repeat, p, err)
	}
	res, err := testResult(verdict, out[:n], ctxOut)
	return time.Duration(per), res, err
}

// LiveStats is the outcome of a live-frames run.
type LiveStats struct {
	// Frames is how many frames the kernel ran the program on.
	Frames int
	// Elapsed is the wall time of the BPF_PROG_TEST_RUN call.
	Elapsed time.Duration
	// CPU is the CPU time the calling thread used in that call (what the
	// kernel did on its behalf, without the time other processes took).
	CPU time.Duration
	// PeerReceived is how many frames the XDP program on the veth peer
	// saw: the frames an XDP_TX (or a redirect to the veth) delivered.
	PeerReceived uint64
}

// NsPerFrame is the wall time per frame.
func (s LiveStats) NsPerFrame() float64 {
	if s.Frames == 0 {
		return 0
	}
	return float64(s.Elapsed.Nanoseconds()) / float64(s.Frames)
}

// CPUNsPerFrame is the calling thread's CPU time per frame.
func (s LiveStats) CPUNsPerFrame() float64 {
	if s.Frames == 0 {
		return 0
	}
	return float64(s.CPU.Nanoseconds()) / float64(s.Frames)
}

// LiveBench loads the object at objPath, runs its program prog on n copies of
// frame through the kernel's real XDP path (BPF_PROG_TEST_RUN with
// BPF_F_TEST_XDP_LIVE_FRAMES, on one veth of a pair in a private network
// namespace) and returns the wall time per frame in nanoseconds. It suits
// programs that need no map set up (XDP_DROP, XDP_TX); for a devmap redirect
// use LiveRunWith and fill the map in LiveOptions.Prepare.
func LiveBench(objPath, prog string, frame []byte, n int) (float64, error) {
	obj, err := Load(objPath, nil)
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	p, err := obj.Program(prog)
	if err != nil {
		return 0, err
	}
	st, err := LiveRun(p, frame, n)
	if err != nil {
		return 0, err
	}
	return st.NsPerFrame(), nil
}

// peerSettle bounds the wait for the peer's NAPI to drain after a live run.
const peerSettle = time.Second

// LiveOptions adjust a live run.
type LiveOptions struct {
	// Prepare, when set, is called inside the namespace after the veth pair
	// is up and before the run, with the ifindex of the device the frames
	// arrive on and of its peer: the place to fill a devmap (the kernel
	// resolves ifindexes in the calling thread's namespace, so it must
	// happen here), e.g. tx_port[0] = dev to redirect out of the veth.
	Prepare func(dev, peer int) error
}

// LiveRun runs p on n copies of frame with BPF_F_TEST_XDP_LIVE_FRAMES, as
// received on NetnsDev of a fresh Netns (ip(8) must be installed); a
// counting XDP_DROP program on NetnsPeer receives what p transmits (XDP_TX,
// or a redirect to NetnsDev). Everything is removed before it returns.
func LiveRun(p *ebpf.Program, frame []byte, n int) (LiveStats, error) {
	return LiveRunWith(p, frame, n, LiveOptions{})
}

// LiveRunWith is LiveRun with options.
func LiveRunWith(p *ebpf.Program, frame []byte, n int, opts LiveOptions) (LiveStats, error) {
	if err := Available(); err != nil {
		return LiveStats{}, err
	}
	if n < 1 || int64(n) > 1<<31 {
		return LiveStats{}, fmt.Errorf("kernelxdp: live run of %d frames: want 1..2^31", n)
	}
	if len(frame) < 14 {
		return LiveStats{}, fmt.Errorf("kernelxdp: live run: frame of %d bytes is shorter than an Ethernet header", len(frame))
	}
	ns, err := OpenNetns(1)
	if err != nil {
		return LiveStats{}, err
	}
	defer ns.Close()

	counter, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return LiveStats{}, fmt.Errorf("kernelxdp: peer counter map: %w", err)
	}
	defer counter.Close()
	peerProg, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, counter.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // XDP_DROP
			asm.Return(),
		},
	})
	if err != nil {
		return LiveStats{}, fmt.Errorf("kernelxdp: peer XDP program: %w", err)
	}
	defer peerProg.Close()

	var st LiveStats
	err = ns.Do(func() error {
		var err error
		st, err = liveInNetns(ns, p, peerProg, frame, n, opts)
		return err
	})
	if err != nil {
		return LiveStats{}, err
	}
	// The peer's NAPI may still be draining: wait until its count holds
	// still between two reads.
	deadline := time.Now().Add(peerSettle)
	last := ^uint64(0)
	for {
		got, err := sumCounter(counter)
		if err != nil {
			return LiveStats{}, err
		}
		if got == last || time.Now().After(deadline) {
			st.PeerReceived = got
			break
		}
		last = got
		time.Sleep(20 * time.Millisecond)
	}
	return st, nil
}

// liveInNetns is the namespace-bound part, run by ns.Do: it attaches peer
// to the peer veth and runs p in live mode on the other.
func liveInNetns(ns *Netns, p, peer *ebpf.Program, frame []byte, n int, opts LiveOptions) (LiveStats, error) {
	l, err := link.AttachXDP(link.XDPOptions{Program: peer, Interface: ns.PeerIndex, Flags: link.XDPDriverMode})
	if err != nil {
		return LiveStats{}, fmt.Errorf("kernelxdp: attaching the peer program to %s: %w", NetnsPeer, err)
	}
	defer l.Close()
	if opts.Prepare != nil {
		if err := opts.Prepare(ns.DevIndex, ns.PeerIndex); err != nil {
			return LiveStats{}, fmt.Errorf("kernelxdp: preparing the live run: %w", err)
		}
	}

	ctx := xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ns.DevIndex)}
	ro := ebpf.RunOptions{
		Data:      frame,
		Context:   ctx,
		Repeat:    uint32(n),
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: 64,
	}
	start, cpu := time.Now(), ThreadCPU() // ns.Do runs this on a locked thread
	if _, err := p.Run(&ro); err != nil {
		return LiveStats{}, fmt.Errorf("kernelxdp: live-frames run of %v on %s: %w", p, NetnsDev, err)
	}
	return LiveStats{Frames: n, Elapsed: time.Since(start), CPU: ThreadCPU() - cpu}, nil
}

func sumCounter(m *ebpf.Map) (uint64, error) {
	var vals []uint64
	if err := m.Lookup(uint32(0), &vals); err != nil {
		return 0, fmt.Errorf("kernelxdp: reading the peer counter: %w", err)
	}
	var sum uint64
	for _, v := range vals {
		sum += v
	}
	return sum, nil
}
