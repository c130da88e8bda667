package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// The wire's figures: a simulated port's wire carries frames at its link's
// line rate (sim/linerate.go), so --rate above it is a usage error, and a run
// ends with offered = received + dropped by the device.

// portMbps is a port's link speed, 1000 when the link reports none.
func portMbps(p *dpPort) int {
	if st := p.port.Link(); st.Up && st.SpeedMbps > 0 {
		return st.SpeedMbps
	}
	return 1000
}

// checkLineRate refuses a frame rate above what a wire at mbps carries for
// frames of size bytes (without FCS).
func checkLineRate(flag string, rate float64, size, mbps int) error {
	if lr := sim.LineRatePPS(size, mbps); rate > lr {
		return usageErrorf("%s %s frames/s is above the line rate: a %d Mb/s wire carries at most %s frames of %d bytes a second (%d bytes with preamble, FCS and gap)",
			flag, dataplane.Group(rate), mbps, dataplane.Group(float64(int64(lr))), size, sim.WireBytes(size))
	}
	return nil
}

// rxHolder is a model whose receive FIFO may hold frames not yet written to a
// ring.
type rxHolder interface{ RxHeld() int }

// settleOffered waits (at most limit) until what each simulated port's link
// partner offered is accounted for: every frame received by the dataplane or
// dropped by the device, none waiting in a FIFO or a ring; or until nothing
// has moved for 300 ms (frames lost in a reset or to a removed device never
// will).
func settleOffered(e *dataplane.Engine, ports []*dpPort, limit time.Duration) {
	deadline := time.Now().Add(limit)
	var last uint64
	still := 0
	for time.Now().Before(deadline) {
		s := e.Snapshot()
		var sum uint64
		for i := range s.Ports {
			d, _ := dataplane.HardwareDrops(&s.Ports[i])
			sum += s.Ports[i].Counters[dataplane.RxPackets] + d
		}
		if sum == last {
			if still++; still >= 60 {
				return
			}
		} else {
			still, last = 0, sum
		}
		done := true
		for i, p := range ports {
			if p.partner == nil || i >= len(s.Ports) {
				continue
			}
			if h, ok := p.model.(rxHolder); ok && h.RxHeld() > 0 {
				done = false
				break
			}
			drops, _ := dataplane.HardwareDrops(&s.Ports[i])
			if s.Ports[i].Counters[dataplane.RxPackets]+drops < p.partner.offered() {
				done = false
				break
			}
		}
		if done {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// offered is every frame the partner put on the wire.
func (pt *dpPartner) offered() uint64 { return pt.sent.Load() + pt.missed.Load() }

// reportAccounting prints a simulated port's equation: what its link partner
// offered = what the dataplane received + what the device dropped, with the
// counters that dropped them. A difference (frames the MAC filtered or never
// let in with the link down, or still in flight) is named.
func reportAccounting(w io.Writer, p *dpPort, ps *dataplane.PortStats) {
	offered := p.partner.offered()
	rx := ps.Counters[dataplane.RxPackets]
	drops, by := dataplane.HardwareDrops(ps)
	var names []string
	for _, c := range by {
		names = append(names, c.Name+" "+dataplane.Group(float64(c.Value)))
	}
	detail := ""
	if len(names) > 0 {
		detail = " (" + strings.Join(names, ", ") + ")"
	}
	rel := "="
	if rx+drops != offered {
		rel = "!="
	}
	fmt.Fprintf(w, "%s: offered %s %s received %s + dropped by the device %s%s\n", ps.Name,
		dataplane.Group(float64(offered)), rel, dataplane.Group(float64(rx)), dataplane.Group(float64(drops)), detail)
	if rel != "=" {
		why := "the MAC filtered them, the link was down, or they were still in flight"
		switch {
		case ps.Gone != "":
			why = "the device was gone"
		case ps.Resets > 0:
			why = fmt.Sprintf("lost while the port was reset %d times (its rings start over, a stopped MAC takes nothing)", ps.Resets)
		}
		fmt.Fprintf(w, "%s: %s frames neither received nor counted by the device: %s\n",
			ps.Name, dataplane.Group(float64(int64(offered)-int64(rx+drops))), why)
	}
}

// wireLimit says what set a phase's receive rate: the wire when port 0 took
// frames at line rate (97% of it or more, the rest being the generator's
// start and stop), the dataplane when the device dropped 1% or more of the
// offered frames (its FIFO overflowed: the poll loop did not keep up), else
// the link partner (the generator could not fill the wire on this machine).
func wireLimit(offered uint64, seconds float64, rx uint64, linePPS float64, dropped uint64) string {
	switch {
	case seconds > 0 && float64(rx)/seconds >= 0.97*linePPS:
		return "wire"
	case offered > 0 && dropped*100 >= offered:
		return fmt.Sprintf("dataplane (the device dropped %s: its FIFO overflowed)", dataplane.Group(float64(dropped)))
	}
	pct := 0.0
	if seconds > 0 && linePPS > 0 {
		pct = 100 * float64(offered) / seconds / linePPS
	}
	return fmt.Sprintf("partner (offered %.0f%% of line rate)", pct)
}

// sendPaced is pktgen.Send at most rate frames a second (0: as fast as the
// ring takes them, which on a paced wire is the line rate): bursts sent on
// time, waiting between them.
func sendPaced(q nic.TxQueue, pool *dma.Pool, frame []byte, n uint64, burst int, rate float64, deadline time.Time, stop <-chan struct{}) (pktgen.SendStats, error) {
	if rate <= 0 {
		return pktgen.Send(q, pool, frame, n, burst, deadline, stop)
	}
	var total pktgen.SendStats
	start := time.Now()
	defer func() { total.Elapsed = time.Since(start) }()
	for total.Sent < n {
		due := start.Add(time.Duration(float64(total.Sent) / rate * float64(time.Second)))
		if !deadline.IsZero() && due.After(deadline) {
			break
		}
		select {
		case <-stop:
			return total, nil
		case <-time.After(time.Until(due)):
		}
		st, err := pktgen.Send(q, pool, frame, min(uint64(burst), n-total.Sent), burst, deadline, stop)
		total.Sent += st.Sent
		total.Bytes += st.Bytes
		total.Full += st.Full
		if err != nil || st.Sent == 0 {
			return total, err
		}
	}
	return total, nil
}

// wireDone waits (at most a second) until a simulated port's model has put
// sent frames on the wire, and returns when it had.
func wireDone(m simModel, sent uint64) time.Time {
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if m.WireFrames() >= sent {
			return time.Now()
		}
		time.Sleep(100 * time.Microsecond)
	}
	return time.Now()
}
