package sim

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

// fakeGuest is memory reached by copies, counting the writes it is sent.
type fakeGuest struct {
	mu     sync.Mutex
	base   uint64
	mem    []byte
	writes [][2]uint64 // iova, length
	fail   error
	failW  error
	slow   chan struct{} // when set, done waits for it to close
}

func (g *fakeGuest) ReadGuest(iova uint64, p []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return g.fail
	}
	copy(p, g.mem[iova-g.base:])
	return nil
}

// PostWriteGuest writes at once; a refusal shows when done is called.
func (g *fakeGuest) PostWriteGuest(iova uint64, p []byte) (func() error, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.failW; err != nil {
		return func() error { return err }, nil
	}
	g.writes = append(g.writes, [2]uint64{iova, uint64(len(p))})
	copy(g.mem[iova-g.base:], p)
	if slow := g.slow; slow != nil {
		return func() error { <-slow; return nil }, nil
	}
	return func() error { return nil }, nil
}

func (g *fakeGuest) set(off int, b byte) {
	g.mu.Lock()
	g.mem[off] = b
	g.mu.Unlock()
}

func newMsgMemory(t *testing.T, g *fakeGuest) (*Memory, *Faults) {
	f := &Faults{}
	m := NewMemory(MemoryConfig{}, f)
	var mu sync.Mutex
	m.SetDeviceLock(&mu)
	n := len(g.mem)
	require.NoError(t, m.MapMessages(g.base, make([]byte, n), make([]byte, n), g))
	return m, f
}

// TestMessagesFetchOnView: a view holds the other party's bytes of the moment
// it was taken, also after they changed since an earlier view.
func TestMessagesFetchOnView(t *testing.T) {
	g := &fakeGuest{base: 0x9000, mem: make([]byte, 2*PageSize)}
	copy(g.mem[100:], "descriptor v1")
	m, f := newMsgMemory(t, g)
	v, err := m.View("rx-desc", 0x9000+100, 13)
	require.NoError(t, err)
	require.Equal(t, "descriptor v1", string(v))
	copy(g.mem[100:], "descriptor v2") // the driver rewrites it
	v, err = m.View("rx-desc", 0x9000+100, 13)
	require.NoError(t, err)
	require.Equal(t, "descriptor v2", string(v), "no stale descriptor")

	_, err = m.View("rx-desc", 0x9000+2*PageSize-4, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped, "past the range: refused without asking")
	g.fail = errors.New("client gone")
	_, err = m.View("rx-desc", 0x9000, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped)
	require.Equal(t, 2, f.Count())
	require.Contains(t, f.List()[1].Detail, "client gone")
	require.NoError(t, m.Check(0x9000, 8), "Check asks nobody")
}

// TestMessagesWriteBackChangedBytesOnly: WriteBack sends the runs the device
// changed, and leaves the other party's own changes next to them alone (a
// write-back of the whole view would put the stale bytes back).
func TestMessagesWriteBackChangedBytesOnly(t *testing.T) {
	g := &fakeGuest{base: 0x20_0000, mem: make([]byte, PageSize)}
	for i := range g.mem {
		g.mem[i] = 0xEE
	}
	m, _ := newMsgMemory(t, g)
	require.False(t, m.Watched(), "nothing viewed: a periodic WriteBack can skip the device lock")
	v, err := m.View("rx-writeback", 0x20_0000, 64)
	require.NoError(t, err)
	require.True(t, m.Watched())
	copy(v[8:], []byte{1, 2, 3, 4}) // the device's write-back: bytes 8..11
	v[40] = 0x55
	g.mem[20] = 0x77 // the driver's own write after the fetch
	require.NoError(t, m.WriteBack())
	require.Equal(t, [][2]uint64{{0x20_0000 + 8, 4}, {0x20_0000 + 40, 1}}, g.writes, "two runs, nothing else")
	require.Equal(t, []byte{1, 2, 3, 4}, g.mem[8:12])
	require.Equal(t, byte(0x77), g.mem[20], "the driver's byte survives")
	require.NoError(t, m.WriteBack())
	require.Len(t, g.writes, 2, "nothing new to send")

	// A view taken again after the device wrote but before a write-back keeps
	// the device's bytes (they are newer than the other party's).
	v[0] = 9
	v2, err := m.View("rx-writeback", 0x20_0000, 64)
	require.NoError(t, err)
	require.Equal(t, byte(9), v2[0], "the unsent device write is not lost to the fetch")
	require.Equal(t, byte(0x77), v2[20], "and the driver's write is seen")
	require.NoError(t, m.WriteBack())
	require.Equal(t, byte(9), g.mem[0])
}

