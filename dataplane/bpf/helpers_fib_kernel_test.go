package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// fibSpec is an XDP program that copies the struct bpf_fib_lookup at
// data[8:72] to its stack, calls bpf_fib_lookup(ctx, &params, 64, flags)
// with the u32 flags at data[0:4], and writes the struct back and the
// return value (u64) at data[72:80].
func fibSpec() *ebpf.CollectionSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 80),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
	}
	for i := int16(0); i < 64; i += 8 {
		insns = append(insns, asm.LoadMem(asm.R3, asm.R7, 8+i, asm.DWord), asm.StoreMem(asm.R10, -64+i, asm.R3, asm.DWord))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -64),
		asm.Mov.Imm(asm.R3, 64),
		asm.LoadMem(asm.R4, asm.R7, 0, asm.Word),
		asm.FnFibLookup.Call(),
		asm.StoreMem(asm.R7, 72, asm.R0, asm.DWord),
	)
	for i := int16(0); i < 64; i += 8 {
		insns = append(insns, asm.LoadMem(asm.R3, asm.R10, -64+i, asm.DWord), asm.StoreMem(asm.R7, 8+i, asm.R3, asm.DWord))
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"fib": {Name: "fib", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

func nsIP(t *testing.T, ns *kernelxdp.Netns, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns.Name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

func nsSysctl(t *testing.T, ns *kernelxdp.Netns, kv string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns.Name, "sysctl", "-qw", kv).CombinedOutput()
	if err != nil {
		t.Fatalf("sysctl %s: %v: %s", kv, err, out)
	}
}

var (
	macDev  = [6]byte{2, 0, 0, 0, 0, 1}
	macPeer = [6]byte{2, 0, 0, 0, 0, 2}
)

// fibNeighbours: (on dev?, address, MAC).
var fibNeighbours = []struct {
	onDev bool
	ip    string
	mac   [6]byte
}{
	{false, "10.2.0.2", [6]byte{2, 0xaa, 0, 0, 0, 2}},
	{true, "10.1.0.9", [6]byte{2, 0xaa, 0, 0, 0, 9}},
	{true, "10.1.0.5", [6]byte{2, 0xaa, 0, 0, 0, 5}},
	{false, "198.51.100.7", [6]byte{2, 0xaa, 0, 0, 1, 7}},
}

// fibNetns configures the namespace and returns the same configuration as
// an xnic FIB.
func fibNetns(t *testing.T, ns *kernelxdp.Netns) *FIB {
	dev, peer := uint32(ns.DevIndex), uint32(ns.PeerIndex)
	nsIP(t, ns, "link", "set", kernelxdp.NetnsDev, "address", "02:00:00:00:00:01")
	nsIP(t, ns, "link", "set", kernelxdp.NetnsPeer, "address", "02:00:00:00:00:02")
	nsIP(t, ns, "link", "set", kernelxdp.NetnsPeer, "mtu", "1400")
	nsIP(t, ns, "addr", "add", "10.1.0.1/24", "dev", kernelxdp.NetnsDev)
	nsIP(t, ns, "addr", "add", "10.2.0.1/24", "dev", kernelxdp.NetnsPeer)
	nsSysctl(t, ns, "net.ipv4.conf."+kernelxdp.NetnsDev+".forwarding=1")
	for _, r := range [][]string{
		{"192.168.0.0/16", "via", "10.2.0.2", "dev", kernelxdp.NetnsPeer, "metric", "5"},
		{"192.168.0.0/16", "via", "10.1.0.9", "dev", kernelxdp.NetnsDev, "metric", "10"},
		{"192.168.7.0/24", "via", "10.1.0.9", "dev", kernelxdp.NetnsDev},
		{"blackhole", "172.16.0.0/12"},
		{"unreachable", "172.20.0.0/16"},
		{"prohibit", "172.30.0.0/16"},
		{"198.51.100.0/24", "dev", kernelxdp.NetnsPeer, "mtu", "lock", "1300"},
		{"198.51.101.0/24", "dev", kernelxdp.NetnsPeer, "mtu", "1200"},
		{"203.0.113.0/24", "via", "10.2.0.3", "dev", kernelxdp.NetnsPeer, "src", "10.1.0.1"},
		{"default", "via", "10.2.0.2", "dev", kernelxdp.NetnsPeer, "table", "100"},
	} {
		nsIP(t, ns, append([]string{"route", "add"}, r...)...)
	}
	f := &FIB{
		Interfaces: []FIBInterface{
			{Ifindex: dev, MAC: macDev, MTU: 1500, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24")}},
			{Ifindex: peer, MAC: macPeer, MTU: 1400, Addrs: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24")}},
		},
		Routes: []FIBRoute{
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("10.2.0.2"), Ifindex: peer, Metric: 5},
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("10.1.0.9"), Ifindex: dev, Metric: 10},
			{Dst: netip.MustParsePrefix("192.168.7.0/24"), Gateway: netip.MustParseAddr("10.1.0.9"), Ifindex: dev},
			{Dst: netip.MustParsePrefix("172.16.0.0/12"), Type: RouteBlackhole},
			{Dst: netip.MustParsePrefix("172.20.0.0/16"), Type: RouteUnreachable},
			{Dst: netip.MustParsePrefix("172.30.0.0/16"), Type: RouteProhibit},
			{Dst: netip.MustParsePrefix("198.51.100.0/24"), Ifindex: peer, MTU: 1300},
			{Dst: netip.MustParsePrefix("198.51.101.0/24"), Ifindex: peer}, // unlocked MTU: ignored
			{Dst: netip.MustParsePrefix("203.0.113.0/24"), Gateway: netip.MustParseAddr("10.2.0.3"), Ifindex: peer, Src: netip.MustParseAddr("10.1.0.1")},
			{Table: 100, Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.2.0.2"), Ifindex: peer},
		},
	}
	for _, n := range fibNeighbours {
		name, idx := kernelxdp.NetnsPeer, peer
		if n.onDev {
			name, idx = kernelxdp.NetnsDev, dev
		}
		mac := fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", n.mac[0], n.mac[1], n.mac[2], n.mac[3], n.mac[4], n.mac[5])
		nsIP(t, ns, "neigh", "add", n.ip, "lladdr", mac, "dev", name, "nud", "permanent")
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: idx, IP: netip.MustParseAddr(n.ip), MAC: n.mac})
	}
	return f
}

// fibInputs are lookups over the configured addresses, flags, ifindexes,
// tot_len and table ids, plus random bytes elsewhere in the struct.
func fibInputs(rng *rand.Rand, dev, peer uint32, n int) [][]byte {
	dsts := []string{"10.1.0.1", "10.1.0.0", "10.1.0.255", "10.1.0.5", "10.1.0.6", "10.1.0.9", "10.2.0.1", "10.2.0.2",
		"10.2.0.7", "192.168.1.1", "192.168.7.7", "172.16.1.1", "172.20.1.1", "172.30.1.1", "172.31.0.1", "198.51.100.7",
		"198.51.100.8", "198.51.101.1", "203.0.113.5", "8.8.8.8", "224.0.0.5", "255.255.255.255", "0.0.0.0", "10.2.0.255"}
	ifs := []uint32{dev, dev, dev, peer, 99, 0}
	totLens := []uint16{0, 0, 64, 1000, 1200, 1201, 1300, 1301, 1400, 1401, 1500, 1501, 9000}
	tbids := []uint32{100, 254, 255, 253, 7}
	out := make([][]byte, 0, n)
	for range n {
		f := make([]byte, 80)
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
		flags := rng.Uint32() & fibLookupMask
		if rng.IntN(20) == 0 {
			flags |= 1 << (6 + rng.IntN(26))
		}
		binary.LittleEndian.PutUint32(f[0:], flags)
		p := f[8:72]
		p[fibFamily] = afInet
		if rng.IntN(30) == 0 {
			p[fibFamily] = byte(rng.IntN(12))
		}
		binary.LittleEndian.PutUint16(p[fibTotLen:], totLens[rng.IntN(len(totLens))])
		binary.LittleEndian.PutUint32(p[fibIfindex:], ifs[rng.IntN(len(ifs))])
		dst := netip.MustParseAddr(dsts[rng.IntN(len(dsts))]).As4()
		if rng.IntN(8) == 0 {
			dst = [4]byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())}
			if dst[0] == 127 {
				dst[0] = 126 // the kernel's lo owns 127/8; xnic has no loopback port
			}
		}
		copy(p[fibDst:], dst[:])
		if rng.IntN(2) == 0 {
			binary.LittleEndian.PutUint32(p[fibVlanProto:], tbids[rng.IntN(len(tbids))])
		}
		out = append(out, f)
	}
	return out
}

