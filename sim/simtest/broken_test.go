package simtest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// fakeTx is a one-slot transmit ring: a lazy device reads the buffer when
// settled (as a model with a long latency does), an eager one at the
// doorbell.
type fakeTx struct {
	eager   bool
	buf     []byte
	pending bool
	wire    [][]byte
}

func (f *fakeTx) play() simtest.TxPlay {
	send := func() { f.wire, f.pending = append(f.wire, bytes.Clone(f.buf)), false }
	return simtest.TxPlay{
		Send: func(fr []byte) int {
			f.buf, f.pending = bytes.Clone(fr), true
			if f.eager {
				send()
			}
			return 0
		},
		Rewrite: func(_ int, fr []byte) { copy(f.buf, fr) },
		Done:    func(int) bool { return !f.pending },
		Wire: func() [][]byte {
			w := f.wire
			f.wire = nil
			return w
		},
		Settle: func() {
			if f.pending {
				send()
			}
		},
	}
}

func testFrame(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 60) }

// TestReclaimEarly: a device that reads the buffer late shows the rewrite
// and passes; one that never does fails the check, as does a good path whose
// device never hands the slot back.
func TestReclaimEarly(t *testing.T) {
	lazy, eager := &fakeTx{}, &fakeTx{eager: true}
	simtest.ReclaimEarly(t, lazy.play(), eager.play(), testFrame, 3, 2)

	msg := nictest.Fails(t, func(tb testing.TB) {
		simtest.ReclaimEarly(tb, (&fakeTx{eager: true}).play(), eager.play(), testFrame, 3, 2)
	})
	if !strings.Contains(msg, "never read a TX buffer after the doorbell") {
		t.Errorf("an eager device: %q", msg)
	}
	stuck := (&fakeTx{}).play()
	stuck.Settle = func() {}
	msg = nictest.Fails(t, func(tb testing.TB) {
		simtest.ReclaimEarly(tb, lazy.play(), stuck, testFrame, 3, 1)
	})
	if !strings.Contains(msg, "never handed slot 0 back") {
		t.Errorf("a device that never completes: %q", msg)
	}
}
