package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Tests of the native bpf_fib_lookup (jit_amd64_fib.go, jit_arm64_fib.go,
// jit_fib.go, jit_amd64_fib6.go, jit_arm64_fib6.go, jit_fib6.go): random FIBs (nested IPv4
// and IPv6 prefixes of every kind, IPv4 and IPv6 gateways with and
// without neighbours, route and port MTUs, preferred sources or none,
// ports without forwarding or past the small ifindexes, routes in tables
// local and default) queried with random structs (families, ports,
// destinations and sources, strict ones included, lengths at the MTUs,
// flags of every bit, plen around 64, the struct on the stack through
// r10, at an offset known only at run time, or in the packet) give the
// interpreter's results, struct, r1-r5 and faults in the JIT, run by run
// and in bursts.

// fibNatSpec is a program per way of passing the struct: "fst" copies the
// frame's bytes 8-72 to r10-64 and passes r10-64; "fdyn" passes r10 less
// the frame's byte 80 (64 usually; the struct is then wherever that
// points, out of the frame sometimes); "fpkt" passes the frame's bytes
// themselves. The flags are the frame's bytes 0-4, plen bytes 4-8; the
// return value goes to bytes 72-80 and the struct back to 8-72.
func fibNatSpec() *ebpf.CollectionSpec {
	progs := map[string]*ebpf.ProgramSpec{}
	for _, name := range []string{"fst", "fdyn", "fpkt"} {
		insns := asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
			asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, 88),
			asm.JGT.Reg(asm.R2, asm.R8, "out"),
		}
		copyOut := func(from, to asm.Register, fo, to0 int16) asm.Instructions {
			var out asm.Instructions
			for i := int16(0); i < 64; i += 8 {
				out = append(out, asm.LoadMem(asm.R3, from, fo+i, asm.DWord), asm.StoreMem(to, to0+i, asm.R3, asm.DWord))
			}
			return out
		}
		if name != "fpkt" {
			insns = append(insns, copyOut(asm.R7, asm.R10, 8, -64)...)
		}
		insns = append(insns, asm.Mov.Reg(asm.R1, asm.R6))
		switch name {
		case "fst":
			insns = append(insns, asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -64))
		case "fdyn":
			insns = append(insns, asm.LoadMem(asm.R9, asm.R7, 80, asm.Byte), asm.Mov.Reg(asm.R2, asm.R10), asm.Sub.Reg(asm.R2, asm.R9))
		default:
			insns = append(insns, asm.Mov.Reg(asm.R2, asm.R7), asm.Add.Imm(asm.R2, 8))
		}
		insns = append(insns,
			asm.LoadMem(asm.R3, asm.R7, 4, asm.Word),
			asm.LoadMem(asm.R4, asm.R7, 0, asm.Word),
			asm.Mov.Reg(asm.R5, asm.R7),
			asm.FnFibLookup.Call(),
			// r1-r5 as they were: the ctx, a pointer, plen, flags and r5.
			asm.JNE.Reg(asm.R5, asm.R7, "bad"),
			asm.StoreMem(asm.R7, 72, asm.R0, asm.DWord),
			asm.LoadMem(asm.R0, asm.R7, 4, asm.Word),
			asm.JNE.Reg(asm.R3, asm.R0, "bad"),
			asm.LoadMem(asm.R0, asm.R7, 0, asm.Word),
			asm.JNE.Reg(asm.R4, asm.R0, "bad"),
			asm.JNE.Reg(asm.R1, asm.R6, "bad"),
			asm.Mov.Reg(asm.R0, asm.R2),
			asm.StoreMem(asm.R7, 80, asm.R0, asm.Word),
		)
		if name != "fpkt" {
			insns = append(insns, copyOut(asm.R10, asm.R7, -64, 8)...)
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return(),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("bad"), asm.Return())
		progs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns}
	}
	return &ebpf.CollectionSpec{Programs: progs}
}

// nativeFIBArch: the backends with a native bpf_fib_lookup (IPv4 and
// IPv6).
const nativeFIBArch = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"

// farPort is an ifindex past smallIfindex: the snapshot leaves it to Go.
const farPort = smallIfindex + 7

