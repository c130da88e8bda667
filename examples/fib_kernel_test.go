package examples

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"os/exec"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// fibRouter is xdp_fib_router loaded on both sides with the same forwarding
// state: in the kernel, a network namespace whose veth pair has addresses,
// routes and neighbours; in xnic, a bpf.FIB that holds the same. The
// kernel's side runs in ns (through ns.Do) with ingress_ifindex dev.
type fibRouter struct {
	ns        *kernelxdp.Netns
	dev, peer uint32
	k         *kernelxdp.Object
	kp        *ebpf.Program
	x         *bpf.Collection
	xp        *bpf.Program
}

// Addresses of openFIBRouter's namespace: 192.168.0.0/16 goes via
// fibGateway (neighbour fibGatewayMAC) out of the peer veth, whose MAC is
// fibPeerMAC.
var (
	fibGateway    = netip.MustParseAddr("10.2.0.2")
	fibGatewayMAC = [6]byte{2, 0xaa, 0, 0, 0, 2}
	fibPeerMAC    = [6]byte{2, 0, 0, 0, 0, 2}
)

// openFIBRouter builds both sides; everything is released when tb ends.
func openFIBRouter(tb testing.TB) *fibRouter {
	tb.Helper()
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ns.Close() })
	dev, peer := uint32(ns.DevIndex), uint32(ns.PeerIndex)
	run := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns.Name}, args...)...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("link", "set", kernelxdp.NetnsDev, "address", "02:00:00:00:00:01")
	run("link", "set", kernelxdp.NetnsPeer, "address", net.HardwareAddr(fibPeerMAC[:]).String())
	run("link", "set", kernelxdp.NetnsPeer, "mtu", "1400")
	run("addr", "add", "10.1.0.1/16", "dev", kernelxdp.NetnsDev)
	run("addr", "add", "10.2.0.1/24", "dev", kernelxdp.NetnsPeer)
	if out, err := exec.Command("ip", "netns", "exec", ns.Name, "sysctl", "-qw", "net.ipv4.conf."+kernelxdp.NetnsDev+".forwarding=1").CombinedOutput(); err != nil {
		tb.Fatalf("sysctl: %v: %s", err, out)
	}
	run("route", "add", "192.168.0.0/16", "via", fibGateway.String(), "dev", kernelxdp.NetnsPeer)
	run("route", "add", "blackhole", "172.16.0.0/12")
	run("route", "add", "default", "via", "10.2.0.3", "dev", kernelxdp.NetnsPeer)
	run("neigh", "add", fibGateway.String(), "lladdr", net.HardwareAddr(fibGatewayMAC[:]).String(), "dev", kernelxdp.NetnsPeer, "nud", "permanent")
	run("neigh", "add", "10.1.2.3", "lladdr", "02:aa:00:00:00:03", "dev", kernelxdp.NetnsDev, "nud", "permanent")
	fib := &bpf.FIB{
		Interfaces: []bpf.FIBInterface{
			{Ifindex: dev, MAC: [6]byte{2, 0, 0, 0, 0, 1}, MTU: 1500, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/16")}},
			{Ifindex: peer, MAC: fibPeerMAC, MTU: 1400, Addrs: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24")}},
		},
		Routes: []bpf.FIBRoute{
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: fibGateway, Ifindex: peer},
			{Dst: netip.MustParsePrefix("172.16.0.0/12"), Type: bpf.RouteBlackhole},
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.2.0.3"), Ifindex: peer},
			// The namespace's lo: local 127.0.0.0/8 dev lo (ifindex 1).
			{Table: bpf.TableLocal, Dst: netip.MustParsePrefix("127.0.0.0/8"), Type: bpf.RouteLocal, Ifindex: 1},
		},
		Neighbours: []bpf.FIBNeighbour{
			{Ifindex: peer, IP: fibGateway, MAC: fibGatewayMAC},
			{Ifindex: dev, IP: netip.MustParseAddr("10.1.2.3"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 3}},
		},
	}
	fr := &fibRouter{ns: ns, dev: dev, peer: peer}
	if err := ns.Do(func() (err error) { fr.k, err = kernelxdp.Load(objPath("xdp_fib_router"), nil); return err }); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fr.k.Close() })
	if fr.kp, err = fr.k.Program("xdp_fib_router"); err != nil {
		tb.Fatal(err)
	}
	if fr.x, err = bpf.LoadFile(objPath("xdp_fib_router"), &bpf.Options{NumCPU: 1}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fr.x.Close() })
	if err := fr.x.SetFIB(fib); err != nil {
		tb.Fatal(err)
	}
	if fr.xp, err = fr.x.Program("xdp_fib_router"); err != nil {
		tb.Fatal(err)
	}
	return fr
}

