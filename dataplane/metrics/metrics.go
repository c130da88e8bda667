package metrics

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/xnic-dev/xnic/dataplane"
)

// Collector exports an engine's counters as Prometheus metrics:
// xnic_<counter>_total{port,queue} per queue, xnic_hw_<name>{port} for the
// device's hardware counters, xnic_link_up{port}, and the cpumap workers' and
// XSKs' counters. Register it with a prometheus.Registry.
type Collector struct {
	e      *dataplane.Engine
	queue  [dataplane.NumCounters]*prometheus.Desc
	hw     *prometheus.Desc
	link   *prometheus.Desc
	worker *prometheus.Desc
	xsk    *prometheus.Desc
}

// NewCollector makes a Collector for e.
func NewCollector(e *dataplane.Engine) *Collector {
	c := &Collector{e: e}
	for i := dataplane.Counter(0); i < dataplane.NumCounters; i++ {
		c.queue[i] = prometheus.NewDesc("xnic_"+i.String()+"_total", "xnic per-queue counter "+i.String()+".", []string{"port", "queue"}, nil)
	}
	c.hw = prometheus.NewDesc("xnic_hw_counter", "The device's hardware counters (accumulated).", []string{"port", "name"}, nil)
	c.link = prometheus.NewDesc("xnic_link_up", "1 when the port's link is up.", []string{"port"}, nil)
	c.worker = prometheus.NewDesc("xnic_cpumap_frames_total", "Frames handled by cpumap workers, by outcome.", []string{"cpu", "outcome"}, nil)
	c.xsk = prometheus.NewDesc("xnic_xsk_frames_total", "Frames through XSK consumers, by direction.", []string{"port", "queue", "map", "key", "what"}, nil)
	return c
}

// Describe sends every metric description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.queue {
		ch <- d
	}
	ch <- c.hw
	ch <- c.link
	ch <- c.worker
	ch <- c.xsk
}

// Collect reads a snapshot and sends it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.e.Snapshot()
	for _, p := range s.Ports {
		up := 0.0
		if p.Link.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.link, prometheus.GaugeValue, up, p.Name)
		for _, q := range p.Queues {
			qs := strconv.Itoa(q.Queue)
			for i := dataplane.Counter(0); i < dataplane.NumCounters; i++ {
				ch <- prometheus.MustNewConstMetric(c.queue[i], prometheus.CounterValue, float64(q.Counters[i]), p.Name, qs)
			}
		}
		for _, h := range p.Hardware {
			ch <- prometheus.MustNewConstMetric(c.hw, prometheus.CounterValue, float64(h.Value), p.Name, h.Name)
		}
	}
	for _, w := range s.Workers {
		cpu := strconv.Itoa(w.CPU)
		for outcome, v := range map[string]uint64{"processed": w.Processed, "drop": w.Drop, "pass": w.Pass, "redirect": w.Redirect, "error": w.Errors, "ring_full": w.RingFull} {
			ch <- prometheus.MustNewConstMetric(c.worker, prometheus.CounterValue, float64(v), cpu, outcome)
		}
	}
	for _, x := range s.XSKs {
		lbl := []string{x.Port, strconv.Itoa(x.Queue), x.Map, strconv.FormatUint(uint64(x.Key), 10)}
		for what, v := range map[string]uint64{"rx": x.Rx, "ring_full": x.RingFull, "tx": x.Tx, "tx_error": x.TxErrors} {
			ch <- prometheus.MustNewConstMetric(c.xsk, prometheus.CounterValue, float64(v), append(lbl, what)...)
		}
	}
}

// Server serves an engine's metrics over HTTP at /metrics.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr (host:port; port 0 picks one) and serves e's
// metrics until Close. Pass a loopback address unless the metrics are meant to
// be reachable from other hosts.
func Serve(addr string, e *dataplane.Engine) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewCollector(e)); err != nil {
		return nil, fmt.Errorf("metrics: registering: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// Addr is the address the server listens on.
func (m *Server) Addr() net.Addr { return m.ln.Addr() }

// Close stops the server.
func (m *Server) Close() error { return m.srv.Close() }
