package dataplane_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/tap"
)

// passProgram returns XDP_PASS for every frame.
func passProgram(t testing.TB) *bpf.Program {
	t.Helper()
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"xdp_pass": {Name: "xdp_pass", Type: ebpf.XDP, SectionName: "xdp", License: "MIT",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(bpf.ActionPass)), asm.Return()}},
	}, Maps: map[string]*ebpf.MapSpec{}}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("xdp_pass")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestTAPWithLinuxStack puts the Linux stack on both sides of a simulated igb
// port: a network namespace whose TAP is the port's link partner (the wire),
// and another whose TAP is the port's exception path (XDP_PASS). Pings from
// the partner reach the address behind xnic only through the program's
// XDP_PASS and come back through the TAP and the port's TX ring.
func TestTAPWithLinuxStack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (TAP devices and network namespaces): skipped")
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (iproute2, iputils-ping): skipped", tool)
		}
	}
	id := os.Getpid() % 100000
	peerNS, hostNS := fmt.Sprintf("xnp%d", id), fmt.Sprintf("xnh%d", id)
	sh(t, "ip", "netns", "add", peerNS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", peerNS).Run() })
	sh(t, "ip", "netns", "add", hostNS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", hostNS).Run() })

	b := newIGBBed(t, 1, false)
	port := b.ports[0]
	peer, err := tap.Open(fmt.Sprintf("xpeer%d", id))
	if err != nil {
		t.Fatal(err)
	}
	host, err := tap.Open(fmt.Sprintf("xnic%d", id))
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	if err := host.SetMAC(port.MAC()); err != nil {
		t.Fatal(err)
	}
	sh(t, "ip", "link", "set", peer.Name(), "netns", peerNS)
	sh(t, "ip", "link", "set", host.Name(), "netns", hostNS)
	sh(t, "ip", "-n", peerNS, "addr", "add", "10.77.0.1/24", "dev", peer.Name())
	sh(t, "ip", "-n", peerNS, "link", "set", peer.Name(), "up")
	sh(t, "ip", "-n", hostNS, "addr", "add", "10.77.0.2/24", "dev", host.Name())
	sh(t, "ip", "-n", hostNS, "link", "set", host.Name(), "up")

	// The wire: what the partner's kernel sends arrives at the port (padded
	// to the 60-byte minimum, as a MAC pads); what the port sends goes to the
	// partner's kernel.
	b.models[0].SetTransmit(func(f []byte) { _ = peer.Deliver(f) })
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			select {
			case <-quit:
				return
			default:
			}
			n, err := peer.ReadFrame(buf, 50*time.Millisecond)
			if err != nil {
				return
			}
			if n > 0 {
				if n < 60 {
					clear(buf[n:60])
					n = 60
				}
				b.models[0].Inject(buf[:n])
			}
		}
	}()
	defer func() {
		close(quit)
		wg.Wait()
		peer.Close()
		host.Close()
		b.Close(t)
	}()

	run := func(p *bpf.Program) *dataplane.Engine {
		e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: port, Stack: host}}, Program: dataplane.BPF(p)})
		return e
	}
	ping := func(args ...string) (string, error) {
		a := append([]string{"netns", "exec", peerNS, "ping", "-n"}, args...)
		out, err := exec.Command("ip", a...).CombinedOutput()
		return string(out), err
	}

	t.Run("pass", func(t *testing.T) {
		e := run(passProgram(t))
		out, err := ping("-c", "3", "-i", "0.2", "-W", "2", "10.77.0.2")
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
		if err != nil || !strings.Contains(out, "3 received") {
			t.Fatalf("ping through XDP_PASS: %v\n%s", err, out)
		}
		c := e.Snapshot().Ports[0].Counters
		if c[dataplane.RxXDPPass] < 4 || c[dataplane.TxStack] < 4 || c[dataplane.RxXDPPassErrors] != 0 {
			t.Errorf("counters %v: want the ARP and echo requests passed and the replies sent from the stack", c.Map())
		}
	})
	t.Run("adjust_tail", func(t *testing.T) {
		c := loadExample(t, "xdp_adjust_tail", 2)
		e := run(mustProg(t, c, "xdp_adjust_tail"))
		defer e.Stop()
		out, err := ping("-c", "2", "-i", "0.2", "-W", "2", "-s", "300", "-M", "do", "10.77.0.2")
		if err != nil || !strings.Contains(out, "2 received") {
			t.Fatalf("300-byte ping: %v\n%s", err, out)
		}
		out, _ = ping("-c", "1", "-W", "2", "-s", "500", "-M", "do", "10.77.0.2")
		if !strings.Contains(out, "Frag needed and DF set (mtu = 386)") {
			t.Fatalf("500-byte ping: want \"Frag needed and DF set (mtu = 386)\":\n%s", out)
		}
		t.Logf("500-byte ping:\n%s", out)
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
		cs := e.Snapshot().Ports[0].Counters
		if cs[dataplane.RxXDPTx] != 1 || cs[dataplane.TxPackets] < 1 {
			t.Errorf("counters %v: want one XDP_TX (the ICMP error)", cs.Map())
		}
	})
}