// randNatFIB is randFIB4 with what the native lookup reads varied: ports'
// forwarding, MTUs and MACs, maybe a port past smallIfindex, gateways
// (IPv4 near the bases, IPv6 sometimes), route MTUs and sources, and
// neighbours for most gateways and some hosts.
func randNatFIB(rng *rand.Rand, bases []uint32) *FIB {
	f := randFIB4(rng, bases)
	mtus := []uint32{0, 1500, 1400, 9000, 68, 70000}
	for i := range f.Interfaces {
		in := &f.Interfaces[i]
		in.Forwarding = rng.IntN(4) != 0
		in.MTU = mtus[rng.IntN(len(mtus))]
		in.MAC = [6]byte{2, byte(i), 1, 2, 3, byte(rng.IntN(256))}
	}
	if rng.IntN(3) == 0 {
		f.Interfaces = append(f.Interfaces, FIBInterface{Ifindex: farPort, Forwarding: true, MAC: [6]byte{2, 9, 9, 9, 9, 9},
			Addrs: []netip.Prefix{netip.PrefixFrom(nearAddr(rng, bases), 24)}})
		f.Routes = append(f.Routes, FIBRoute{Dst: netip.PrefixFrom(nearAddr(rng, bases), 16+rng.IntN(17)).Masked(),
			Ifindex: farPort, Gateway: nearAddr(rng, bases)})
	}
	for i := range f.Routes {
		r := &f.Routes[i]
		if r.Type != RouteUnicast {
			continue
		}
		switch k := rng.IntN(6); {
		case k < 3 && r.Dst.Addr().Is4():
			r.Gateway = nearAddr(rng, bases)
		case k == 3:
			r.Gateway = netip.MustParseAddr("2001:db8::77")
		}
		if rng.IntN(5) == 0 {
			r.MTU = mtus[1+rng.IntN(len(mtus)-1)]
		}
		if rng.IntN(5) == 0 {
			r.Src = nearAddr(rng, bases)
		}
		if r.Gateway.IsValid() && rng.IntN(4) != 0 {
			f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: r.Ifindex, IP: r.Gateway, MAC: [6]byte{2, 0xaa, byte(i), 3, 4, byte(rng.IntN(256))}})
		}
	}
	for range rng.IntN(6) {
		in := f.Interfaces[rng.IntN(len(f.Interfaces))]
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: in.Ifindex, IP: nearAddr(rng, bases), MAC: [6]byte{2, 0xbb, 1, 2, 3, byte(rng.IntN(256))}})
	}
	addRandFIB6(rng, f)
	return f
}

// bases6 are the IPv6 prefixes the random IPv6 routes and queries are
// near.
var bases6 = []netip.Addr{netip.MustParseAddr("2001:db8::"), netip.MustParseAddr("2001:db8:0:7::"),
	netip.MustParseAddr("fd00:1:2:3::"), netip.MustParseAddr("2a00::")}

// nearAddr6 is an address near bases6: one of them with random low bits
// from a random bit on, or with one bit flipped.
func nearAddr6(rng *rand.Rand) netip.Addr {
	b := bases6[rng.IntN(len(bases6))].As16()
	switch k := rng.IntN(4); {
	case k == 0:
		i := rng.IntN(128)
		b[i/8] ^= 0x80 >> (i % 8)
	case k == 1:
		b[15] = byte(rng.IntN(4))
	default:
		for i := 16 + rng.IntN(112); i < 128; i++ {
			if rng.IntN(2) == 0 {
				b[i/8] ^= 0x80 >> (i % 8)
			}
		}
	}
	return netip.AddrFrom16(b)
}

// randBits6 favours the lengths around the halves and the ends.
func randBits6(rng *rand.Rand) int {
	if rng.IntN(2) == 0 {
		return []int{0, 1, 16, 32, 48, 63, 64, 65, 96, 120, 127, 128}[rng.IntN(12)]
	}
	return rng.IntN(129)
}

// addRandFIB6 adds IPv6 to f: ports' IPv6 forwarding and addresses (none
// global sometimes, so that no source is found), routes of every kind in
// local, main, default and another table with equal prefixes and
// metrics, IPv6 gateways with and without neighbours, route MTUs and
// sources, and neighbours of hosts.
func addRandFIB6(rng *rand.Rand, f *FIB) {
	noSrc := rng.IntN(4) == 0
	for i := range f.Interfaces {
		in := &f.Interfaces[i]
		in.Forwarding6 = rng.IntN(4) != 0
		if noSrc {
			in.Addrs = slices.DeleteFunc(in.Addrs, func(a netip.Prefix) bool { return a.Addr().Is6() })
		}
		for range rng.IntN(3) {
			a := nearAddr6(rng)
			if noSrc || rng.IntN(5) == 0 {
				a = netip.AddrFrom16([16]byte{0xfe, 0x80, 15: byte(i + 1)})
			}
			in.Addrs = append(in.Addrs, netip.PrefixFrom(a, []int{64, 48, 120, 128}[rng.IntN(4)]))
		}
	}
	tables := []uint32{0, 0, 0, TableMain, TableLocal, TableDefault, 100}
	for i := range rng.IntN(40) {
		r := FIBRoute{
			Table:   tables[rng.IntN(len(tables))],
			Dst:     netip.PrefixFrom(nearAddr6(rng), randBits6(rng)).Masked(),
			Type:    RouteType(rng.IntN(8) / 4 * rng.IntN(5)), // half unicast
			Ifindex: f.Interfaces[rng.IntN(len(f.Interfaces))].Ifindex,
			Metric:  uint32(rng.IntN(3)),
		}
		if r.Type != RouteUnicast && rng.IntN(3) == 0 {
			r.Ifindex = 0
		}
		if r.Type == RouteUnicast && rng.IntN(2) == 0 {
			r.Gateway = nearAddr6(rng)
			if rng.IntN(4) != 0 {
				f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: r.Ifindex, IP: r.Gateway, MAC: [6]byte{2, 0xa6, byte(i), 3, 4, byte(rng.IntN(256))}})
			}
		}
		if rng.IntN(5) == 0 {
			r.MTU = []uint32{1280, 1400, 9000, 70000}[rng.IntN(4)]
		}
		if rng.IntN(5) == 0 {
			r.Src = nearAddr6(rng)
		}
		f.Routes = append(f.Routes, r)
	}
	for range rng.IntN(8) {
		in := f.Interfaces[rng.IntN(len(f.Interfaces))]
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: in.Ifindex, IP: nearAddr6(rng), MAC: [6]byte{2, 0xb6, 1, 2, 3, byte(rng.IntN(256))}})
	}
}

