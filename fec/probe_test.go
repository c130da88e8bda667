package fec_test

import (
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/fec"
)

// TestNoMIB: a MAC whose MIB drops writes and reads 0 (QEMU's imx.enet) gets
// no MIB counters in Stats, mib_unavailable instead, and a warning; a MAC with
// a MIB gets its counters and the probe's write undone.
func TestNoMIB(t *testing.T) {
	const mibFirst, mibLast, txPackets = 0x200, 0x2E0, 0x204
	d := newPlainFEC("fsl,imx8mp-fec")
	d.absent = func(off uint32) bool { return off >= mibFirst && off <= mibLast }
	p, err := fec.Open(d, fec.Config{LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st := p.Stats()
	if v, ok := fec.Counter(st, "mib_unavailable"); !ok || v != 1 {
		t.Errorf("mib_unavailable %d (present %v), want 1", v, ok)
	}
	for _, name := range []string{"tx_packets", "rx_packets", "rx_octets", "IEEE_rx_frame_ok"} {
		if _, ok := fec.Counter(st, name); ok {
			t.Errorf("MIB counter %s reported on a MAC without a MIB", name)
		}
	}
	if _, ok := fec.Counter(st, "rx_queue_0_packets"); !ok {
		t.Errorf("the driver's own counters are missing: %v", st)
	}
	if w := strings.Join(p.Warnings(), "; "); !strings.Contains(w, "no MIB counters") {
		t.Errorf("warnings %q do not say the MIB is missing", w)
	}

	d2 := newPlainFEC("fsl,imx8mp-fec")
	d2.regs[txPackets/4] = 1234
	p2, err := fec.Open(d2, fec.Config{LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if d2.regs[txPackets/4] != 1234 {
		t.Errorf("RMON_T_PACKETS %d after the probe, want its old 1234", d2.regs[txPackets/4])
	}
	if _, ok := fec.Counter(p2.Stats(), "mib_unavailable"); ok {
		t.Error("mib_unavailable on a MAC with a MIB")
	}
	if _, ok := fec.Counter(p2.Stats(), "tx_packets"); !ok {
		t.Error("no MIB tx_packets on a MAC with a MIB")
	}
}

// TestMissingRxRing: on a MAC without receive rings 1-2 (RDSR1/2 drop writes,
// as on QEMU's imx.enet) Open with three queues fails and says so; with one
// queue it works.
func TestMissingRxRing(t *testing.T) {
	const rdsr1, rdsr2 = 0x160, 0x16C
	d := newPlainFEC("fsl,imx8mp-fec")
	d.absent = func(off uint32) bool { return off == rdsr1 || off == rdsr2 }
	if p, err := fec.Open(d, fec.Config{Queues: 3, LinkTimeout: -1}); err == nil {
		p.Close()
		t.Fatal("three queues opened on a MAC with one receive ring")
	} else if !strings.Contains(err.Error(), "no receive ring 1") || !strings.Contains(err.Error(), "Queues 1") {
		t.Fatalf("error %q does not name the missing ring and the remedy", err)
	}
	p, err := fec.Open(d, fec.Config{Queues: 1, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	d3 := newPlainFEC("fsl,imx8mp-fec")
	p3, err := fec.Open(d3, fec.Config{Queues: 3, LinkTimeout: -1})
	if err != nil {
		t.Fatalf("three queues on a MAC with three rings: %v", err)
	}
	p3.Close()
}