// fibRig is the fib program loaded in the kernel (inside the namespace) and
// in xnic with the FIB that mirrors the namespace's tables.
type fibRig struct {
	ns *kernelxdp.Netns
	k  *kernelxdp.Object
	p  *Program
	r  *Runner
}

func newFIBRig(t *testing.T, ns *kernelxdp.Netns, fib *FIB) *fibRig {
	t.Helper()
	var k *kernelxdp.Object
	if err := ns.Do(func() (err error) { k, err = kernelxdp.LoadSpec(fibSpec(), nil); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetFIB(fib); err != nil {
		t.Fatal(err)
	}
	p, err := c.Program("fib")
	if err != nil {
		t.Fatal(err)
	}
	return &fibRig{ns: ns, k: k, p: p, r: NewRunner(0)}
}

// run runs one lookup frame in both, arriving on the namespace's device, and
// returns the kernel's return code with the frames each left.
func (g *fibRig) run(t *testing.T, in []byte) (ret int64, out, kernel []byte) {
	t.Helper()
	var kr kernelxdp.Result
	if err := g.ns.Do(func() (err error) {
		kr, err = g.k.Run("fib", kernelxdp.Input{Frame: in, IngressIfindex: uint32(g.ns.DevIndex)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	f := newFrame(in)
	f.IngressIfindex = uint32(g.ns.DevIndex)
	if got := g.r.Run(g.p, f); got != ActionPass {
		t.Fatalf("xnic: %v (%v)", got, g.r.Fault())
	}
	return int64(binary.LittleEndian.Uint64(kr.Frame[72:])), f.Buf[f.Data:f.DataEnd], kr.Frame
}

func TestFIBLookupMatchesKernel(t *testing.T) {
	needKernel(t)
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	fr := newFIBRig(t, ns, fibNetns(t, ns))
	rng := rand.New(rand.NewPCG(5, 6))
	frames := fibInputs(rng, uint32(ns.DevIndex), uint32(ns.PeerIndex), 4000)
	rets := map[int64]int{}
	bad := 0
	for _, in := range frames {
		ret, out, kout := fr.run(t, in)
		rets[ret]++
		if !bytes.Equal(out, kout) {
			t.Errorf("flags %#x in  %x\n kernel ret %d %x\n xnic   ret %d %x", binary.LittleEndian.Uint32(in), in[8:72],
				ret, kout[8:72], int64(binary.LittleEndian.Uint64(out[72:])), out[8:72])
			if bad++; bad >= 8 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d lookups, kernel return codes %v", len(frames), rets)
	for _, want := range []int64{fibRetSuccess, fibRetBlackhole, fibRetUnreachable, fibRetProhibit, fibRetNotFwded,
		fibRetFwdDisabled, fibRetNoNeigh, fibRetFragNeeded, -int64(syscall.EINVAL), -int64(syscall.ENODEV), -int64(syscall.EAFNOSUPPORT)} {
		if rets[want] == 0 {
			t.Errorf("no lookup returned %d: the inputs do not cover it", want)
		}
	}
}

// checkMTUSpec calls bpf_check_mtu(ctx, ifindex, &mtu_len, len_diff, flags)
// with the u32s at data[0:4] (mtu_len), [4:8] (ifindex), [8:12] (len_diff)
// and [12:16] (flags), and writes mtu_len back to data[0:4] and the return
// value (u64) to data[16:24].
func checkMTUSpec() *ebpf.CollectionSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 24),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R3, asm.R7, 0, asm.Word),
		asm.StoreMem(asm.R10, -8, asm.R3, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMem(asm.R2, asm.R7, 4, asm.Word),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -8),
		asm.LoadMem(asm.R4, asm.R7, 8, asm.Word),
		asm.LoadMem(asm.R5, asm.R7, 12, asm.Word),
		asm.FnCheckMtu.Call(),
		asm.StoreMem(asm.R7, 16, asm.R0, asm.DWord),
		asm.LoadMem(asm.R3, asm.R10, -8, asm.Word),
		asm.StoreMem(asm.R7, 0, asm.R3, asm.Word),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	}
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"mtu": {Name: "mtu", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

func TestCheckMTUMatchesKernel(t *testing.T) {
	needKernel(t)
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	fib := fibNetns(t, ns)
	var k *kernelxdp.Object
	if err := ns.Do(func() (err error) { k, err = kernelxdp.LoadSpec(checkMTUSpec(), nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	c, err := LoadCollectionSpec(checkMTUSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetFIB(fib); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("mtu")
	r := NewRunner(0)
	rng := rand.New(rand.NewPCG(7, 8))
	ifs := []uint32{0, 0, uint32(ns.DevIndex), uint32(ns.PeerIndex), 99}
	mtuLens := []uint32{0, 0, 0, 1400, 1401, 1500, 1501, 0xffffffff, 0x80000000}
	diffs := []int32{0, 0, 1, -1, 100, -100, 1000, -2000, 1 << 30}
	sizes := []int{24, 64, 1400, 1413, 1414, 1415, 1500, 1513, 1514, 1515, 3000}
	rets := map[int64]int{}
	for range 2000 {
		fr := make([]byte, sizes[rng.IntN(len(sizes))])
		binary.LittleEndian.PutUint32(fr[0:], mtuLens[rng.IntN(len(mtuLens))])
		binary.LittleEndian.PutUint32(fr[4:], ifs[rng.IntN(len(ifs))])
		binary.LittleEndian.PutUint32(fr[8:], uint32(diffs[rng.IntN(len(diffs))]))
		if rng.IntN(15) == 0 {
			binary.LittleEndian.PutUint32(fr[12:], 1)
		}
		var kr kernelxdp.Result
		if err := ns.Do(func() (err error) {
			kr, err = k.Run("mtu", kernelxdp.Input{Frame: fr, IngressIfindex: uint32(ns.DevIndex)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		f := newFrame(fr)
		f.IngressIfindex = uint32(ns.DevIndex)
		r.Run(p, f)
		out := f.Buf[f.Data:f.DataEnd]
		ret := int64(binary.LittleEndian.Uint64(kr.Frame[16:]))
		rets[ret]++
		if !bytes.Equal(out[:24], kr.Frame[:24]) {
			t.Fatalf("len %d in %x\n kernel %x\n xnic   %x", len(fr), fr[:24], kr.Frame[:24], out[:24])
		}
	}
	t.Logf("kernel return codes %v", rets)
	for _, want := range []int64{mtuChkRetSuccess, mtuChkRetFragNeeded, -int64(syscall.EINVAL), -int64(syscall.ENODEV)} {
		if rets[want] == 0 {
			t.Errorf("no call returned %d", want)
		}
	}
}

// fibNetns6 configures IPv6 in the namespace (no link-local addresses, no
// DAD) and returns the same configuration as an xnic FIB.
func fibNetns6(t *testing.T, ns *kernelxdp.Netns) *FIB {
	dev, peer := uint32(ns.DevIndex), uint32(ns.PeerIndex)
	for _, kv := range []string{"net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.addr_gen_mode=1", "net.ipv6.conf.default.accept_dad=0"} {
		nsSysctl(t, ns, kv)
	}
	for _, d := range []string{kernelxdp.NetnsDev, kernelxdp.NetnsPeer} {
		nsSysctl(t, ns, "net.ipv6.conf."+d+".addr_gen_mode=1")
		nsSysctl(t, ns, "net.ipv6.conf."+d+".accept_dad=0")
		nsSysctl(t, ns, "net.ipv6.conf."+d+".disable_ipv6=0")
	}
	nsIP(t, ns, "link", "set", kernelxdp.NetnsDev, "address", "02:00:00:00:00:01")
	nsIP(t, ns, "link", "set", kernelxdp.NetnsPeer, "address", "02:00:00:00:00:02")
	nsIP(t, ns, "link", "set", kernelxdp.NetnsPeer, "mtu", "1400")
	nsIP(t, ns, "-6", "addr", "add", "2001:db8:1::1/64", "dev", kernelxdp.NetnsDev, "nodad")
	nsIP(t, ns, "-6", "addr", "add", "2001:db8:2::1/64", "dev", kernelxdp.NetnsPeer, "nodad")
	nsSysctl(t, ns, "net.ipv6.conf."+kernelxdp.NetnsDev+".forwarding=1")
	for _, r := range [][]string{
		{"2001:db8:100::/48", "via", "2001:db8:2::2", "dev", kernelxdp.NetnsPeer, "metric", "5"},
		{"2001:db8:100:7::/64", "via", "2001:db8:1::9", "dev", kernelxdp.NetnsDev},
		{"blackhole", "2001:db8:dead::/48"},
		{"unreachable", "2001:db8:beef::/48"},
		{"prohibit", "2001:db8:bad::/48"},
		{"2001:db8:300::/48", "dev", kernelxdp.NetnsPeer, "mtu", "lock", "1300"},
		{"2001:db8:400::/48", "via", "2001:db8:2::3", "dev", kernelxdp.NetnsPeer},
	} {
		nsIP(t, ns, append([]string{"-6", "route", "add"}, r...)...)
	}
	f := &FIB{
		Interfaces: []FIBInterface{
			{Ifindex: dev, MAC: macDev, MTU: 1500, Forwarding6: true, Addrs: []netip.Prefix{netip.MustParsePrefix("2001:db8:1::1/64")}},
			{Ifindex: peer, MAC: macPeer, MTU: 1400, Addrs: []netip.Prefix{netip.MustParsePrefix("2001:db8:2::1/64")}},
		},
		Routes: []FIBRoute{
			{Dst: netip.MustParsePrefix("2001:db8:100::/48"), Gateway: netip.MustParseAddr("2001:db8:2::2"), Ifindex: peer, Metric: 5},
			{Dst: netip.MustParsePrefix("2001:db8:100:7::/64"), Gateway: netip.MustParseAddr("2001:db8:1::9"), Ifindex: dev, Metric: 1024},
			{Dst: netip.MustParsePrefix("2001:db8:dead::/48"), Type: RouteBlackhole, Metric: 1024},
			{Dst: netip.MustParsePrefix("2001:db8:beef::/48"), Type: RouteUnreachable, Metric: 1024},
			{Dst: netip.MustParsePrefix("2001:db8:bad::/48"), Type: RouteProhibit, Metric: 1024},
			{Dst: netip.MustParsePrefix("2001:db8:300::/48"), Ifindex: peer, MTU: 1300, Metric: 1024},
			{Dst: netip.MustParsePrefix("2001:db8:400::/48"), Gateway: netip.MustParseAddr("2001:db8:2::3"), Ifindex: peer, Metric: 1024},
		},
	}
	for _, n := range []struct {
		idx  uint32
		name string
		ip   string
		mac  [6]byte
	}{
		{peer, kernelxdp.NetnsPeer, "2001:db8:2::2", [6]byte{2, 0xbb, 0, 0, 0, 2}},
		{dev, kernelxdp.NetnsDev, "2001:db8:1::9", [6]byte{2, 0xbb, 0, 0, 0, 9}},
		{dev, kernelxdp.NetnsDev, "2001:db8:1::5", [6]byte{2, 0xbb, 0, 0, 0, 5}},
		{peer, kernelxdp.NetnsPeer, "2001:db8:300::7", [6]byte{2, 0xbb, 0, 0, 3, 7}},
	} {
		mac := fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", n.mac[0], n.mac[1], n.mac[2], n.mac[3], n.mac[4], n.mac[5])
		nsIP(t, ns, "-6", "neigh", "add", n.ip, "lladdr", mac, "dev", n.name, "nud", "permanent")
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: n.idx, IP: netip.MustParseAddr(n.ip), MAC: n.mac})
	}
	return f
}

func TestFIBLookup6MatchesKernel(t *testing.T) {
	needKernel(t)
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	fr6 := newFIBRig(t, ns, fibNetns6(t, ns))
	rng := rand.New(rand.NewPCG(21, 22))
	dsts := []string{"2001:db8:1::1", "2001:db8:1::", "2001:db8:1::5", "2001:db8:1::6", "2001:db8:2::2", "2001:db8:2::9",
		"2001:db8:100::1", "2001:db8:100:7::1", "2001:db8:dead::1", "2001:db8:beef::1", "2001:db8:bad::1",
		"2001:db8:300::7", "2001:db8:300::8", "2001:db8:400::1", "2001:db8:999::1", "::", "::1"}
	ifs := []uint32{uint32(ns.DevIndex), uint32(ns.DevIndex), uint32(ns.PeerIndex), 99}
	totLens := []uint16{0, 0, 1280, 1300, 1301, 1400, 1401, 1500, 1501}
	rets := map[int64]int{}
	for range 3000 {
		fr := make([]byte, 80)
		for i := range fr {
			fr[i] = byte(rng.Uint32())
		}
		flags := rng.Uint32() & fibLookupMask &^ fibLookupTBID // tables other than main: none here
		binary.LittleEndian.PutUint32(fr, flags)
		prm := fr[8:72]
		prm[fibFamily] = afInet6
		binary.LittleEndian.PutUint16(prm[fibTotLen:], totLens[rng.IntN(len(totLens))])
		binary.LittleEndian.PutUint32(prm[fibIfindex:], ifs[rng.IntN(len(ifs))])
		dst := netip.MustParseAddr(dsts[rng.IntN(len(dsts))]).As16()
		copy(prm[fibDst:], dst[:])
		ret, out, kout := fr6.run(t, fr)
		rets[ret]++
		if !bytes.Equal(out, kout) {
			t.Fatalf("flags %#x dst %v in %x\n kernel ret %d %x\n xnic   ret %d %x", flags, netip.AddrFrom16(dst), fr[8:72],
				ret, kout[8:72], int64(binary.LittleEndian.Uint64(out[72:])), out[8:72])
		}
	}
	t.Logf("kernel return codes %v", rets)
	for _, want := range []int64{fibRetSuccess, fibRetBlackhole, fibRetUnreachable, fibRetProhibit, fibRetNotFwded,
		fibRetFwdDisabled, fibRetNoNeigh, fibRetFragNeeded, -int64(syscall.ENODEV)} {
		if rets[want] == 0 {
			t.Errorf("no lookup returned %d", want)
		}
	}
}