// randDst6 is an IPv6 destination for f: near its routes, a neighbour, the
// last address of a route, or one that is never forwarded or goes to Go.
func randDst6(rng *rand.Rand, f *FIB) netip.Addr {
	switch k := rng.IntN(20); {
	case k < 4:
		var ns []netip.Addr
		for _, n := range f.Neighbours {
			if n.IP.Is6() {
				ns = append(ns, n.IP)
			}
		}
		if len(ns) > 0 {
			return ns[rng.IntN(len(ns))]
		}
	case k < 8:
		if r := f.Routes[rng.IntN(len(f.Routes))]; r.Dst.Addr().Is6() {
			return lastAddr(r.Dst.Masked())
		}
	case k == 8:
		return []netip.Addr{netip.MustParseAddr("ff02::1"), netip.MustParseAddr("fe80::1"), netip.MustParseAddr("febf::1"),
			netip.MustParseAddr("fec0::1"), netip.MustParseAddr("::1"), netip.MustParseAddr("::ffff:10.1.2.3"),
			netip.MustParseAddr("::ffff:127.0.0.1"), netip.MustParseAddr("::2"), netip.MustParseAddr("0:0:1::"),
			netip.MustParseAddr("::"), netip.MustParseAddr("::1:0:0:1"), netip.MustParseAddr("::ffff:224.0.0.1"),
			netip.MustParseAddr("::ffff:169.254.1.1"), netip.MustParseAddr("::fffe:127.0.0.1"), netip.MustParseAddr("::100:0:0:0")}[rng.IntN(15)]
	}
	return nearAddr6(rng)
}

// randFIBFrame is a frame for fibNatSpec's programs asking f.
func randFIBFrame(rng *rand.Rand, f *FIB, bases []uint32) []byte {
	fr := make([]byte, 88)
	for i := 8; i < 72; i++ {
		fr[i] = byte(rng.Uint32())
	}
	var flags uint32
	switch rng.IntN(5) {
	case 1:
		flags = rng.Uint32() & fibNatFlags
	case 2:
		flags = rng.Uint32() & fibLookupMask
	case 3:
		flags = rng.Uint32() & 0xff
	}
	binary.LittleEndian.PutUint32(fr[0:], flags)
	plen := uint32(64)
	if rng.IntN(5) == 0 {
		plen = []uint32{63, 65, 0, 0xffffffff, 0x10000, 0x10001, 64 | 1<<31}[rng.IntN(7)]
	}
	binary.LittleEndian.PutUint32(fr[4:], plen)
	fr[8+fibFamily] = afInet
	switch k := rng.IntN(20); {
	case k < 2:
		fr[8+fibFamily] = []byte{afInet6, 0, 3, afInet | 0x100>>1}[rng.IntN(4)]
	case k < 10:
		fr[8+fibFamily] = afInet6
	}
	ifindex := f.Interfaces[rng.IntN(len(f.Interfaces))].Ifindex
	if rng.IntN(6) == 0 {
		ifindex = []uint32{0, 1, smallIfindex - 1, smallIfindex, farPort, 1 << 31}[rng.IntN(6)]
	}
	binary.LittleEndian.PutUint32(fr[8+fibIfindex:], ifindex)
	dst := nearAddr(rng, bases)
	switch k := rng.IntN(10); {
	case k < 2 && len(f.Neighbours) > 0:
		dst = f.Neighbours[rng.IntN(len(f.Neighbours))].IP
	case k < 4 && len(f.Routes) > 0:
		if d := f.Routes[rng.IntN(len(f.Routes))].Dst; d.Addr().Is4() {
			dst = lastAddr(d.Masked())
		}
	}
	if dst.Is4() {
		copy(fr[8+fibDst:], dst.AsSlice())
	}
	if fr[8+fibFamily] == afInet6 && rng.IntN(8) != 0 {
		d6 := randDst6(rng, f).As16()
		copy(fr[8+fibDst:], d6[:])
		src := nearAddr6(rng)
		if rng.IntN(10) == 0 {
			src = randDst6(rng, f) // sometimes a strict one
		}
		s6 := src.As16()
		copy(fr[8+fibSrc:], s6[:])
	}
	tl := uint16(rng.Uint32())
	if rng.IntN(4) != 0 {
		tl = []uint16{0, 68, 69, 1400, 1401, 1500, 1501, 9000, 9001, 65535}[rng.IntN(10)]
	}
	binary.LittleEndian.PutUint16(fr[8+fibTotLen:], tl)
	fr[80] = 64
	if rng.IntN(20) == 0 {
		fr[80] = []byte{0, 8, 60, 72, 200, 255}[rng.IntN(6)]
	}
	return fr
}

