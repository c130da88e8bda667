package dwmac_test

import (
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// reflect is a program that sends every frame back out (XDP_TX).
type reflect struct{}

func (reflect) Run(*bpf.Frame) bpf.Action { return bpf.ActionTX }
func (reflect) Redirect() bpf.Redirect    { return bpf.Redirect{} }
func (reflect) Fault() error              { return nil }
func newReflect(int) dataplane.Runner     { return reflect{} }

// TestTxClockEngineLinkChange (d, through the dataplane): an engine
// reflects frames on the EQOS at 1000 Mb/s; the PHY is then forced to 100.
// The engine's link monitor (Link every 100 ms) meets the change: with the
// clock fixed, its snapshot shows the link down with the clock's refusal and
// nothing reaches the wire (the model would log a garbled frame otherwise);
// with clk_rate writable the clock goes to 25 MHz and frames are reflected
// at 100.
func TestTxClockEngineLinkChange(t *testing.T) {
	for _, writable := range []bool{false, true} {
		name := map[bool]string{false: "fixed", true: "writable"}[writable]
		t.Run(name, func(t *testing.T) {
			b, _ := clockBoard(t, "rgmii-id", writable)
			r := clockRig(t, b, false)
			if l, err := r.p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
				t.Fatalf("link %+v, %v", l, err)
			}
			r.p.SetPromisc(true)
			e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: r.p}}, Program: dataplane.ProgramFunc(newReflect)})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			f := make([]byte, 100)
			copy(f, []byte{2, 1, 1, 1, 1, 1, 2, 9, 9, 9, 9, 9})
			r.wire.Send(f)
			if !nic.Poll(5*time.Second, 2*time.Millisecond, func() bool { return len(r.sent()) == 1 }) {
				t.Fatalf("%d frames reflected at 1000", len(r.sent()))
			}
			r.m.PHY().Write(sim.MIIBMCR, sim.BMCRSpeed100|sim.BMCRFullDplx)
			if writable {
				if !nic.Poll(5*time.Second, 2*time.Millisecond, func() bool { return b.ClockRate("enet_qos") == 25_000_000 }) {
					t.Fatalf("TX clock still at %d Hz after the link went to 100", b.ClockRate("enet_qos"))
				}
				// The monitor sets the clock, then the MAC's speed: frames
				// sent in between may be lost (as on a board while the link
				// changes), so wait for the port to report 100 Mb/s up.
				if !nic.Poll(5*time.Second, 2*time.Millisecond, func() bool {
					l := e.Snapshot().Ports[0].Link
					return l.Up && l.SpeedMbps == 100
				}) {
					t.Fatalf("snapshot %+v: want the link up at 100 Mb/s", e.Snapshot().Ports[0])
				}
			} else if !nic.Poll(5*time.Second, 2*time.Millisecond, func() bool {
				ps := e.Snapshot().Ports[0]
				return !ps.Link.Up && strings.Contains(ps.LinkProblem, "enet_qos")
			}) {
				t.Fatalf("snapshot %+v: want the link down with the TX clock's refusal", e.Snapshot().Ports[0])
			}
			for range 3 {
				r.wire.Send(f)
			}
			want := 1
			if writable {
				want = 4
			}
			nic.Poll(5*time.Second, 2*time.Millisecond, func() bool { return len(r.sent()) >= want })
			time.Sleep(50 * time.Millisecond)
			if n := len(r.sent()); n != want {
				t.Fatalf("%d frames on the wire after the change to 100, want %d", n, want)
			}
			if err := e.Stop(); err != nil {
				t.Fatal(err)
			}
			r.checkModel()
		})
	}
}
