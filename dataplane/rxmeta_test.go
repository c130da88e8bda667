package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/nic"
)

// hwMetaPort is the UDP port the tests point xdp_hw_meta at (its .rodata
// meta_port), not the object's default, so the test sees the variable work.
const hwMetaPort = 7777

// loadHWMeta loads examples/xdp/xdp_hw_meta.o with meta_port set, in engine
// e; ok is false when the engine does not exist on this platform.
func loadHWMeta(t *testing.T, e bpf.Engine) (*bpf.Collection, bool) {
	t.Helper()
	obj, err := examples.Object("xdp_hw_meta")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["meta_port"].Set(uint16(hwMetaPort)); err != nil {
		t.Fatal(err)
	}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 1, Engine: e})
	if err != nil {
		if e == bpf.EngineJIT {
			return nil, false
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if e == bpf.EngineJIT && !bpf.JITAvailable() {
		// No backend here (arm, 386): the program is refused, not faked (the
		// collection keeps the reason as text).
		if _, err := c.Program("xdp_hw_meta"); !errors.Is(err, bpf.ErrNoProgram) || !strings.Contains(fmt.Sprint(err), bpf.ErrNoJIT.Error()) {
			t.Fatalf("JIT on %s: %v, want bpf.ErrNoJIT", runtime.GOARCH, err)
		}
		return nil, false
	}
	return c, true
}

func hwMetaFrame(t *testing.T, dport uint16, src uint16) []byte {
	f := pktgen.DefaultFlow()
	f.DstPort, f.SrcPort, f.Size = dport, src, 80
	b, err := f.UDP()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hwMeta is examples/xdp/xdp_hw_meta.c's struct hw_meta, decoded.
type hwMeta struct {
	ts                 uint64
	tsErr              int32
	hash, hashType     uint32
	hashErr            int32
	vlanProto, vlanTCI uint16
	vlanErr            int32
}

func decodeHWMeta(b []byte) hwMeta {
	le := binary.LittleEndian
	return hwMeta{
		ts: le.Uint64(b), tsErr: int32(le.Uint32(b[8:])),
		hash: le.Uint32(b[12:]), hashType: le.Uint32(b[16:]), hashErr: int32(le.Uint32(b[20:])),
		vlanProto: binary.BigEndian.Uint16(b[24:]), vlanTCI: le.Uint16(b[26:]), vlanErr: int32(le.Uint32(b[28:])),
	}
}

// plainPort hides memport's RxMeta: a port that is no nic.RxMetaPort.
type plainPort struct{ nic.Port }

const (
	eNODATA    = -61
	eOPNOTSUPP = -95
)

// TestHWMetaExample runs the example on an in-memory port whose "device"
// reports metadata, reads each frame from the XSK and checks the 32 bytes the
// program wrote in front of it against what the device reported.
func TestHWMetaExample(t *testing.T) {
	all := nic.RxMetaTimestamp | nic.RxMetaHash | nic.RxMetaVLAN
	full := memport.Meta{
		Flags:     dma.FlagTimestamp | dma.FlagRSSValid | dma.FlagVLAN,
		Timestamp: 1_700_000_000_123_456_789, RSSHash: 0x9e3779b9,
		HashType:  0x1 | 0x8 | 0x100, // enum xdp_rss_hash_type bits, passed through as the driver gave them
		VLANProto: 0x8100, VLANTCI: 0x2064,
	}
	type frameCase struct {
		name string
		meta memport.Meta
		want hwMeta
	}
	cases := []struct {
		name   string
		caps   nic.RxMetaCaps
		hide   bool // the port is no RxMetaPort
		frames []frameCase
	}{
		{"all", all, false, []frameCase{
			{"full", full, hwMeta{ts: full.Timestamp, hash: full.RSSHash, hashType: full.HashType, vlanProto: 0x8100, vlanTCI: 0x2064}},
			{"none this frame", memport.Meta{}, hwMeta{tsErr: eNODATA, hashErr: eNODATA, vlanErr: eNODATA}},
			{"hash only", memport.Meta{Flags: dma.FlagRSSValid, RSSHash: 7, HashType: 2}, hwMeta{tsErr: eNODATA, hash: 7, hashType: 2, vlanErr: eNODATA}},
		}},
		{"hash only port", nic.RxMetaHash, false, []frameCase{
			{"hash", memport.Meta{Flags: dma.FlagRSSValid, RSSHash: 0xabcdef01, HashType: 0x2}, hwMeta{tsErr: eOPNOTSUPP, hash: 0xabcdef01, hashType: 0x2, vlanErr: eOPNOTSUPP}},
		}},
		{"reports nothing", 0, false, []frameCase{
			{"plain", memport.Meta{}, hwMeta{tsErr: eOPNOTSUPP, hashErr: eOPNOTSUPP, vlanErr: eOPNOTSUPP}},
		}},
		{"not an RxMetaPort", all, true, []frameCase{
			{"full", full, hwMeta{tsErr: eOPNOTSUPP, hashErr: eOPNOTSUPP, vlanErr: eOPNOTSUPP}},
		}},
	}
	for _, eng := range []bpf.Engine{bpf.EngineInterp, bpf.EngineJIT} {
		for _, c := range cases {
			t.Run(eng.String()+"/"+c.name, func(t *testing.T) {
				coll, ok := loadHWMeta(t, eng)
				if !ok {
					t.Skip("no JIT on this platform")
				}
				prog, err := coll.Program("xdp_hw_meta")
				if err != nil {
					t.Fatal(err)
				}
				if !prog.UsesRxMeta() {
					t.Fatal("xdp_hw_meta: UsesRxMeta false")
				}
				ps := newPorts(t, 1, memport.Config{RxMeta: c.caps})
				var port nic.Port = ps[0]
				if c.hide {
					port = plainPort{ps[0]}
				}
				xsks, err := coll.Map("xsks")
				if err != nil {
					t.Fatal(err)
				}
				st := &nullStack{}
				e, err := New(Config{Ports: []PortConfig{{Port: port, Stack: st}}, Program: BPF(prog)})
				if err != nil {
					t.Fatal(err)
				}
				x, err := e.BindXSK(xsks, 0, 0, 0, 16)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Start(); err != nil {
					t.Fatal(err)
				}
				bufs := make([]*dma.Buf, 4)
				for i, fc := range c.frames {
					in := hwMetaFrame(t, hwMetaPort, uint16(1000+i))
					// A hidden port's buffers carry the metadata too: the
					// dataplane must not hand over what the port does not
					// claim to report.
					if ok, err := ps[0].Rx(0).InjectMeta(in, fc.meta); !ok || err != nil {
						t.Fatalf("%s: inject: %v %v", fc.name, ok, err)
					}
					n := x.Recv(bufs[:1], 2*time.Second)
					if n != 1 {
						t.Fatalf("%s: XSK got %d frames", fc.name, n)
					}
					b := bufs[0]
					if !bytes.Equal(b.Data(), in) || b.Meta != 32 {
						t.Fatalf("%s: frame differs or %d bytes of metadata, want 32", fc.name, b.Meta)
					}
					if got := decodeHWMeta(b.Mem[b.Off-b.Meta : b.Off]); got != fc.want {
						t.Errorf("%s: metadata\n got %+v\nwant %+v", fc.name, got, fc.want)
					}
					x.Release(b)
				}
				// Frames to another port, and the default meta_port the test
				// moved away from, pass untouched.
				for _, dport := range []uint16{9091, 53} {
					if ok, err := ps[0].Rx(0).InjectMeta(hwMetaFrame(t, dport, 1), memport.Meta{}); !ok || err != nil {
						t.Fatal(ok, err)
					}
				}
				waitFor(t, "two passed frames", func() bool { return e.Snapshot().Ports[0].Counters[RxXDPPass] == 2 })
				stopAndCheck(t, e, ps...)
				if s := e.Snapshot(); s.XSKs[0].Rx != uint64(len(c.frames)) {
					t.Errorf("XSK received %d, want %d", s.XSKs[0].Rx, len(c.frames))
				}
			})
		}
	}
}

func TestMemportRefusesUnreportedMeta(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{RxMeta: nic.RxMetaHash})
	if ok, err := ps[0].Rx(0).InjectMeta([]byte{1, 2, 3}, memport.Meta{Flags: dma.FlagTimestamp, Timestamp: 5}); ok || err == nil {
		t.Fatalf("a timestamp on a port that reports none: %v %v", ok, err)
	}
	if ps[0].Rx(0).Pending() != 0 {
		t.Fatal("the refused frame is on the ring")
	}
}

// TestPollRxMetaNoAllocs: filling the metadata costs no allocation per
// frame, and a program that calls no kfunc gets no metadata at all.
func TestPollRxMetaNoAllocs(t *testing.T) {
	coll, _ := loadHWMeta(t, bpf.EngineInterp)
	prog, err := coll.Program("xdp_hw_meta")
	if err != nil {
		t.Fatal(err)
	}
	ps := newPorts(t, 1, memport.Config{RxMeta: nic.RxMetaTimestamp | nic.RxMetaHash | nic.RxMetaVLAN})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0], Stack: &nullStack{}}}, Program: BPF(prog)})
	if err != nil {
		t.Fatal(err)
	}
	pl := e.pollers[0]
	if pl.metas == nil || pl.frames[0].Meta == nil {
		t.Fatal("a program calling the kfuncs got no metadata")
	}
	in := hwMetaFrame(t, hwMetaPort, 1)
	m := memport.Meta{Flags: dma.FlagTimestamp | dma.FlagRSSValid, Timestamp: 1, RSSHash: 2}
	allocs := testing.AllocsPerRun(100, func() {
		for range 32 {
			ps[0].Rx(0).InjectMeta(in, m)
		}
		pl.poll()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per poll of 32 frames with metadata", allocs)
	}
	if got := pl.metas[0]; got.Have != bpf.RxMetaTimestamp|bpf.RxMetaHash || got.Timestamp != 1 || got.Hash != 2 {
		t.Errorf("frame metadata %+v", got)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	// The same port with a program that calls no kfunc: no metadata.
	e2, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}})
	if err != nil {
		t.Fatal(err)
	}
	if pl := e2.pollers[0]; pl.metas != nil || pl.frames[0].Meta != nil {
		t.Error("a program without kfuncs got metadata")
	}
	xsk := loadExample(t, "xdp_xsk")
	e3, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: BPF(xsk)})
	if err != nil {
		t.Fatal(err)
	}
	if pl := e3.pollers[0]; pl.metas != nil || pl.frames[0].Meta != nil {
		t.Error("xdp_xsk (no kfuncs) got metadata")
	}
}

func loadExample(t *testing.T, name string) *bpf.Program {
	t.Helper()
	obj, err := examples.Object(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpf.LoadBytes(obj, &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
