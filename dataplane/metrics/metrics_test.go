package metrics

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
)

// verdictByte runs no program: each frame's byte 14 is its verdict.
type verdictByte struct{}

func (verdictByte) Run(f *bpf.Frame) bpf.Action    { return bpf.Action(f.Buf[f.Data+14]) }
func (verdictByte) Redirect() bpf.Redirect         { return bpf.Redirect{} }
func (verdictByte) Fault() error                   { return nil }
func (verdictByte) NewRunner(int) dataplane.Runner { return verdictByte{} }

func TestServeExportsEngineCounters(t *testing.T) {
	p, err := memport.New(memport.Config{Name: "mem0"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}}, Program: verdictByte{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		_ = p.Close()
	}()
	frame := func(act bpf.Action) []byte {
		f := make([]byte, 64)
		f[12], f[13], f[14] = 0x88, 0xb5, byte(act)
		return f
	}
	for i := 0; i < 300; i++ {
		p.Rx(0).Inject(frame(bpf.ActionDrop))
	}
	for i := 0; i < 100; i++ {
		p.Rx(0).Inject(frame(bpf.ActionTX))
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Snapshot().Ports[0].Counters[dataplane.RxPackets] != 400 {
		if time.Now().After(deadline) {
			t.Fatalf("engine saw %d of 400 frames", e.Snapshot().Ports[0].Counters[dataplane.RxPackets])
		}
		time.Sleep(time.Millisecond)
	}

	ms, err := Serve("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + ms.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`xnic_rx_xdp_drop_total{port="mem0",queue="0"} 300`,
		`xnic_rx_xdp_tx_total{port="mem0",queue="0"} 100`,
		`xnic_link_up{port="mem0"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if _, err := Serve("256.0.0.1:1", e); err == nil {
		t.Error("Serve on a bad address did not fail")
	}
}

// The dataplane itself links neither Prometheus nor net/http.
func TestDataplaneDoesNotImportPrometheus(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/xnic-dev/xnic/dataplane").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "prometheus") || dep == "net/http" {
			t.Errorf("package dataplane depends on %s", dep)
		}
	}
}
