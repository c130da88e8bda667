package nic

// RingTotals are the counters the ring machine and the TX guard keep for
// every driver, summed over a port's queues: the RX frames a reset threw away
// (RxRing.ResetDiscards), the refills the pool came up short for
// (RxRing.AllocFail), and the buffers TxGuard refused. Drivers report them
// under the same names (AppendRx, AppendTx), as their Stats read them.
type RingTotals struct {
	ResetDiscards, AllocFail             uint64
	RefusedDMA, RefusedLen, RefusedOwner uint64
}

// SumRings adds up the ring counters of a port's RX queues (each embedding an
// RxRing) and TX queues (guard gives each one's TxGuard). The counters are
// read atomically: Stats may run beside the queues' goroutines.
func SumRings[R interface{ RxCore() *RxRing }, T any](rx []R, tx []T, guard func(T) *TxGuard) RingTotals {
	var t RingTotals
	for _, q := range rx {
		r := q.RxCore()
		t.ResetDiscards += r.ResetDiscards.Load()
		t.AllocFail += r.AllocFail.Load()
	}
	for _, q := range tx {
		g := guard(q)
		t.RefusedDMA += g.RefusedDMA.Load()
		t.RefusedLen += g.RefusedLen.Load()
		t.RefusedOwner += g.RefusedOwner.Load()
	}
	return t
}

// AppendRx appends rx_reset_discards and rx_alloc_failed.
func (t RingTotals) AppendRx(out []Counter) []Counter {
	return append(out,
		Counter{Name: "rx_reset_discards", Value: t.ResetDiscards},
		Counter{Name: "rx_alloc_failed", Value: t.AllocFail})
}

// AppendTx appends tx_refused_dma, tx_refused_len and tx_refused_owner.
func (t RingTotals) AppendTx(out []Counter) []Counter {
	return append(out,
		Counter{Name: "tx_refused_dma", Value: t.RefusedDMA},
		Counter{Name: "tx_refused_len", Value: t.RefusedLen},
		Counter{Name: "tx_refused_owner", Value: t.RefusedOwner})
}