// fibNatRig is a collection per engine with the same FIB, and a Runner for
// runs one by one and one for bursts.
type fibNatRig struct {
	ci, cj         *Collection
	ri, rj, rb     *Runner
	progI, progJ   map[string]*Program
	nativeCompiled int
	framesB        []Frame
}

func newFIBNatRig(t *testing.T) *fibNatRig {
	t.Helper()
	g := &fibNatRig{progI: map[string]*Program{}, progJ: map[string]*Program{}}
	var err error
	if g.ci, err = LoadCollectionSpec(fibNatSpec(), &Options{NumCPU: 1, Engine: EngineInterp}); err != nil {
		t.Fatal(err)
	}
	if g.cj, err = LoadCollectionSpec(fibNatSpec(), &Options{NumCPU: 1, Engine: EngineJIT}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.ci.Close(); g.cj.Close() })
	for _, name := range []string{"fst", "fdyn", "fpkt"} {
		if g.progI[name], err = g.ci.Program(name); err != nil {
			t.Fatal(err)
		}
		if g.progJ[name], err = g.cj.Program(name); err != nil {
			t.Fatal(err)
		}
		g.nativeCompiled += g.progJ[name].jit.Load().native
	}
	g.ri, g.rj, g.rb = NewRunner(0), NewRunner(0), NewRunner(0)
	return g
}

func (g *fibNatRig) setFIB(t *testing.T, f *FIB) {
	t.Helper()
	for _, c := range []*Collection{g.ci, g.cj} {
		if err := c.SetFIB(f); err != nil {
			t.Fatal(err)
		}
	}
}

// fibOutcome is what a run leaves: the verdict, the fault and the frame.
type fibOutcome struct {
	verdict Action
	fault   string
	frame   []byte
}

func (g *fibNatRig) one(r *Runner, p *Program, fr []byte) fibOutcome {
	f := newFrame(fr)
	v := r.Run(p, f)
	return fibOutcome{v, errString(r.Fault()), append([]byte(nil), f.Buf[f.Data:f.DataEnd]...)}
}

// diff runs frs through prog in the interpreter, the JIT run by run and
// the JIT in one burst, and fails on any difference. It returns how many
// frames the burst left to Go (resumes).
func (g *fibNatRig) diff(t *testing.T, name string, frs [][]byte) uint64 {
	t.Helper()
	pi, pj := g.progI[name], g.progJ[name]
	want := make([]fibOutcome, len(frs))
	for i, fr := range frs {
		want[i] = g.one(g.ri, pi, fr)
		if got := g.one(g.rj, pj, fr); got.verdict != want[i].verdict || got.fault != want[i].fault || !bytes.Equal(got.frame, want[i].frame) {
			t.Fatalf("%s frame %d %x:\ninterp %v %q %x\njit    %v %q %x", name, i, fr, want[i].verdict, want[i].fault, want[i].frame, got.verdict, got.fault, got.frame)
		}
	}
	g.framesB = g.framesB[:0]
	for _, fr := range frs {
		g.framesB = append(g.framesB, *newFrame(fr))
	}
	verdicts := make([]Action, len(frs))
	before := g.rb.jit.resumes
	n, firstFault := g.rb.RunBurst(pj, g.framesB, verdicts, nil)
	if n != len(frs) {
		t.Fatalf("%s: burst ran %d of %d frames", name, n, len(frs))
	}
	wantFault := -1
	for i := range frs {
		if want[i].fault != "<nil>" && wantFault < 0 {
			wantFault = i
		}
	}
	if firstFault != wantFault {
		t.Fatalf("%s burst: first fault at frame %d, want %d", name, firstFault, wantFault)
	}
	for i := range frs {
		f := &g.framesB[i]
		got := f.Buf[f.Data:f.DataEnd]
		if verdicts[i] != want[i].verdict || !bytes.Equal(got, want[i].frame) {
			t.Fatalf("%s burst frame %d %x:\ninterp %v %q %x\njit    %v %x", name, i, frs[i], want[i].verdict, want[i].fault, want[i].frame, verdicts[i], got)
		}
	}
	return g.rb.jit.resumes - before
}

