package dataplane

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// Counter indexes one per-queue counter. Names follow the kernel fec driver's
// ethtool names where it has one (fec_main.c: rx_xdp_redirect, rx_xdp_pass,
// rx_xdp_drop, rx_xdp_tx, rx_xdp_tx_errors, tx_xdp_xmit, tx_xdp_xmit_errors).
type Counter uint8

const (
	RxPackets           Counter = iota // frames taken from the RX ring
	RxBytes                            // their bytes as received
	TxPackets                          // frames put on the TX ring (any source)
	TxBytes                            // their bytes
	RxXDPDrop                          // XDP_DROP verdicts
	RxXDPPass                          // XDP_PASS verdicts
	RxXDPTx                            // XDP_TX verdicts
	RxXDPRedirect                      // XDP_REDIRECT verdicts (failed ones included)
	RxXDPTxErrors                      // XDP_TX frames the TX ring could not take
	TxXDPXmit                          // redirected frames this queue transmitted
	TxXDPXmitErrors                    // redirected frames refused (ring full, link down)
	RxXDPAborted                       // XDP_ABORTED, program faults, unknown verdicts
	RxXDPRedirectErrors                // redirects to no target (missing entry, bad queue)
	RxXDPPassErrors                    // XDP_PASS frames the stack refused or no stack
	RingFull                           // frames dropped on a full software ring (cpumap, XSK)
	NoBuffer                           // frames lost for want of a buffer (TAP to port)
	TxStack                            // frames the host stack (TAP) sent out of the port
	TxStackErrors                      // of those, frames the TX ring could not take

	NumCounters // number of counters
)

var counterNames = [NumCounters]string{
	RxPackets:           "rx_packets",
	RxBytes:             "rx_bytes",
	TxPackets:           "tx_packets",
	TxBytes:             "tx_bytes",
	RxXDPDrop:           "rx_xdp_drop",
	RxXDPPass:           "rx_xdp_pass",
	RxXDPTx:             "rx_xdp_tx",
	RxXDPRedirect:       "rx_xdp_redirect",
	RxXDPTxErrors:       "rx_xdp_tx_errors",
	TxXDPXmit:           "tx_xdp_xmit",
	TxXDPXmitErrors:     "tx_xdp_xmit_errors",
	RxXDPAborted:        "rx_xdp_aborted",
	RxXDPRedirectErrors: "rx_xdp_redirect_errors",
	RxXDPPassErrors:     "rx_xdp_pass_errors",
	RingFull:            "ring_full_drops",
	NoBuffer:            "no_buffer_drops",
	TxStack:             "tx_stack",
	TxStackErrors:       "tx_stack_errors",
}

func (c Counter) String() string {
	if c < NumCounters {
		return counterNames[c]
	}
	return fmt.Sprintf("Counter(%d)", uint8(c))
}

// Counters is one set of counter values.
type Counters [NumCounters]uint64

// Get returns the value of counter c (0 for an invalid c).
func (cs *Counters) Get(c Counter) uint64 {
	if c >= NumCounters {
		return 0
	}
	return cs[c]
}

// Errors is the sum of the counters of frames lost to a full ring, a missing
// buffer or a failed transmit after their verdict (Rates.Errors per second).
func (cs *Counters) Errors() uint64 {
	var n uint64
	for _, k := range errorCounters {
		n += cs[k]
	}
	return n
}

func (cs *Counters) add(o *Counters) {
	for i := range cs {
		cs[i] += o[i]
	}
}

// Map returns the counters by name, for JSON.
func (cs *Counters) Map() map[string]uint64 {
	m := make(map[string]uint64, NumCounters)
	for i, v := range cs {
		m[counterNames[i]] = v
	}
	return m
}

// published is a set of counters other goroutines may read while one writer
// stores to them.
type published [NumCounters]atomic.Uint64

// publish stores the writer's private counters, the ones of its side only.
//
// Only counters that changed since the last publish are stored: the writer is
// the only one that stores, so the load sees its own last store, and an atomic
// store (a full barrier on amd64) costs far more than the load. A poll that
// moved 4 counters pays 4 stores, not 12. The side is a list, not a mask
// over every counter: a poll publishes once per burst and a redirect
// target's queue once per bulk.
func (p *published) publish(c *Counters, side []Counter) {
	for _, i := range side {
		if v := c[i]; p[i].Load() != v {
			p[i].Store(v)
		}
	}
}

