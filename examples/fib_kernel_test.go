package examples

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os/exec"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// TestFIBRouterMatchesKernel runs xdp_fib_router on the differential test's
// frames in a network namespace whose routes and neighbours match an xnic
// FIB, and requires the kernel's verdicts, output frames (TTL, checksum,
// MACs) and fib_results counts.
func TestFIBRouterMatchesKernel(t *testing.T) {
	needKernel(t)
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	dev, peer := uint32(ns.DevIndex), uint32(ns.PeerIndex)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns.Name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("link", "set", kernelxdp.NetnsDev, "address", "02:00:00:00:00:01")
	run("link", "set", kernelxdp.NetnsPeer, "address", "02:00:00:00:00:02")
	run("link", "set", kernelxdp.NetnsPeer, "mtu", "1400")
	run("addr", "add", "10.1.0.1/16", "dev", kernelxdp.NetnsDev)
	run("addr", "add", "10.2.0.1/24", "dev", kernelxdp.NetnsPeer)
	if out, err := exec.Command("ip", "netns", "exec", ns.Name, "sysctl", "-qw", "net.ipv4.conf."+kernelxdp.NetnsDev+".forwarding=1").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v: %s", err, out)
	}
	run("route", "add", "192.168.0.0/16", "via", "10.2.0.2", "dev", kernelxdp.NetnsPeer)
	run("route", "add", "blackhole", "172.16.0.0/12")
	run("route", "add", "default", "via", "10.2.0.3", "dev", kernelxdp.NetnsPeer)
	run("neigh", "add", "10.2.0.2", "lladdr", "02:aa:00:00:00:02", "dev", kernelxdp.NetnsPeer, "nud", "permanent")
	run("neigh", "add", "10.1.2.3", "lladdr", "02:aa:00:00:00:03", "dev", kernelxdp.NetnsDev, "nud", "permanent")
	fib := &bpf.FIB{
		Interfaces: []bpf.FIBInterface{
			{Ifindex: dev, MAC: [6]byte{2, 0, 0, 0, 0, 1}, MTU: 1500, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/16")}},
			{Ifindex: peer, MAC: [6]byte{2, 0, 0, 0, 0, 2}, MTU: 1400, Addrs: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24")}},
		},
		Routes: []bpf.FIBRoute{
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("10.2.0.2"), Ifindex: peer},
			{Dst: netip.MustParsePrefix("172.16.0.0/12"), Type: bpf.RouteBlackhole},
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.2.0.3"), Ifindex: peer},
			// The namespace's lo: local 127.0.0.0/8 dev lo (ifindex 1).
			{Table: bpf.TableLocal, Dst: netip.MustParsePrefix("127.0.0.0/8"), Type: bpf.RouteLocal, Ifindex: 1},
		},
		Neighbours: []bpf.FIBNeighbour{
			{Ifindex: peer, IP: netip.MustParseAddr("10.2.0.2"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 2}},
			{Ifindex: dev, IP: netip.MustParseAddr("10.1.2.3"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 3}},
		},
	}
	var k *kernelxdp.Object
	if err := ns.Do(func() (err error) { k, err = kernelxdp.Load(objPath("xdp_fib_router"), nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	x, err := bpf.LoadFile(objPath("xdp_fib_router"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.SetFIB(fib); err != nil {
		t.Fatal(err)
	}
	p, err := x.Program("xdp_fib_router")
	if err != nil {
		t.Fatal(err)
	}
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
	for i, fr := range frames {
		var kr kernelxdp.Result
		err := ns.Do(func() (err error) {
			kr, err = k.Run("xdp_fib_router", kernelxdp.Input{Frame: fr, IngressIfindex: dev})
			return err
		})
		if err != nil {
			continue // the kernel refuses the input (too short): nothing to compare
		}
		verdicts[kr.Verdict]++
		clear(buf)
		copy(buf[headroom:], fr)
		f := bpf.Frame{Buf: buf, DataMeta: headroom, Data: headroom, DataEnd: headroom + len(fr), IngressIfindex: dev}
		got := r.Run(p, &f)
		if uint32(got) != kr.Verdict || !bytes.Equal(buf[f.Data:f.DataEnd], kr.Frame) {
			t.Fatalf("frame %d %x:\n kernel %d %x\n xnic   %v %x", i, fr, kr.Verdict, kr.Frame, got, buf[f.Data:f.DataEnd])
		}
		if got == bpf.ActionRedirect && r.Redirect().Ifindex != peer && r.Redirect().Ifindex != dev {
			t.Fatalf("frame %d: redirect to %d", i, r.Redirect().Ifindex)
		}
	}
	km, _ := k.Map("fib_results")
	xm, _ := x.Map("fib_results")
	for rc := range uint32(11) {
		var kv uint64
		if err := km.Lookup(rc, &kv); err != nil {
			t.Fatal(err)
		}
		xv := binary.LittleEndian.Uint64(xm.Lookup(binary.LittleEndian.AppendUint32(nil, rc), 0))
		if kv != xv {
			t.Errorf("fib_results[%d]: kernel %d, xnic %d", rc, kv, xv)
		}
	}
	t.Logf("%d frames, kernel verdicts %v", len(frames), verdicts)
	if verdicts[4] == 0 || verdicts[1] == 0 || verdicts[2] == 0 {
		t.Errorf("verdicts %v: want redirects, drops and passes", verdicts)
	}
}