func TestJITFIBDifferential(t *testing.T) {
	needJIT(t)
	g := newFIBNatRig(t)
	if jitArch && nativeFIBArch && g.nativeCompiled != 3 {
		t.Fatalf("%d lookups compiled natively, want 3", g.nativeCompiled)
	}
	rng := rand.New(rand.NewPCG(21, 69))
	fibs := 300
	if testing.Short() {
		fibs = 60
	}
	var frames, frames6, toGo uint64
	codes, codes6 := map[int64]int{}, map[int64]int{}
	for n := range fibs {
		bases := []uint32{rng.Uint32(), rng.Uint32(), 0x0a000000}
		f := randNatFIB(rng, bases)
		withWideRoot(t, n%2 == 1)
		g.setFIB(t, f)
		if n%10 == 0 {
			g.setFIB(t, nil) // some runs without a FIB: -ENODEV
		}
		for _, name := range []string{"fst", "fdyn", "fpkt"} {
			frs := make([][]byte, jitBurstMax)
			for i := range frs {
				frs[i] = randFIBFrame(rng, f, bases)
			}
			toGo += g.diff(t, name, frs)
			frames += uint64(len(frs))
			for _, fr := range frs {
				if fr[8+fibFamily] == afInet6 {
					frames6++
				}
				out := g.one(g.ri, g.progI[name], fr)
				if len(out.frame) == 88 {
					codes[int64(binary.LittleEndian.Uint64(out.frame[72:]))]++
					if fr[8+fibFamily] == afInet6 {
						codes6[int64(binary.LittleEndian.Uint64(out.frame[72:]))]++
					}
				}
			}
		}
	}
	t.Logf("%d frames, %d answered in Go; return codes %v, IPv6 %v", frames, toGo, codes, codes6)
	for _, rc := range []int64{fibRetSuccess, fibRetBlackhole, fibRetUnreachable, fibRetProhibit, fibRetNotFwded,
		fibRetFwdDisabled, fibRetNoNeigh, fibRetFragNeeded, -19, -22, -97} {
		if codes[rc] == 0 {
			t.Errorf("no lookup returned %d", rc)
		}
	}
	for _, rc := range []int64{fibRetSuccess, fibRetBlackhole, fibRetUnreachable, fibRetProhibit, fibRetNotFwded,
		fibRetFwdDisabled, fibRetNoNeigh, fibRetFragNeeded, fibRetNoSrcAddr, -19} {
		if codes6[rc] == 0 {
			t.Errorf("no IPv6 lookup returned %d", rc)
		}
	}
	if jitArch && nativeFIBArch && toGo > frames*3/4 {
		t.Errorf("%d of %d frames answered in Go (%d IPv6)", toGo, frames, frames6)
	}
}

// TestJITFIBNative: the lookups the snapshot answers stay in native code
// (no frame of a burst goes to Go), with each answer's writes.
func TestJITFIBNative(t *testing.T) {
	needJIT(t)
	if !nativeFIBArch {
		t.Skip("bpf_fib_lookup is not native here")
	}
	g := newFIBNatRig(t)
	f := &FIB{
		Interfaces: []FIBInterface{
			{Ifindex: 2, MAC: [6]byte{2, 0, 0, 0, 0, 2}, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}},
			{Ifindex: 3, MAC: [6]byte{2, 0, 0, 0, 0, 3}, MTU: 1400, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}},
		},
		Routes: []FIBRoute{
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("10.0.1.2"), Ifindex: 3, Metric: 7},
			{Dst: netip.MustParsePrefix("192.168.9.0/24"), Gateway: netip.MustParseAddr("10.0.1.3"), Ifindex: 3, MTU: 1000},
			{Dst: netip.MustParsePrefix("172.16.0.0/12"), Type: RouteBlackhole},
			{Dst: netip.MustParsePrefix("172.17.0.0/16"), Type: RouteUnreachable},
			{Dst: netip.MustParsePrefix("172.18.0.0/16"), Type: RouteProhibit},
		},
		Neighbours: []FIBNeighbour{{Ifindex: 3, IP: netip.MustParseAddr("10.0.1.2"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 2}}},
	}
	g.setFIB(t, f)
	q := func(flags uint32, ifindex uint32, dst string, totLen uint16) []byte {
		fr := make([]byte, 88)
		binary.LittleEndian.PutUint32(fr, flags)
		binary.LittleEndian.PutUint32(fr[4:], 64)
		copy(fr[8:], fibParams(afInet, ifindex, netip.MustParseAddr(dst), totLen))
		fr[80] = 64
		return fr
	}
	frs := [][]byte{
		q(0, 2, "192.168.1.1", 1400),                 // SUCCESS
		q(fibLookupSrc, 2, "192.168.1.1", 0),         // SUCCESS, source 10.0.1.1
		q(fibLookupSkipNeigh, 2, "10.0.1.9", 0),      // SUCCESS, connected
		q(fibLookupDirect, 2, "192.168.9.1", 1001),   // FRAG_NEEDED (route MTU)
		q(0, 2, "192.168.1.1", 1401),                 // FRAG_NEEDED (port MTU)
		q(0, 2, "192.168.9.1", 0),                    // NO_NEIGH
		q(0, 2, "172.16.0.1", 0),                     // BLACKHOLE
		q(0, 2, "172.17.0.1", 0),                     // UNREACHABLE
		q(fibLookupMark, 2, "172.18.0.1", 0),         // PROHIBIT
		q(0, 2, "10.0.0.1", 0),                       // NOT_FWDED: local
		q(0, 2, "10.0.0.255", 0),                     // NOT_FWDED: broadcast
		q(0, 2, "8.8.8.8", 0),                        // NOT_FWDED: no route
		q(0, 3, "192.168.1.1", 0),                    // FWD_DISABLED
		q(0, 4, "192.168.1.1", 0),                    // -ENODEV
		q(0, smallIfindex+1, "192.168.1.1", 0),       // -ENODEV
		q(fibLookupSkipNeigh, 2, "192.168.1.1", 100), // SUCCESS
	}
	want := []int64{0, 0, 0, 8, 8, 7, 1, 2, 3, 4, 4, 4, 5, -19, -19, 0}
	for _, family := range []byte{0, 1, 3, 255} { // -EAFNOSUPPORT, nothing written
		fr := q(0, 2, "192.168.1.1", 0)
		fr[8+fibFamily] = family
		frs, want = append(frs, fr), append(want, -int64(syscall.EAFNOSUPPORT))
	}
	// Directly connected hosts: every other one has a neighbour entry, so
	// that probes of the neighbour table collide, find and miss.
	for i := range 80 {
		a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 4)})
		if i%2 == 0 {
			f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: 3, IP: a, MAC: [6]byte{2, 0xcc, 0, 0, 1, byte(i)}})
			want = append(want, fibRetSuccess)
		} else {
			want = append(want, fibRetNoNeigh)
		}
		frs = append(frs, q(0, 2, a.String(), 0))
	}
	g.setFIB(t, f)
	for _, name := range []string{"fst", "fpkt"} {
		toGo := g.diff(t, name, frs)
		if name == "fst" && toGo != 0 {
			t.Errorf("%s: %d frames answered in Go, want none", name, toGo)
		}
		for i, fr := range frs {
			out := g.one(g.rj, g.progJ[name], fr)
			if got := int64(binary.LittleEndian.Uint64(out.frame[72:])); got != want[i] {
				t.Errorf("%s frame %d: %d, want %d", name, i, got, want[i])
			}
		}
	}
	// The benchmark's lookup allocates nothing.
	fr := newFrame(frs[0])
	if n := testing.AllocsPerRun(200, func() { resetFrame(fr, frs[0]); g.rj.Run(g.progJ["fst"], fr) }); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