func (p *published) load(into *Counters, side []Counter) {
	for _, i := range side {
		into[i] += p[i].Load()
	}
}

// Which side writes each counter: rxSide counters belong to the poll goroutine,
// txSide counters to whoever holds the TX queue's mutex. Each counter is on
// exactly one side.
var (
	txSide = []Counter{TxPackets, TxBytes, TxXDPXmit, TxXDPXmitErrors, TxStack, TxStackErrors}
	rxSide = otherSide(txSide)
)

// otherSide lists the counters not in side, in order.
func otherSide(side []Counter) []Counter {
	var out []Counter
	for c := range NumCounters {
		if !slices.Contains(side, c) {
			out = append(out, c)
		}
	}
	return out
}

// QueueStats are the counters of one queue pair.
type QueueStats struct {
	Queue    int      `json:"queue"`
	Counters Counters `json:"-"`
}

// PortStats are the counters of one port: the sum of its queues, the device's
// hardware counters, and the last program fault seen on it.
type PortStats struct {
	Name     string        `json:"name"`
	Ifindex  uint32        `json:"ifindex"`
	Link     nic.LinkState `json:"link"`
	Counters Counters      `json:"-"`
	Queues   []QueueStats  `json:"-"`
	Hardware []nic.Counter `json:"-"`
	// RxDropNames name the Hardware counters of frames the device dropped
	// before a receive buffer, each frame in one (nic.RxDropCounters).
	RxDropNames []string `json:"-"`
	// RxDiscardNames name the Hardware counters (the driver's) of frames the
	// device wrote to a ring and the driver dropped, each frame in one
	// (nic.RxDiscardCounters): error bits, a ring a reset started over.
	RxDiscardNames []string `json:"-"`
	// Gone is why the port stopped: its device is gone (nic.HealthChecker).
	Gone string `json:"gone,omitempty"`
	// TxTimeouts counts hung TX queues found, Resets the port resets that
	// followed, RecoveryLost the frames on TX rings those resets dropped;
	// LastRecovery says what the last one was (recover.go).
	TxTimeouts   uint64 `json:"tx_timeouts"`
	Resets       uint64 `json:"resets"`
	RecoveryLost uint64 `json:"recovery_lost"`
	LastRecovery string `json:"last_recovery,omitempty"`
	// ResetTime is how long the port was stopped for its resets, in total:
	// frames that arrived meanwhile are lost (its MAC was in reset).
	ResetTime time.Duration `json:"reset_ns,omitempty"`
	// LinkProblem is why the link is down when the driver knows (a PHY
	// that does not answer MDIO: nic.LinkProblemReporter).
	LinkProblem string `json:"link_problem,omitempty"`
	LastFault   string `json:"last_fault,omitempty"`
	// LinkRestarts counts MAC restarts for a new link speed or duplex
	// (nic.LinkAdjuster ports).
	LinkRestarts uint64 `json:"link_restarts,omitempty"`
}

// WorkerStats are the counters of one cpumap worker.
type WorkerStats struct {
	CPU       int    `json:"cpu"`
	Processed uint64 `json:"processed"`
	Drop      uint64 `json:"drop"`
	Pass      uint64 `json:"pass"`
	Redirect  uint64 `json:"redirect"`
	Errors    uint64 `json:"errors"`
	RingFull  uint64 `json:"ring_full"`
}

// Snapshot is the state of every counter at one time.
type Snapshot struct {
	Time    time.Time     `json:"time"`
	Ports   []PortStats   `json:"ports"`
	Workers []WorkerStats `json:"cpumap_workers,omitempty"`
	XSKs    []XSKStats    `json:"xsks,omitempty"`
}

// Totals sums the counters of every port.
func (s *Snapshot) Totals() Counters {
	var t Counters
	for i := range s.Ports {
		t.add(&s.Ports[i].Counters)
	}
	return t
}
