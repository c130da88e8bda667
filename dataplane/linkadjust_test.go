package dataplane_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
)

// TestFollowsLinkChange: a fec port opened with the cable out is programmed
// for 1000 Mb/s; the cable then goes into a 10/100 partner while the engine
// runs. The link monitor parks the port's queues, restarts the MAC at 100
// (fec's AdjustLink), and the MAC-swap program answers frames again. The
// model faults every frame received at a speed other than the PHY's, so an
// engine that did not follow the link fails on its fault log.
func TestFollowsLinkChange(t *testing.T) {
	m, err := fecsim.New(fecsim.Config{Unplugged: true, PartnerNo1000: true, AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := fec.Open(m.Device(), fec.Config{Queues: 3, Interrupts: true, Promisc: true, LinkTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if l := p.ProgrammedLink(); l.SpeedMbps != 1000 {
		t.Fatalf("programmed %+v with the cable out", l)
	}
	var mu sync.Mutex
	var sent [][]byte
	m.SetTransmit(func(f []byte) {
		mu.Lock()
		sent = append(sent, append([]byte(nil), f...))
		mu.Unlock()
	})
	c := loadExample(t, "xdp_macswap_tx", 3)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}}, Program: dataplane.BPF(mustProg(t, c, "xdp_macswap_tx"))})
	m.PHY().SetConnected(true)
	deadline := time.Now().Add(5 * time.Second)
	for e.Snapshot().Ports[0].LinkRestarts == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no MAC restart after the link came up at %+v (programmed %+v)", p.Link(), p.ProgrammedLink())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if l := p.ProgrammedLink(); l.SpeedMbps != 100 {
		t.Fatalf("programmed %+v after the restart", l)
	}
	in := udpFrames(t, 20, 64)
	for _, f := range in {
		for !m.Inject(f) {
			time.Sleep(time.Millisecond)
		}
	}
	for time.Now().Before(deadline.Add(5 * time.Second)) {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n >= len(in) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != len(in) {
		t.Fatalf("%d of %d frames answered after the restart", len(sent), len(in))
	}
	for i, f := range sent {
		if !bytes.Equal(f[:60], swapped(in[i])[:60]) {
			t.Fatalf("answer %d differs", i)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("model: %v", err)
	}
}