// TestJITFIB6Native: the IPv6 lookups the snapshot answers stay in
// native code, with each answer's writes: routes in local, main and
// default, gateways with and without neighbours, directly connected hosts
// whose neighbour probes collide, the strict addresses, DIRECT.
func TestJITFIB6Native(t *testing.T) {
	needJIT(t)
	if !nativeFIBArch {
		t.Skip("bpf_fib_lookup is not native here")
	}
	g := newFIBNatRig(t)
	p6 := netip.MustParsePrefix
	a6 := netip.MustParseAddr
	f := &FIB{
		Interfaces: []FIBInterface{
			{Ifindex: 2, MAC: [6]byte{2, 0, 0, 0, 0, 2}, Forwarding6: true, Addrs: []netip.Prefix{p6("2001:db8:0:2::1/64")}},
			{Ifindex: 3, MAC: [6]byte{2, 0, 0, 0, 0, 3}, MTU: 1400, Addrs: []netip.Prefix{p6("2001:db8:0:3::1/64")}},
		},
		Routes: []FIBRoute{
			{Dst: p6("2001:db8:100::/48"), Gateway: a6("2001:db8:0:3::2"), Ifindex: 3, Metric: 7},
			{Dst: p6("2001:db8:100:9::/64"), Gateway: a6("2001:db8:0:3::3"), Ifindex: 3, MTU: 1300, Src: a6("2001:db8::5")},
			{Dst: p6("2001:db8:dead::/48"), Type: RouteBlackhole},
			{Dst: p6("2001:db8:beef::/48"), Type: RouteUnreachable},
			{Dst: p6("2001:db8:bad::/48"), Type: RouteProhibit},
			{Dst: p6("2001:db8:1::/48"), Type: RouteLocal, Table: TableLocal, Ifindex: 2},
			{Dst: p6("2a00::/16"), Gateway: a6("2001:db8:0:3::2"), Ifindex: 3, Table: TableDefault},
		},
		Neighbours: []FIBNeighbour{{Ifindex: 3, IP: a6("2001:db8:0:3::2"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 2}}},
	}
	q := func(flags uint32, ifindex uint32, dst string, totLen uint16) []byte {
		fr := make([]byte, 88)
		binary.LittleEndian.PutUint32(fr, flags)
		binary.LittleEndian.PutUint32(fr[4:], 64)
		copy(fr[8:], fibParams(afInet6, ifindex, a6(dst), totLen))
		src := a6("2001:db8:77::1").As16()
		copy(fr[8+fibSrc:], src[:])
		fr[80] = 64
		return fr
	}
	frs := [][]byte{
		q(0, 2, "2001:db8:100::1", 1400),                            // SUCCESS
		q(fibLookupSrc, 2, "2001:db8:100:9::1", 0),                  // NO_NEIGH, source the route's
		q(fibLookupSrc|fibLookupSkipNeigh, 2, "2001:db8:100::1", 0), // SUCCESS, source the port's
		q(fibLookupSkipNeigh, 2, "2001:db8:0:3::9", 0),              // SUCCESS, connected
		q(fibLookupDirect, 2, "2001:db8:100:9::1", 1301),            // FRAG_NEEDED (route MTU)
		q(0, 2, "2001:db8:100::1", 1401),                            // FRAG_NEEDED (port MTU)
		q(0, 2, "2001:db8:dead::1", 0),                              // BLACKHOLE
		q(0, 2, "2001:db8:beef::1", 0),                              // UNREACHABLE
		q(fibLookupMark, 2, "2001:db8:bad::1", 0),                   // PROHIBIT
		q(0, 2, "2001:db8:0:2::1", 0),                               // NOT_FWDED: local
		q(0, 2, "2001:db8:1::7", 0),                                 // NOT_FWDED: local table
		q(fibLookupDirect, 2, "2001:db8:1::7", 0),                   // NOT_FWDED: DIRECT skips local
		q(0, 2, "2a00::1", 0),                                       // SUCCESS: table default
		q(fibLookupDirect, 2, "2a00::1", 0),                         // NOT_FWDED: not in main
		q(0, 2, "ff02::1", 0),                                       // NOT_FWDED: multicast
		q(0, 2, "::1", 0),                                           // NOT_FWDED: loopback
		q(0, 2, "::2", 0),                                           // NOT_FWDED: no route
		q(0, 4, "fe80::1", 0),                                       // NOT_FWDED: link-local, before the port
		q(0, 3, "2001:db8:100::1", 0),                               // FWD_DISABLED
		q(0, 4, "2001:db8:100::1", 0),                               // -ENODEV
		q(0, smallIfindex+1, "2001:db8:100::1", 0),                  // -ENODEV
	}
	want := []int64{0, 7, 0, 0, 8, 8, 1, 2, 3, 4, 4, 4, 0, 4, 4, 4, 4, 4, 5, -19, -19}
	// Directly connected hosts: every other one has a neighbour entry, so
	// that probes of the neighbour table collide, find and miss.
	for i := range 80 {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 3, 15: byte(i + 4)})
		if i%2 == 0 {
			f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: 3, IP: a, MAC: [6]byte{2, 0xcc, 0, 0, 1, byte(i)}})
			want = append(want, fibRetSuccess)
		} else {
			want = append(want, fibRetNoNeigh)
		}
		frs = append(frs, q(0, 2, a.String(), 0))
	}
	g.setFIB(t, f)
	for _, name := range []string{"fst", "fpkt"} {
		toGo := g.diff(t, name, frs)
		if name == "fst" && toGo != 0 {
			t.Errorf("%s: %d frames answered in Go, want none", name, toGo)
		}
		for i, fr := range frs {
			out := g.one(g.rj, g.progJ[name], fr)
			if got := int64(binary.LittleEndian.Uint64(out.frame[72:])); got != want[i] {
				t.Errorf("%s frame %d: %d, want %d", name, i, got, want[i])
			}
		}
	}
	// Without a table, IPv6 lookups still answer natively.
	g.setFIB(t, nil)
	if toGo := g.diff(t, "fst", frs); toGo != 0 {
		t.Errorf("no FIB: %d frames answered in Go, want none", toGo)
	}
	fr := newFrame(frs[0])
	if n := testing.AllocsPerRun(200, func() { resetFrame(fr, frs[0]); g.rj.Run(g.progJ["fst"], fr) }); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

