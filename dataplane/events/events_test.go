package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// ipv4 is an Ethernet + IPv4 frame of protocol proto with l4 after the
// header, 10.0.0.1 -> 10.0.0.2.
func ipv4(proto byte, l4 []byte) []byte {
	f := make([]byte, 14+20)
	f[12], f[13] = 0x08, 0x00
	ip := f[14:]
	ip[0], ip[9] = 0x45, proto
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	return append(f, l4...)
}

func run(t *testing.T, c *bpf.Collection, prog string, frame []byte) {
	t.Helper()
	p, err := c.Program(prog)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256+len(frame)+256)
	copy(buf[256:], frame)
	if a := bpf.NewRunner(0).Run(p, &bpf.Frame{Buf: buf, DataMeta: 256, Data: 256, DataEnd: 256 + len(frame)}); a != bpf.ActionPass {
		t.Fatalf("verdict %v", a)
	}
}

// TestRingBufEvents: xdp_events' ring buffer records (a SYN segment's
// syn_event, an ICMP message's icmp_event) come out in order, each decoded
// as the struct of its size the object's BTF names; nothing is left after.
func TestRingBufEvents(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../../examples/xdp/xdp_events.o")
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := NewReader(c, spec.Types)
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Maps(); len(m) != 1 || m[0] != "events" {
		t.Fatalf("maps %v", m)
	}
	tcp := make([]byte, 20)
	tcp[0], tcp[1], tcp[2], tcp[3] = 0x1f, 0x90, 0x00, 0x50 // 8080 -> 80
	tcp[12], tcp[13] = 0x50, 0x02                           // SYN
	run(t, c, "xdp_events", ipv4(6, tcp))
	run(t, c, "xdp_events", ipv4(1, []byte{8, 0, 0, 0, 0, 0, 0, 0}))
	var got []*Event
	n, err := r.Drain(func(e *Event) { got = append(got, e) })
	if err != nil || n != 2 || len(got) != 2 {
		t.Fatalf("%d events, %v", n, err)
	}
	syn, icmp := got[0], got[1]
	if syn.Kind != KindRingBuf || syn.Map != "events" || syn.Type != "struct syn_event" || len(syn.Data) != 36 {
		t.Fatalf("syn %+v", syn)
	}
	j, _ := json.Marshal(syn.Formatted)
	if !strings.HasPrefix(string(j), `{"len":54,"saddr":`) || !strings.Contains(string(j), `"head":[`) {
		t.Errorf("syn decoded as %s", j)
	}
	if icmp.Type != "struct icmp_event" || !strings.Contains(icmp.String(), `"type":8`) || !strings.HasPrefix(icmp.String(), "ringbuf events: struct icmp_event") {
		t.Errorf("icmp %s", icmp)
	}
	if n, _ := r.Drain(func(*Event) { t.Error("an event twice") }); n != 0 {
		t.Errorf("%d more", n)
	}

	// Without BTF the bytes come as they are.
	r2, err := NewReader(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "xdp_events", ipv4(1, []byte{3, 1, 0, 0, 0, 0, 0, 0}))
	r2.Drain(func(e *Event) {
		if e.Formatted != nil || !strings.Contains(e.String(), "data 2a00000003010000") {
			t.Errorf("undecoded: %s", e)
		}
	})
}

// TestPerfEvents: xdp_perf_sample's samples, with the frame bytes apart
// from the program's data.
func TestPerfEvents(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../../examples/xdp/xdp_perf_sample.o")
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := NewReader(c, spec.Types)
	if err != nil {
		t.Fatal(err)
	}
	var prog string
	for _, p := range c.Programs() {
		prog = p.Name()
	}
	frame := ipv4(17, make([]byte, 40))
	p, _ := c.Program(prog)
	buf := make([]byte, 256+len(frame))
	copy(buf[256:], frame)
	bpf.NewRunner(0).Run(p, &bpf.Frame{Buf: buf, DataMeta: 256, Data: 256, DataEnd: 256 + len(frame)})
	var got []*Event
	r.Drain(func(e *Event) { got = append(got, e) })
	if len(got) == 0 || got[0].Kind != KindPerf || len(got[0].Data) == 0 {
		t.Fatalf("perf events %+v", got)
	}
	if len(got[0].Frame) > 0 && string(got[0].Frame) != string(frame[:len(got[0].Frame)]) {
		t.Errorf("frame bytes %x", got[0].Frame)
	}
}
