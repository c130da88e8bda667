package dwmac

import (
	"strings"
	"testing"
)

// TestOpenWithStuckPTPClock: a MAC that advertises timestamps but whose
// system time commands never complete (no PTP reference clock) opens without
// a PHC and says so, unless timestamps were asked for.
func TestOpenWithStuckPTPClock(t *testing.T) {
	d := newFakeDev(t)
	d.regs[fHWF0] |= 1 << 12 // TSSEL; the fake never clears TSADDREG/TSINIT
	p := openFake(t, d, Config{})
	if _, err := p.PHC(); err == nil {
		t.Fatal("PHC from a clock that never started")
	}
	found := false
	for _, w := range p.Warnings() {
		found = found || strings.Contains(w, "1588")
	}
	if !found {
		t.Fatalf("no warning about the clock: %q", p.Warnings())
	}

	d = newFakeDev(t)
	d.regs[fHWF0] |= 1 << 12
	if p, err := Open(d, Config{RxTimestamp: true, LinkTimeout: -1}); err == nil {
		p.Close()
		t.Fatal("RX timestamps with a clock that never started")
	}
}