// TestJITFIBSetRace: lookups while another goroutine replaces the table
// over and over give each frame the answer of one table or the other,
// never a mix, in bursts and run by run.
func TestJITFIBSetRace(t *testing.T) {
	needJIT(t)
	g := newFIBNatRig(t)
	rng := rand.New(rand.NewPCG(5, 21))
	bases := []uint32{0xc0a80000, 0x0a000000}
	fa, fb := randNatFIB(rng, bases), randNatFIB(rng, bases)
	host, host6 := fibRaceHost(fa, fb)
	frs := make([][]byte, jitBurstMax)
	for i := range frs {
		frs[i] = randFIBFrame(rng, fa, bases)
		if i%2 == 1 {
			frs[i] = randFIBFrame(rng, fb, bases)
		}
		switch i % 8 {
		case 0:
			frs[i] = host
		case 4:
			frs[i] = host6
		}
	}
	answers := func(f *FIB) []fibOutcome {
		g.setFIB(t, f)
		out := make([]fibOutcome, len(frs))
		for i, fr := range frs {
			out[i] = g.one(g.ri, g.progI["fst"], fr)
		}
		return out
	}
	wa, wb := answers(fa), answers(fb)
	for _, i := range []int{0, 4} {
		if len(wa[i].frame) != 88 || len(wb[i].frame) != 88 || bytes.Equal(wa[i].frame, wb[i].frame) ||
			binary.LittleEndian.Uint64(wa[i].frame[72:]) != fibRetSuccess || binary.LittleEndian.Uint64(wb[i].frame[72:]) != fibRetSuccess {
			t.Fatalf("the host's lookup %d, want two different successes: %x %x", i, wa[i].frame, wb[i].frame)
		}
	}
	// The tables compiled once, stored as SetFIB stores them: a new table
	// every few lookups.
	ta, err := compileFIB(fa)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := compileFIB(fb)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tab := ta
			if i%2 == 1 {
				tab = tb
			}
			g.cj.fib.Store(tab)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	pj := g.progJ["fst"]
	verdicts := make([]Action, len(frs))
	rounds := 400
	if testing.Short() {
		rounds = 150
	}
	for range rounds {
		g.framesB = g.framesB[:0]
		for _, fr := range frs {
			g.framesB = append(g.framesB, *newFrame(fr))
		}
		g.rb.RunBurst(pj, g.framesB, verdicts, nil)
		for i := range frs {
			f := &g.framesB[i]
			got := f.Buf[f.Data:f.DataEnd]
			if !(verdicts[i] == wa[i].verdict && bytes.Equal(got, wa[i].frame)) && !(verdicts[i] == wb[i].verdict && bytes.Equal(got, wb[i].frame)) {
				t.Fatalf("frame %d: %v %x, neither table's answer:\n%v %x\n%v %x", i, verdicts[i], got, wa[i].verdict, wa[i].frame, wb[i].verdict, wb[i].frame)
			}
			o := g.one(g.rj, pj, frs[i])
			if !(o.verdict == wa[i].verdict && bytes.Equal(o.frame, wa[i].frame)) && !(o.verdict == wb[i].verdict && bytes.Equal(o.frame, wb[i].frame)) {
				t.Fatalf("frame %d run alone: %v %x, neither table's answer", i, o.verdict, o.frame)
			}
		}
	}
}

