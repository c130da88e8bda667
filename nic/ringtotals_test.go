package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// testRxQueue and testTxQueue stand for a driver's queues: the RX one embeds
// the ring, the TX one holds its guard.
type testRxQueue struct{ *nic.RxRing }

type testTxQueue struct{ guard *nic.TxGuard }

// TestSumRings: DiscardWritten counts the written frames a reset throws away,
// SumRings adds each counter over every queue, and AppendRx and AppendTx name
// them as the drivers' Stats do, in that order.
func TestSumRings(t *testing.T) {
	rx := make([]*testRxQueue, 2)
	for i := range rx {
		r, _ := newRing(t, false, 8, 32)
		rx[i] = &testRxQueue{RxRing: r}
		rx[i].Refill(7, 1, func(d []byte, i int, iova uint64) { d[0] = 0 })
	}
	written := func(d []byte) (bool, bool) { return d[0]&1 != 0, d[0]&2 != 0 }
	for i, v := range []byte{3, 1, 3} { // two frames written on queue 0
		rx[0].Desc(i)[0] = v
	}
	rx[1].Desc(0)[0] = 3 // one on queue 1
	for _, q := range rx {
		q.DiscardWritten(written)
		q.Reset()
	}
	rx[1].DiscardWritten(written) // nothing written after the reset
	rx[1].AllocFail.Add(4)

	tx := []testTxQueue{{&nic.TxGuard{}}, {&nic.TxGuard{}}}
	tx[0].guard.RefusedDMA.Add(1)
	tx[1].guard.RefusedDMA.Add(2)
	tx[1].guard.RefusedLen.Add(5)
	tx[0].guard.RefusedOwner.Add(7)

	got := nic.SumRings(rx, tx, func(q testTxQueue) *nic.TxGuard { return q.guard })
	want := nic.RingTotals{ResetDiscards: 3, AllocFail: 4, RefusedDMA: 3, RefusedLen: 5, RefusedOwner: 7}
	if got != want {
		t.Fatalf("SumRings = %+v, want %+v", got, want)
	}
	cs := got.AppendTx(got.AppendRx(nil))
	names := []string{"rx_reset_discards", "rx_alloc_failed", "tx_refused_dma", "tx_refused_len", "tx_refused_owner"}
	values := []uint64{3, 4, 3, 5, 7}
	if len(cs) != len(names) {
		t.Fatalf("counters %v, want %v", cs, names)
	}
	for i, c := range cs {
		if c.Name != names[i] || c.Value != values[i] {
			t.Errorf("counter %d = %s %d, want %s %d", i, c.Name, c.Value, names[i], values[i])
		}
	}
}
