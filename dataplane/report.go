package dataplane

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// Rates is what happened on one port between two snapshots, per second.
type Rates struct {
	Port     string  `json:"port"`
	Seconds  float64 `json:"interval_s"`
	RxPPS    float64 `json:"rx_pps"`
	RxBPS    float64 `json:"rx_bps"`
	TxPPS    float64 `json:"tx_pps"`
	Drop     float64 `json:"drop_pps"`
	Pass     float64 `json:"pass_pps"`
	TX       float64 `json:"tx_pps_xdp"`
	Redirect float64 `json:"redirect_pps"`
	Aborted  float64 `json:"aborted_pps"`
	Xmit     float64 `json:"xmit_pps"`
	Errors   float64 `json:"errors_pps"` // tx/xmit/redirect/pass errors and ring-full drops
	// HWDrop is frames the device dropped before the program saw them (the
	// counters its driver names: HardwareDrops).
	HWDrop float64 `json:"hw_drop_pps"`
}

// HardwareDrops sums a port's device counters of frames dropped before a
// receive buffer, as its driver names them (nic.RxDropCounters: each dropped
// frame in exactly one counter), and lists those that are not zero. A port
// whose driver names none reports none.
func HardwareDrops(p *PortStats) (total uint64, nonzero []nic.Counter) {
	return nic.SumCounters(p.Hardware, p.RxDropNames)
}

// DriverDiscards sums a port's driver counters of frames the device wrote to a
// receive ring and the driver dropped before the program (a descriptor error,
// a reset that started the ring over: nic.RxDiscardCounters, each frame in
// one) and lists those that are not zero.
func DriverDiscards(p *PortStats) (total uint64, nonzero []nic.Counter) {
	return nic.SumCounters(p.Hardware, p.RxDiscardNames)
}

// counterMap is cs by name, nil when cs is empty.
func counterMap(cs []nic.Counter) map[string]uint64 {
	if len(cs) == 0 {
		return nil
	}
	m := make(map[string]uint64, len(cs))
	for _, c := range cs {
		m[c.Name] = c.Value
	}
	return m
}

// errorCounters are summed into Rates.Errors.
var errorCounters = []Counter{RxXDPTxErrors, TxXDPXmitErrors, RxXDPRedirectErrors, RxXDPPassErrors, RingFull, NoBuffer, TxStackErrors}

// RatesBetween computes per-port rates from two snapshots of the same engine.
func RatesBetween(prev, cur *Snapshot) []Rates {
	dt := cur.Time.Sub(prev.Time).Seconds()
	if dt <= 0 {
		dt = 1e-9
	}
	var out []Rates
	for i := range cur.Ports {
		c := &cur.Ports[i].Counters
		var p Counters
		if i < len(prev.Ports) {
			p = prev.Ports[i].Counters
		}
		d := func(k Counter) float64 { return float64(c[k]-p[k]) / dt }
		r := Rates{
			Port: cur.Ports[i].Name, Seconds: dt,
			RxPPS: d(RxPackets), RxBPS: d(RxBytes) * 8, TxPPS: d(TxPackets),
			Drop: d(RxXDPDrop), Pass: d(RxXDPPass), TX: d(RxXDPTx), Redirect: d(RxXDPRedirect),
			Aborted: d(RxXDPAborted), Xmit: d(TxXDPXmit),
		}
		r.Errors = float64(c.Errors()-p.Errors()) / dt
		now, _ := HardwareDrops(&cur.Ports[i])
		var before uint64
		if i < len(prev.Ports) {
			before, _ = HardwareDrops(&prev.Ports[i])
		}
		if now >= before {
			r.HWDrop = float64(now-before) / dt
		}
		out = append(out, r)
	}
	return out
}

// FormatRates writes one line per port, like the kernel's XDP samples:
//
//	port0  rx 1,487,962 pps  drop 1,487,962  pass 0  tx 0  redirect 0  aborted 0  xmit 0  err 0  hwdrop 0
//
// hwdrop is frames the device dropped before the program (Rates.HWDrop): a
// dataplane that does not keep up shows here.
func FormatRates(w io.Writer, rs []Rates) {
	for _, r := range rs {
		fmt.Fprintf(w, "%-10s rx %11s pps  drop %11s  pass %9s  tx %11s  redirect %11s  aborted %7s  xmit %11s  err %7s  hwdrop %9s\n",
			r.Port, Group(r.RxPPS), Group(r.Drop), Group(r.Pass), Group(r.TX), Group(r.Redirect), Group(r.Aborted), Group(r.Xmit), Group(r.Errors), Group(r.HWDrop))
	}
}