// fibRaceHost gives fa and fb an IPv4 and an IPv6 host (the IPv6 one as
// a /128 in table local, which the rules visit first, longest prefix
// first) that each routes directly through a port of its own, with a
// neighbour there, and returns
// the frames looking them up: a record of one table with the neighbours
// of the other (a lookup that loaded the table pointer twice) finds no
// neighbour, neither table's answer.
func fibRaceHost(fa, fb *FIB) (v4, v6 []byte) {
	host, host6 := netip.MustParseAddr("10.200.0.5"), netip.MustParseAddr("2001:db9:200::5")
	for i, f := range []*FIB{fa, fb} {
		port := uint32(100 + i)
		f.Interfaces = append(f.Interfaces, FIBInterface{Ifindex: 99, Forwarding: true, Forwarding6: true},
			FIBInterface{Ifindex: port, MAC: [6]byte{2, 7, 7, 7, 7, byte(i)}})
		f.Routes = append(f.Routes, FIBRoute{Dst: netip.MustParsePrefix("10.200.0.0/16"), Ifindex: port},
			FIBRoute{Dst: netip.PrefixFrom(host6, 128), Ifindex: port, Table: TableLocal})
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: port, IP: host, MAC: [6]byte{2, 8, 8, 8, 8, byte(i)}},
			FIBNeighbour{Ifindex: port, IP: host6, MAC: [6]byte{2, 6, 6, 6, 6, byte(i)}})
	}
	query := func(family byte, a netip.Addr) []byte {
		fr := make([]byte, 88)
		binary.LittleEndian.PutUint32(fr[4:], 64)
		copy(fr[8:], fibParams(family, 99, a, 0))
		fr[80] = 64
		return fr
	}
	return query(afInet, host), query(afInet6, host6)
}

// TestJITFIBManyCalls: a program of lookups, fewer slots than the arm64
// backend's long branches start at, whose code passes B.cond's 1 MiB
// reach there (a native lookup is hundreds of instructions): the first
// call goes to Go (plen 63) through its slow-path exit, past every other
// lookup's code, and gives Go's -EINVAL; the others answer natively
// (-ENODEV, no table).
func TestJITFIBManyCalls(t *testing.T) {
	needJIT(t)
	const n = 1500
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R3, 0)}
	for i := int16(0); i < 64; i += 8 {
		insns = append(insns, asm.StoreMem(asm.R10, -64+i, asm.R3, asm.DWord))
	}
	insns = append(insns, asm.Mov.Imm(asm.R3, afInet6), asm.StoreMem(asm.R10, -64, asm.R3, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -64), asm.Mov.Imm(asm.R3, 63), asm.Mov.Imm(asm.R4, 0),
		asm.FnFibLookup.Call(), asm.Mov.Reg(asm.R7, asm.R0), asm.Mov.Imm(asm.R3, 64))
	for range n - 1 {
		insns = append(insns, asm.FnFibLookup.Call())
	}
	insns = append(insns, asm.JNE.Imm(asm.R7, -22, "bad"), asm.JNE.Imm(asm.R0, -19, "bad"),
		asm.Mov.Imm(asm.R0, 2), asm.Return(), asm.Mov.Imm(asm.R0, 1).WithSymbol("bad"), asm.Return())
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"many": {Name: "many", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns}}}
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p := mustProg(t, c, "many")
		if j := p.jit.Load(); e == EngineJIT && nativeFIBArch && j.native != n {
			t.Fatalf("%d lookups native, want %d", j.native, n)
		}
		r := NewRunner(0)
		if v := r.Run(p, newFrame(make([]byte, 64))); v != ActionPass {
			t.Errorf("%v: %v, %v", e, v, r.Fault())
		}
	}
}
