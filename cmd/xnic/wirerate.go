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
// ends with offered = received + dropped by the device + discarded by the
// driver + unseen by the driver (the wire's own count, sim.RxUnseen).

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

// rxUnseener is a model that tells the frames from its wire no register and
// no ring shows (sim.RxUnseen).
type rxUnseener interface{ RxUnseen() sim.RxUnseen }

// rxAccount is where the frames a simulated port's link partner offered went:
// received by the dataplane, dropped by the device (its counters), discarded
// by the driver (its counters), or seen by the wire alone.
type rxAccount struct {
	rx, drops, discards uint64
	dropBy, discardBy   []nic.Counter
	unseen              sim.RxUnseen
	held                uint64 // still in the device's receive FIFO (a stalled DMA)
}

func accountOf(p *dpPort, ps *dataplane.PortStats) rxAccount {
	a := rxAccount{rx: ps.Counters[dataplane.RxPackets]}
	a.drops, a.dropBy = dataplane.HardwareDrops(ps)
	a.discards, a.discardBy = dataplane.DriverDiscards(ps)
	if u, ok := p.model.(rxUnseener); ok {
		a.unseen = u.RxUnseen()
	}
	if h, ok := p.model.(rxHolder); ok {
		a.held = uint64(h.RxHeld())
	}
	return a
}

// unseenTotal is what the driver cannot see: the wire's figures and the
// frames still waiting in the FIFO.
func (a rxAccount) unseenTotal() uint64 {
	return a.unseen.Off + a.unseen.Filtered + a.unseen.Flushed + a.held
}

func (a rxAccount) total() uint64 { return a.rx + a.drops + a.discards + a.unseenTotal() }

// settleOffered waits (at most limit) until what each simulated port's link
// partner offered is accounted for (rxAccount), none waiting in a FIFO or a
// ring; or until nothing has moved for 300 ms.
func settleOffered(e *dataplane.Engine, ports []*dpPort, limit time.Duration) {
	deadline := time.Now().Add(limit)
	var last uint64
	still := 0
	for time.Now().Before(deadline) {
		s := e.Snapshot()
		var sum uint64
		done := true
		for i, p := range ports {
			if i >= len(s.Ports) {
				continue
			}
			a := accountOf(p, &s.Ports[i])
			sum += a.total()
			if p.partner == nil {
				continue
			}
			if a.held > 0 || a.total() < p.partner.offered() {
				done = false
			}
		}
		if done {
			return
		}
		if sum == last {
			if still++; still >= 60 {
				return
			}
		} else {
			still, last = 0, sum
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// offered is every frame the partner put on the wire.
func (pt *dpPartner) offered() uint64 { return pt.sent.Load() + pt.missed.Load() }

// counterList is "name value, ..." of cs.
func counterList(cs []nic.Counter) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name+" "+dataplane.Group(float64(c.Value)))
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// reportAccounting prints a simulated port's equation: what its link partner
// offered = what the dataplane received + what the device dropped (its
// counters) + what the driver discarded (its counters: descriptor errors,
// rings a reset started over) + what only the wire saw (frames that arrived
// while the receiver was off, that the address filter refused, that a reset
// flushed from the FIFO, or that still wait there behind a stalled DMA: no
// register counts them). A difference (frames still in flight, counters a
// removed device took with it) is named.
func reportAccounting(w io.Writer, p *dpPort, ps *dataplane.PortStats) {
	offered := p.partner.offered()
	a := accountOf(p, ps)
	rel := "="
	if a.total() != offered {
		rel = "!="
	}
	g := func(v uint64) string { return dataplane.Group(float64(v)) }
	fmt.Fprintf(w, "%s: offered %s %s received %s + dropped by the device %s%s + discarded by the driver %s%s",
		ps.Name, g(offered), rel, g(a.rx), g(a.drops), counterList(a.dropBy), g(a.discards), counterList(a.discardBy))
	u := a.unseen
	fmt.Fprintf(w, " + unseen by the driver %s (receiver off %s, filtered %s, flushed by resets %s, still in the FIFO %s)\n",
		g(a.unseenTotal()), g(u.Off), g(u.Filtered), g(u.Flushed), g(a.held))
	if rel != "=" {
		why := "still in flight"
		if ps.Gone != "" {
			why = "the device was gone, with what its counters counted since they were last read"
		}
		fmt.Fprintf(w, "%s: %s frames not accounted for: %s\n", ps.Name, dataplane.Group(float64(int64(offered)-int64(a.total()))), why)
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

// wireTime is how long a wire at mbps took to carry n frames of size bytes
// that the model had put on it measured after it: at least their time on the
// wire back to back. A short run can measure less: a simulated wire lets a
// late sender catch up on up to 200 microseconds it lost (sim/linerate.go)
// and the MAC's TX FIFO still holds frames when the model counts them sent.
func wireTime(measured time.Duration, n uint64, size, mbps int) time.Duration {
	return max(measured, time.Duration(n)*sim.FrameTime(size, mbps))
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