// TestMessagesWriteBackRetried: a run the other party did not take stays
// dirty and goes with the next WriteBack; overlapping views send it once.
func TestMessagesWriteBackRetried(t *testing.T) {
	g := &fakeGuest{base: 0x30_0000, mem: make([]byte, PageSize)}
	m, f := newMsgMemory(t, g)
	v, err := m.View("tx-writeback", 0x30_0000, 32)
	require.NoError(t, err)
	_, err = m.View("tx-writeback", 0x30_0000+16, 32) // overlaps the first
	require.NoError(t, err)
	v[20] = 0xDD
	g.failW = errors.New("busy")
	require.Error(t, m.WriteBack())
	require.Equal(t, 1, f.Count(), "the failed write-back is logged")
	require.Zero(t, g.mem[20])
	g.failW = nil
	require.NoError(t, m.WriteBack())
	require.Equal(t, byte(0xDD), g.mem[20], "sent on the retry")
	require.Equal(t, [][2]uint64{{0x30_0000 + 20, 1}}, g.writes, "once, though two views cover it")
}

// TestMessagesWriteBackFramesFirst: the device's writes to a frame go out
// before those to the descriptor that hands it over, whatever their order in
// memory; a descriptor byte inside a larger view (a whole-ring view) counts as
// the descriptor's. Sending in address order would put the descriptor first.
func TestMessagesWriteBackFramesFirst(t *testing.T) {
	g := &fakeGuest{base: 0x40_0000, mem: make([]byte, 4*PageSize)}
	m, _ := newMsgMemory(t, g)
	const ring, buf = 0x40_0000, 0x40_0000 + 2*PageSize
	whole, err := m.View("fetch", ring, PageSize) // the ring, viewed whole
	require.NoError(t, err)
	d, err := m.View("rx-desc", ring+16, 16)
	require.NoError(t, err)
	f, err := m.View("rx-buffer", buf, 100)
	require.NoError(t, err)
	copy(f, "frame")
	d[8] = 1          // DD, through the descriptor's view
	whole[100*16] = 7 // another byte of the ring, in the large view only
	require.NoError(t, m.WriteBack())
	require.Equal(t, [][2]uint64{{ring + 100*16, 1}, {buf, 5}, {ring + 16 + 8, 1}}, g.writes,
		"large views (ring byte, frame) in address order, then the descriptor")
}

// TestMessagesFetchDuringWriteBack: the other party has the device's write
// once it is posted; a driver that saw it and rewrote the byte before the
// write-back's reply came is seen by the next fetch (the device does not keep
// its own older byte).
func TestMessagesFetchDuringWriteBack(t *testing.T) {
	g := &fakeGuest{base: 0x50_0000, mem: make([]byte, PageSize), slow: make(chan struct{})}
	m, _ := newMsgMemory(t, g)
	d, err := m.View("rx-writeback", 0x50_0000, 16)
	require.NoError(t, err)
	d[8] = 1 // DD
	wb := make(chan error)
	go func() { wb <- m.WriteBack() }()
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.mem[8] == 1 }, time.Second, time.Millisecond)
	g.set(8, 0) // the driver took the descriptor and handed it back
	d, err = m.View("rx-desc", 0x50_0000, 16)
	require.NoError(t, err)
	require.Zero(t, d[8], "the driver's newer byte, not the device's own older one")
	close(g.slow)
	require.NoError(t, <-wb)
	require.NoError(t, m.WriteBack())
	require.Len(t, g.writes, 1, "and it is not written back again")
}
