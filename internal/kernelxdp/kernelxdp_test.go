package kernelxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

func needKernel(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: the kernel oracle needs root and bpf(): %v", err)
	}
}

func example(name string) string { return filepath.Join("..", "..", "examples", "xdp", name+".o") }

// udp4 builds an Ethernet/IPv4/UDP frame of total length n (n >= 42).
func udp4(n int, dport uint16) []byte {
	f := make([]byte, n)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 1234)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-34))
	return f
}

// metaProg grows 8 bytes of metadata, writes 0xAB into its first byte and
// returns XDP_PASS; r0 = XDP_ABORTED if adjust_meta fails.
func metaProg(t *testing.T) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, -8),
			asm.FnXdpAdjustMeta.Call(),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Imm(asm.R0, 0),
			asm.JNE.Imm(asm.R1, 0, "out"),
			asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // data_meta
			asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // data
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 8),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.StoreImm(asm.R2, 0, 0xAB, asm.Byte),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("loading the metadata program: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestRunMetadataOut(t *testing.T) {
	needKernel(t)
	p := metaProg(t)
	frame := udp4(64, 7)
	res, err := Run(p, Input{Frame: frame, IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 2 {
		t.Fatalf("verdict %d, want XDP_PASS (2)", res.Verdict)
	}
	if len(res.Meta) != 8 || res.Meta[0] != 0xAB {
		t.Fatalf("metadata %x, want 8 bytes starting with ab", res.Meta)
	}
	if !bytes.Equal(res.Frame, frame) {
		t.Fatalf("frame changed:\n got %x\nwant %x", res.Frame, frame)
	}

	// Metadata passed in is kept in front and grows by 8 more.
	res, err = Run(p, Input{Frame: frame, Meta: []byte{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xAB, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}; !bytes.Equal(res.Meta, want) {
		t.Fatalf("metadata %x, want %x", res.Meta, want)
	}
}

func TestRunRefusesShortFrame(t *testing.T) {
	needKernel(t)
	p := metaProg(t)
	_, err := Run(p, Input{Frame: make([]byte, 13)})
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("13-byte frame: err %v, want EINVAL", err)
	}
	_, err = Run(p, Input{Frame: make([]byte, 14), IngressIfindex: 1, RxQueueIndex: 1000})
	if err == nil {
		t.Fatal("queue 1000 on loopback: want an error")
	}
}

func TestAdjustTailExample(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_adjust_tail"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()

	small := udp4(342, 7) // a 300-byte ping is 342 bytes on the wire
	res, err := obj.Run("xdp_adjust_tail", Input{Frame: small, IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 2 || !bytes.Equal(res.Frame, small) {
		t.Fatalf("342-byte frame: verdict %d, len %d; want XDP_PASS unchanged", res.Verdict, len(res.Frame))
	}

	big := udp4(542, 7)
	res, err = obj.Run("xdp_adjust_tail", Input{Frame: big, IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 3 || len(res.Frame) != 126 {
		t.Fatalf("542-byte frame: verdict %d len %d, want XDP_TX and 126", res.Verdict, len(res.Frame))
	}
	out := res.Frame
	if !bytes.Equal(out[0:6], big[6:12]) || !bytes.Equal(out[6:12], big[0:6]) {
		t.Errorf("MACs not swapped: %x", out[:12])
	}
	if out[34] != 3 || out[35] != 4 || binary.BigEndian.Uint16(out[40:]) != 386 {
		t.Errorf("ICMP type/code/mtu %d/%d/%d, want 3/4/386", out[34], out[35], binary.BigEndian.Uint16(out[40:]))
	}
	if !bytes.Equal(out[26:30], big[30:34]) || !bytes.Equal(out[30:34], big[26:30]) {
		t.Errorf("IP addresses not swapped: %x", out[26:34])
	}
	if c := inetChecksum(out[14:34]); c != 0 {
		t.Errorf("IP header checksum does not verify (sum %#04x)", c)
	}
	if c := inetChecksum(out[34:]); c != 0 {
		t.Errorf("ICMP checksum does not verify (sum %#04x)", c)
	}
	if !bytes.Equal(out[42:], big[14:98]) {
		t.Errorf("quoted bytes differ from the original IP packet")
	}

	m, err := obj.Map("icmpcnt")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Dump(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || binary.LittleEndian.Uint64(entries[0].Values[0]) != 1 {
		t.Fatalf("icmpcnt = %+v, want one key with count 1", entries)
	}
}

// inetChecksum returns the one's-complement sum of b, complemented; 0 when a
// header with its checksum field verifies.
func inetChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestDumpPerCPU(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_drop_count"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	for range 5 {
		res, err := obj.Run("xdp_drop_count", Input{Frame: udp4(64, 9)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != 1 {
			t.Fatalf("verdict %d, want XDP_DROP", res.Verdict)
		}
	}
	m, _ := obj.Map("rxcnt")
	entries, err := Dump(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 256 {
		t.Fatalf("%d entries, want 256", len(entries))
	}
	var udp uint64
	for _, v := range entries[17].Values {
		udp += binary.LittleEndian.Uint64(v)
	}
	if binary.LittleEndian.Uint32(entries[17].Key) != 17 || udp != 5 {
		t.Fatalf("rxcnt[17] key %x sum %d, want 17 and 5", entries[17].Key, udp)
	}
	tx, _ := obj.Spec.Maps["rxcnt"]
	if tx == nil {
		t.Fatal("spec lost its map")
	}
	dm, err := Load(example("xdp_redirect_map"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	devmap, _ := dm.Map("tx_port")
	if _, err := Dump(devmap); err == nil {
		t.Fatal("dumping a devmap: want an error")
	}
}

func TestRedirectNeedsEntry(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_redirect_map"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	frame := udp4(64, 9)
	res, err := obj.Run("xdp_redirect_map", Input{Frame: frame, IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 0 {
		t.Fatalf("empty devmap: verdict %d, want the fallback XDP_ABORTED", res.Verdict)
	}
	m, _ := obj.Map("tx_port")
	if err := m.Put(uint32(0), uint32(1)); err != nil {
		t.Fatalf("devmap[0] = lo: %v", err)
	}
	res, err = obj.Run("xdp_redirect_map", Input{Frame: frame, IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 4 {
		t.Fatalf("devmap[0] = 1: verdict %d, want XDP_REDIRECT", res.Verdict)
	}
}

func TestTailCallsNeedOpenCollection(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_tailcall"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	tcp := udp4(64, 80)
	tcp[23] = 6
	res, err := obj.Run("xdp_tailcall", Input{Frame: tcp})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 1 {
		t.Fatalf("TCP through the prog_array: verdict %d, want XDP_DROP from xdp_tc_tcp", res.Verdict)
	}
}

func TestBench(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_reference"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	p, _ := obj.Program("xdp_reference")
	per, ret, err := Bench(p, udp4(64, 9), 10000)
	if err != nil {
		t.Fatal(err)
	}
	if ret != 1 || per <= 0 || per > 100_000 {
		t.Fatalf("verdict %d, %v per run: want XDP_DROP and a plausible time", ret, per)
	}
	t.Logf("kernel test run of xdp_reference: %v per run", per)
}

func TestLiveRun(t *testing.T) {
	needKernel(t)
	n := 20000
	if !testing.Short() {
		n = 1000000
	}
	for _, tc := range []struct {
		obj, prog string
		peer      bool
	}{
		{"xdp_drop_count", "xdp_drop_count", false},
		{"xdp_macswap_tx", "xdp_macswap_tx", true},
	} {
		obj, err := Load(example(tc.obj), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := obj.Program(tc.prog)
		st, err := LiveRun(p, udp4(64, 9), n)
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Frames != n || st.NsPerFrame() <= 0 {
			t.Fatalf("%s: %+v", tc.prog, st)
		}
		if tc.peer && st.PeerReceived < uint64(n)*9/10 {
			t.Errorf("%s: the peer saw %d of %d frames sent with XDP_TX", tc.prog, st.PeerReceived, n)
		}
		if !tc.peer && st.PeerReceived != 0 {
			t.Errorf("%s: the peer saw %d frames, want 0 for XDP_DROP", tc.prog, st.PeerReceived)
		}
		t.Logf("%s live: %.1f ns/frame (%.2f Mpps), peer received %d", tc.prog, st.NsPerFrame(), 1e3/st.NsPerFrame(), st.PeerReceived)
	}
}

func TestLiveRedirect(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_redirect_map"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	p, _ := obj.Program("xdp_redirect_map")
	m, _ := obj.Map("tx_port")
	const n = 50000
	st, err := LiveRunWith(p, udp4(64, 9), n, LiveOptions{Prepare: func(dev, peer int) error {
		return m.Put(uint32(0), uint32(dev)) // out of the veth, into its peer
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.PeerReceived < n*9/10 {
		t.Fatalf("the peer saw %d of %d redirected frames", st.PeerReceived, n)
	}
	t.Logf("xdp_redirect_map live: %.1f ns/frame, peer received %d", st.NsPerFrame(), st.PeerReceived)
}

func TestXSKMapEntry(t *testing.T) {
	needKernel(t)
	obj, err := Load(example("xdp_xsk"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	sock, err := OpenXDPSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	m, _ := obj.Map("xsks")
	if err := m.Put(uint32(0), uint32(sock.Fd())); err != nil {
		t.Fatalf("xsks[0] = AF_XDP socket: %v", err)
	}
	res, err := obj.Run("xdp_xsk", Input{Frame: udp4(64, 9), IngressIfindex: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 4 {
		t.Fatalf("queue 0 with a socket in xsks[0]: verdict %d, want XDP_REDIRECT", res.Verdict)
	}
}

// BenchmarkKernelLive measures the kernel's own XDP path per frame
// (BPF_F_TEST_XDP_LIVE_FRAMES on a veth, 64-byte UDP frames) for the DROP,
// TX and REDIRECT examples. ns/op is one whole run (namespace setup
// included); the figures are ns/frame and Mpps.
func BenchmarkKernelLive(b *testing.B) {
	needKernel(b)
	const frames = 1_000_000
	for _, name := range []string{"xdp_drop_count", "xdp_macswap_tx", "xdp_redirect_map"} {
		b.Run(name, func(b *testing.B) {
			obj, err := Load(example(name), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer obj.Close()
			p, _ := obj.Program(name)
			var opts LiveOptions
			if name == "xdp_redirect_map" {
				m, _ := obj.Map("tx_port")
				opts.Prepare = func(dev, _ int) error { return m.Put(uint32(0), uint32(dev)) }
			}
			var total time.Duration
			runs := 0
			for b.Loop() {
				st, err := LiveRunWith(p, udp4(64, 9), frames, opts)
				if err != nil {
					b.Fatal(err)
				}
				total += st.Elapsed
				runs++
			}
			ns := float64(total.Nanoseconds()) / float64(runs*frames)
			b.ReportMetric(ns, "ns/frame")
			b.ReportMetric(1e3/ns, "Mpps")
		})
	}
}

func TestNetnsQueues(t *testing.T) {
	needKernel(t)
	ns, err := OpenNetns(4)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	p := metaProg(t)
	// Queue 3 exists on the namespace's veth but not on loopback here.
	err = ns.Do(func() error {
		_, err := Run(p, Input{Frame: udp4(64, 9), IngressIfindex: uint32(ns.DevIndex), RxQueueIndex: 3})
		return err
	})
	if err != nil {
		t.Fatalf("queue 3 of %s inside the namespace: %v", NetnsDev, err)
	}
	err = ns.Do(func() error {
		_, err := Run(p, Input{Frame: udp4(64, 9), IngressIfindex: uint32(ns.DevIndex), RxQueueIndex: 4})
		return err
	})
	if err == nil {
		t.Fatal("queue 4 of a 4-queue device: want an error")
	}
}

// TestBenchInput: BenchInput gives the program the context asked for (a
// Netns device's ifindex, resolved in the namespace) and returns the frame
// the last of repeat runs left, each run on what the one before left.
func TestBenchInput(t *testing.T) {
	needKernel(t)
	// Writes ingress_ifindex into the frame's first 4 bytes, decrements
	// byte 4 and returns XDP_PASS.
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),  // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),  // data_end
			asm.LoadMem(asm.R4, asm.R1, 12, asm.Word), // ingress_ifindex
			asm.Mov.Imm(asm.R0, 2),
			asm.Mov.Reg(asm.R5, asm.R2),
			asm.Add.Imm(asm.R5, 5),
			asm.JGT.Reg(asm.R5, asm.R3, "out"),
			asm.StoreMem(asm.R2, 0, asm.R4, asm.Word),
			asm.LoadMem(asm.R5, asm.R2, 4, asm.Byte),
			asm.Add.Imm(asm.R5, -1),
			asm.StoreMem(asm.R2, 4, asm.R5, asm.Byte),
			asm.Return().WithSymbol("out"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ns, err := OpenNetns(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	frame := udp4(64, 9)
	frame[4] = 200
	var res Result
	var per time.Duration
	err = ns.Do(func() (err error) {
		per, res, err = BenchInput(p, Input{Frame: frame, IngressIfindex: uint32(ns.DevIndex)}, 50)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != 2 || len(res.Frame) != len(frame) {
		t.Fatalf("verdict %d, %d bytes: want XDP_PASS, %d", res.Verdict, len(res.Frame), len(frame))
	}
	if got := binary.LittleEndian.Uint32(res.Frame); got != uint32(ns.DevIndex) {
		t.Errorf("ingress_ifindex %d, want %s's %d", got, NetnsDev, ns.DevIndex)
	}
	if res.Frame[4] != 150 {
		t.Errorf("byte 4 is %d after 50 runs from 200, want 150", res.Frame[4])
	}
	if per <= 0 || per > time.Millisecond {
		t.Errorf("%v per run", per)
	}
	if _, _, err := BenchInput(p, Input{Frame: frame}, 0); err == nil {
		t.Error("repeat 0 accepted")
	}
}

// TestLoadSkipsOtherPrograms: an object whose tc program the kernel
// refuses (it reads r2 before writing it) still loads its XDP program,
// which runs; the refused program is not in the collection. An object
// whose XDP program the kernel refuses still fails.
func TestLoadSkipsOtherPrograms(t *testing.T) {
	needKernel(t)
	bad := asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()}
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"x":  {Name: "x", Type: ebpf.XDP, License: "MIT", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}},
		"tc": {Name: "tc", Type: ebpf.SchedCLS, License: "MIT", Instructions: bad},
	}}
	obj, err := LoadSpec(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := obj.Program("tc"); err == nil {
		t.Error("the refused tc program is in the collection")
	}
	res, err := obj.Run("x", Input{Frame: udp4(64, 9)})
	if err != nil || res.Verdict != 1 {
		t.Fatalf("x: verdict %d, %v; want XDP_DROP", res.Verdict, err)
	}
	spec.Programs["x"].Instructions = bad
	if obj, err := LoadSpec(spec, nil); err == nil {
		obj.Close()
		t.Fatal("an XDP program the kernel refuses loaded")
	}
}
