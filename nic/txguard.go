package nic

import (
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
)

// TxGuard is what a TX queue checks before a descriptor carries a buffer: a
// length and offset the device can send, and memory the device may read.
// Every driver's Send asks it, once per frame, through OK.
//
// Reachability is decided per pool where it can be: a pool whose whole region
// the allocator maps (Allocator.Check) and the device can address (Reach) is
// trusted, and its buffers pass on a pointer comparison; the pool the previous
// frame came from is tried first, since frames come in runs. Any other buffer
// is checked on its own. The table of trusted pools is preallocated and never
// grows past MaxTrustedPools; beyond that, buffers are checked one by one.
//
// A TxGuard belongs to its queue's goroutine, but for the counters, which
// Stats reads atomically.
type TxGuard struct {
	alloc   dma.Allocator
	minLen  int
	maxLen  int
	reach   func(iova uint64, n int) error // the device's own address limit; nil: none
	trusted []TrustedPool
	last    *TrustedPool

	// OnRefuse, when set, is told of each buffer Admit frees unsent (a
	// driver completes its TX timestamp request, unstamped). Set at setup.
	OnRefuse func(b *dma.Buf)

	RefusedDMA   atomic.Uint64 // buffers the device may not read: not sent
	RefusedLen   atomic.Uint64 // buffers with a length or offset the device cannot send
	RefusedOwner atomic.Uint64 // buffers the caller did not own (HeldElsewhere): not sent
}

// TrustedPool is a pool whose buffers the device may read, with what a
// driver needs to sync them.
type TrustedPool struct {
	Pool     *dma.Pool
	Region   *dma.Region
	Alloc    dma.Allocator // the pool's own allocator (maybe another port's)
	Coherent bool          // Alloc's memory needs no Sync (dma.IsCoherent)
}

// MaxTrustedPools is how many pools a TxGuard trusts at most.
const MaxTrustedPools = 16

// NewTxGuard makes the guard of a queue whose device reads through alloc,
// sends frames of minLen to maxLen bytes, and, when reach is not nil, can
// address only what reach accepts (e.g. 32-bit descriptors, a DMA mask).
func NewTxGuard(alloc dma.Allocator, minLen, maxLen int, reach func(iova uint64, n int) error) *TxGuard {
	return &TxGuard{alloc: alloc, minLen: minLen, maxLen: maxLen, reach: reach,
		trusted: make([]TrustedPool, 0, MaxTrustedPools)}
}

// Trust records p as a pool the device may read, when its region is mapped
// and reachable and the table has room, and returns its entry (nil when not
// trusted). Drivers call it at Open for their RX pools; OK calls it for pools
// it meets.
func (g *TxGuard) Trust(p *dma.Pool) *TrustedPool {
	r := p.Region()
	if r == nil || len(g.trusted) == cap(g.trusted) {
		return nil
	}
	if g.alloc.Check(r.IOVA, r.Len()) != nil || g.reach != nil && g.reach(r.IOVA, r.Len()) != nil {
		return nil
	}
	a := p.Allocator()
	g.trusted = append(g.trusted, TrustedPool{Pool: p, Region: r, Alloc: a, Coherent: a == nil || dma.IsCoherent(a)})
	return &g.trusted[len(g.trusted)-1]
}

// Admit is the per-frame part of Send that every driver shares. It reports
// whether b may go on the ring, and then has synced it for the device. A
// buffer that may not is counted and dealt with: one the caller does not own
// (HeldElsewhere) is left alone, as it belongs to someone else; one the
// device cannot send or read is freed back to its pool (after OnRefuse).
func (g *TxGuard) Admit(b *dma.Buf) bool {
	if HeldElsewhere(b) {
		g.RefusedOwner.Add(1)
		return false
	}
	t, ok := g.OK(b)
	switch {
	case !ok:
		if b != nil {
			if g.OnRefuse != nil {
				g.OnRefuse(b)
			}
			if b.Pool() != nil {
				b.Free()
			}
		}
		return false
	case t != nil:
		if !t.Coherent {
			t.Alloc.Sync(t.Region, int(b.DataIOVA()-t.Region.IOVA), b.Len, dma.ForDevice)
		}
	case b.Pool() != nil && b.Pool().Region() != nil:
		r := b.Pool().Region()
		b.Pool().Allocator().Sync(r, int(b.DataIOVA()-r.IOVA), b.Len, dma.ForDevice)
	}
	return true
}

// OK decides whether a descriptor may carry b, counting a refusal. t is b's
// pool entry when the pool is trusted, nil when b was checked on its own.
// The common case, a good buffer of the pool the previous frame came from,
// is decided inline.
func (g *TxGuard) OK(b *dma.Buf) (t *TrustedPool, ok bool) {
	if l := g.last; l != nil && b != nil && b.Pool() == l.Pool && b.Len >= g.minLen && b.Len <= g.maxLen && b.Off >= 0 && b.Off+b.Len <= len(b.Mem) {
		return l, true
	}
	return g.check(b)
}

// check is OK's general case.
func (g *TxGuard) check(b *dma.Buf) (t *TrustedPool, ok bool) {
	if b == nil || b.Len < g.minLen || b.Len > g.maxLen || b.Off < 0 || b.Off+b.Len > len(b.Mem) {
		g.RefusedLen.Add(1)
		return nil, false
	}
	if p := b.Pool(); p != nil {
		if g.last != nil && g.last.Pool == p {
			return g.last, true
		}
		if t := g.find(p); t != nil {
			g.last = t
			return t, true
		}
	}
	iova := b.DataIOVA()
	if g.alloc.Check(iova, b.Len) != nil || g.reach != nil && g.reach(iova, b.Len) != nil {
		g.RefusedDMA.Add(1)
		return nil, false
	}
	return nil, true
}

// find is p's entry, trusting p now if it can be.
func (g *TxGuard) find(p *dma.Pool) *TrustedPool {
	if p.Region() == nil {
		return nil
	}
	for i := range g.trusted {
		if g.trusted[i].Pool == p {
			return &g.trusted[i]
		}
	}
	return g.Trust(p)
}