// fibResultsLen is how many return codes fib_results counts (0..9, and 10:
// not looked up).
const fibResultsLen = 11

// results reads fib_results on both sides.
func (fr *fibRouter) results(tb testing.TB) (kernel, xnic [fibResultsLen]uint64) {
	tb.Helper()
	km, err := fr.k.Map("fib_results")
	if err != nil {
		tb.Fatal(err)
	}
	xm, err := fr.x.Map("fib_results")
	if err != nil {
		tb.Fatal(err)
	}
	for rc := range uint32(fibResultsLen) {
		if err := km.Lookup(rc, &kernel[rc]); err != nil {
			tb.Fatal(err)
		}
		xnic[rc] = binary.LittleEndian.Uint64(xm.Lookup(u32le(rc), 0))
	}
	return kernel, xnic
}

// TestFIBRouterMatchesKernel runs xdp_fib_router on the differential test's
// frames in a network namespace whose routes and neighbours match an xnic
// FIB, and requires the kernel's verdicts, output frames (TTL, checksum,
// MACs) and fib_results counts.
func TestFIBRouterMatchesKernel(t *testing.T) {
	needKernel(t)
	fr := openFIBRouter(t)
	ns, dev, peer, k, p := fr.ns, fr.dev, fr.peer, fr.k, fr.xp
	r := bpf.NewRunner(0)
	g := newFrameGen(77)
	frames := craftedFrames(g)
	n := diffFrames
	if testing.Short() {
		n = diffFramesShort
	}
	for range n {
		frames = append(frames, g.next())
	}
	verdicts := map[uint32]int{}
	buf := make([]byte, bufSize)
	for i, in := range frames {
		var kr kernelxdp.Result
		err := ns.Do(func() (err error) {
			kr, err = k.Run("xdp_fib_router", kernelxdp.Input{Frame: in, IngressIfindex: dev})
			return err
		})
		if err != nil {
			continue // the kernel refuses the input (too short): nothing to compare
		}
		verdicts[kr.Verdict]++
		clear(buf)
		copy(buf[headroom:], in)
		f := bpf.Frame{Buf: buf, DataMeta: headroom, Data: headroom, DataEnd: headroom + len(in), IngressIfindex: dev}
		got := r.Run(p, &f)
		if uint32(got) != kr.Verdict || !bytes.Equal(buf[f.Data:f.DataEnd], kr.Frame) {
			t.Fatalf("frame %d %x:\n kernel %d %x\n xnic   %v %x", i, in, kr.Verdict, kr.Frame, got, buf[f.Data:f.DataEnd])
		}
		if got == bpf.ActionRedirect && r.Redirect().Ifindex != peer && r.Redirect().Ifindex != dev {
			t.Fatalf("frame %d: redirect to %d", i, r.Redirect().Ifindex)
		}
	}
	kc, xc := fr.results(t)
	for rc := range kc {
		if kc[rc] != xc[rc] {
			t.Errorf("fib_results[%d]: kernel %d, xnic %d", rc, kc[rc], xc[rc])
		}
	}
	t.Logf("%d frames, kernel verdicts %v", len(frames), verdicts)
	if verdicts[4] == 0 || verdicts[1] == 0 || verdicts[2] == 0 {
		t.Errorf("verdicts %v: want redirects, drops and passes", verdicts)
	}
}