// WriteJSON writes one JSON object per line: the rates and the raw counters.
func WriteJSON(w io.Writer, s *Snapshot, rs []Rates) error {
	type queue struct {
		Queue    int               `json:"queue"`
		Counters map[string]uint64 `json:"counters"`
	}
	type port struct {
		Rates
		Link     bool              `json:"link_up"`
		Counters map[string]uint64 `json:"counters"`
		Queues   []queue           `json:"queues,omitempty"`
		Hardware map[string]uint64 `json:"hardware,omitempty"`
		// DeviceDrops is every frame the device dropped before the
		// program, counted once (HardwareDrops), by counter.
		DeviceDrops   uint64            `json:"device_drops"`
		DeviceDropsBy map[string]uint64 `json:"device_drops_by,omitempty"`
		// DriverDiscards is every frame the device wrote to a ring that
		// the driver dropped (descriptor errors, rings a reset started
		// over), counted once (DriverDiscards), by counter.
		DriverDiscards   uint64            `json:"driver_discards"`
		DriverDiscardsBy map[string]uint64 `json:"driver_discards_by,omitempty"`
		LastFault        string            `json:"last_fault,omitempty"`
		Gone             string            `json:"gone,omitempty"`
		LinkProblem      string            `json:"link_problem,omitempty"`
		TxTimeouts       uint64            `json:"tx_timeouts"`
		Resets           uint64            `json:"resets"`
		RecoveryLost     uint64            `json:"recovery_lost"`
	}
	out := struct {
		Time    time.Time     `json:"time"`
		Ports   []port        `json:"ports"`
		Workers []WorkerStats `json:"cpumap_workers,omitempty"`
		XSKs    []XSKStats    `json:"xsks,omitempty"`
	}{Time: s.Time, Workers: s.Workers, XSKs: s.XSKs}
	for i := range s.Ports {
		ps := &s.Ports[i]
		p := port{Link: ps.Link.Up, Counters: ps.Counters.Map(), LastFault: ps.LastFault, Gone: ps.Gone, LinkProblem: ps.LinkProblem,
			TxTimeouts: ps.TxTimeouts, Resets: ps.Resets, RecoveryLost: ps.RecoveryLost}
		if len(ps.Queues) > 1 {
			for _, q := range ps.Queues {
				p.Queues = append(p.Queues, queue{Queue: q.Queue, Counters: q.Counters.Map()})
			}
		}
		if i < len(rs) {
			p.Rates = rs[i]
		} else {
			p.Rates.Port = ps.Name
		}
		if len(ps.Hardware) > 0 {
			p.Hardware = map[string]uint64{}
			for _, h := range ps.Hardware {
				p.Hardware[h.Name] = h.Value
			}
		}
		var by []nic.Counter
		p.DeviceDrops, by = HardwareDrops(ps)
		p.DeviceDropsBy = counterMap(by)
		p.DriverDiscards, by = DriverDiscards(ps)
		p.DriverDiscardsBy = counterMap(by)
		out.Ports = append(out.Ports, p)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("dataplane: stats to JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Group formats v rounded to an integer with thousands separators.
func Group(v float64) string {
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatSummary writes a table of every port's counters (non-zero ones, and the
// verdict counters always).
func FormatSummary(w io.Writer, s *Snapshot) {
	always := map[Counter]bool{RxPackets: true, RxXDPDrop: true, RxXDPPass: true, RxXDPTx: true, RxXDPRedirect: true, RxXDPAborted: true, TxPackets: true, TxXDPXmit: true}
	fmt.Fprintf(w, "%-24s", "counter")
	for _, p := range s.Ports {
		fmt.Fprintf(w, " %16s", p.Name)
	}
	fmt.Fprintln(w)
	for c := Counter(0); c < NumCounters; c++ {
		show := always[c]
		for _, p := range s.Ports {
			show = show || p.Counters[c] != 0
		}
		if !show {
			continue
		}
		fmt.Fprintf(w, "%-24s", c)
		for _, p := range s.Ports {
			fmt.Fprintf(w, " %16s", Group(float64(p.Counters[c])))
		}
		fmt.Fprintln(w)
	}
	for _, p := range s.Ports {
		var hw []string
		for _, h := range p.Hardware {
			if h.Value != 0 {
				hw = append(hw, fmt.Sprintf("%s %s", h.Name, Group(float64(h.Value))))
			}
		}
		if len(hw) > 0 {
			fmt.Fprintf(w, "%s hardware: %s\n", p.Name, strings.Join(hw, ", "))
		}
		if p.LastFault != "" {
			fmt.Fprintf(w, "%s last fault: %s\n", p.Name, p.LastFault)
		}
		if p.Gone != "" {
			fmt.Fprintf(w, "%s stopped: %s\n", p.Name, p.Gone)
		}
		if p.LinkProblem != "" {
			fmt.Fprintf(w, "%s link down: %s\n", p.Name, p.LinkProblem)
		}
		if p.TxTimeouts != 0 || p.Resets != 0 {
			fmt.Fprintf(w, "%s recoveries: tx_timeouts %d, resets %d (stopped %v in all), frames lost in resets %d; last: %s\n",
				p.Name, p.TxTimeouts, p.Resets, p.ResetTime.Round(time.Microsecond), p.RecoveryLost, p.LastRecovery)
		}
	}
}
