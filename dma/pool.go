package dma

import (
	"fmt"
	"sync"
)

// Headroom is the space in front of a received frame, as XDP_PACKET_HEADROOM in the
// kernel: programs may push headers (adjust_head) or metadata (adjust_meta) into it.
const Headroom = 256

// DefaultFrameSize is the size of one pool slot: headroom, a 1518-byte frame and
// room to grow it at the tail.
const DefaultFrameSize = 2048

// Owner says who holds a Buf. Exactly one party owns a buffer at a time; only the
// owner may read or write its bytes or hand it on.
type Owner uint8

const (
	OwnerFree  Owner = iota // on the pool's free list
	OwnerRx                 // posted on an RX ring: the device may write it
	OwnerApp                // handed to software: driver user, program, consumer
	OwnerTx                 // posted on a TX ring: the device may read it
	OwnerQueue              // waiting in a software queue (redirect, TAP, consumer ring)
)

func (o Owner) String() string {
	switch o {
	case OwnerFree:
		return "free"
	case OwnerRx:
		return "rx-ring"
	case OwnerApp:
		return "app"
	case OwnerTx:
		return "tx-ring"
	case OwnerQueue:
		return "queue"
	}
	return fmt.Sprintf("Owner(%d)", uint8(o))
}

// Buf is one frame slot of a Pool. The struct lives as long as its pool; a *Buf is
// a handle that moves between owners, never copied.
//
// The bytes of the frame are Mem[Off : Off+Len]. Off starts at Headroom and moves
// when a program adjusts the head; Meta bytes of XDP metadata lie just before Off.
type Buf struct {
	Mem  []byte // the whole slot (CPU view); immutable
	IOVA uint64 // device address of Mem[0]; immutable
	Off  int    // start of the frame in Mem
	Len  int    // length of the frame
	Meta int    // bytes of metadata in front of Off (XDP data_meta)

	// Filled in by the receiving driver, read by the dataplane (what the
	// kernel's XDP metadata kfuncs report; see Flag*).
	Queue     uint16 // RX queue the frame arrived on
	RSSHash   uint32 // the device's RSS hash, with FlagRSSValid
	HashType  uint32 // the hash's enum xdp_rss_hash_type (L3/L4 bits), with FlagRSSValid
	Flags     uint16 // driver-neutral RX flags (see Flag*)
	VLANProto uint16 // the stripped tag's TPID (0x8100, 0x88a8), with FlagVLAN
	VLANTCI   uint16 // the stripped tag's TCI (PCP, DEI, VID), with FlagVLAN
	Timestamp uint64 // the device clock's RX timestamp in ns, with FlagTimestamp

	// Set by the sender, read by the transmitting driver: what the frame asks
	// of the NIC, as AF_XDP's struct xsk_tx_metadata (see TxFlag*, and
	// nic.TxMetaQueue). Zero asks for nothing, and costs nothing.
	TxFlags    uint8
	CsumStart  uint16 // TxFlagChecksum: the L4 sum starts here, from the frame's first byte
	CsumOffset uint16 // TxFlagChecksum: the checksum goes here, from CsumStart
	LaunchTime uint64 // TxFlagLaunchTime: device-clock ns before which the frame must not leave

	pool  *Pool
	index uint32
	owner Owner
}

// RX flags a driver may set on a received Buf.
const (
	FlagRSSValid  uint16 = 1 << iota // RSSHash and HashType hold the device's hash
	FlagVLAN                         // the device stripped or saw a VLAN tag
	FlagCsumOK                       // the device verified the L3/L4 checksums
	FlagTimestamp                    // Timestamp holds the device's RX timestamp
)

// TX requests a sender may set in Buf.TxFlags, with the values of the kernel's
// XDP_TXMD_FLAGS_* (linux/if_xdp.h).
const (
	TxFlagTimestamp  uint8 = 1 << 0 // XDP_TXMD_FLAGS_TIMESTAMP: report when the frame left
	TxFlagChecksum   uint8 = 1 << 1 // XDP_TXMD_FLAGS_CHECKSUM: insert the L4 checksum
	TxFlagLaunchTime uint8 = 1 << 2 // XDP_TXMD_FLAGS_LAUNCH_TIME: hold until LaunchTime
)

// Data returns the frame's bytes. The slice aliases the buffer and is valid while
// the caller owns the Buf.
func (b *Buf) Data() []byte { return b.Mem[b.Off : b.Off+b.Len] }

// DataIOVA is the device address of the first byte of the frame.
func (b *Buf) DataIOVA() uint64 { return b.IOVA + uint64(b.Off) }

// Owner reports who holds the buffer now.
func (b *Buf) Owner() Owner { return b.owner }

// SetOwner records a change of owner. Drivers and queues call it when a buffer
// moves onto or off a ring, so accounting and debugging see where it is.
func (b *Buf) SetOwner(o Owner) { b.owner = o }

// Pool returns the pool the buffer belongs to.
func (b *Buf) Pool() *Pool { return b.pool }

// Index is the buffer's slot number in its pool, stable for its life.
func (b *Buf) Index() int { return int(b.index) }

// Reset restores an empty frame at the default offset.
func (b *Buf) Reset() {
	b.Off, b.Len, b.Meta = Headroom, 0, 0
	b.Queue, b.RSSHash, b.Flags = 0, 0, 0
	b.TxFlags = 0
}

// Free returns the buffer to its pool. The caller gives up ownership.
func (b *Buf) Free() { b.pool.Put(b) }

// Pool is a fixed set of frame buffers carved from one Region. Get and Put are safe
// for concurrent use: a buffer received on one port may complete on another port's
// TX ring, whose goroutine returns it. The burst forms take the lock once.
type Pool struct {
	alloc     Allocator
	region    *Region
	frameSize int
	bufs      []Buf

	mu       sync.Mutex
	free     []*Buf // stack of free buffers; guarded by mu
	badPuts  uint64 // Put of a buffer already free or of another pool; guarded by mu
	lowWater int    // fewest free buffers seen; guarded by mu
}

// NewPool allocates n frames of frameSize bytes (a multiple of 64, at least
// Headroom+128) from a, in one Region.
func NewPool(a Allocator, n, frameSize int) (*Pool, error) {
	if n <= 0 {
		return nil, fmt.Errorf("dma: pool of %d buffers", n)
	}
	if frameSize < Headroom+128 || frameSize%64 != 0 {
		return nil, fmt.Errorf("dma: frame size %d: want a multiple of 64 of at least %d", frameSize, Headroom+128)
	}
	r, err := a.Alloc(n*frameSize, 0)
	if err != nil {
		return nil, fmt.Errorf("dma: pool of %d x %d bytes: %w", n, frameSize, err)
	}
	p := &Pool{alloc: a, region: r, frameSize: frameSize, bufs: make([]Buf, n), free: make([]*Buf, 0, n)}
	for i := range p.bufs {
		b := &p.bufs[i]
		off := i * frameSize
		b.Mem = r.CPU[off : off+frameSize : off+frameSize]
		b.IOVA = r.IOVA + uint64(off)
		b.pool = p
		b.index = uint32(i)
		b.Reset()
	}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, &p.bufs[i])
	}
	p.lowWater = n
	return p, nil
}

// Close frees the pool's memory. Buffers must not be used afterwards.
func (p *Pool) Close() error {
	if p.region == nil {
		return nil
	}
	err := p.alloc.Free(p.region)
	p.region = nil
	return err
}

// Region is the memory behind the pool, for Sync calls.
func (p *Pool) Region() *Region { return p.region }

// Allocator is the allocator the pool's memory came from.
func (p *Pool) Allocator() Allocator { return p.alloc }

// FrameSize is the size of one slot.
func (p *Pool) FrameSize() int { return p.frameSize }

// Size is the number of buffers in the pool.
func (p *Pool) Size() int { return len(p.bufs) }

// Buf returns slot i, whoever owns it (for drivers mapping a descriptor back to its
// buffer and for tests).
func (p *Pool) Buf(i int) *Buf { return &p.bufs[i] }

// Get takes one free buffer, reset and owned by the caller (OwnerApp), or nil when
// the pool is empty.
func (p *Pool) Get() *Buf {
	p.mu.Lock()
	n := len(p.free)
	if n == 0 {
		p.mu.Unlock()
		return nil
	}
	b := p.free[n-1]
	p.free = p.free[:n-1]
	if n-1 < p.lowWater {
		p.lowWater = n - 1
	}
	p.mu.Unlock()
	b.Reset()
	b.owner = OwnerApp
	return b
}

// GetBurst fills dst with free buffers and returns how many it took.
func (p *Pool) GetBurst(dst []*Buf) int {
	p.mu.Lock()
	n := min(len(dst), len(p.free))
	top := len(p.free)
	for i := 0; i < n; i++ {
		dst[i] = p.free[top-1-i]
	}
	p.free = p.free[:top-n]
	if len(p.free) < p.lowWater {
		p.lowWater = len(p.free)
	}
	p.mu.Unlock()
	for _, b := range dst[:n] {
		b.Reset()
		b.owner = OwnerApp
	}
	return n
}

// Put returns a buffer to the free list. A buffer that is already free, or that
// belongs to another pool, is refused and counted (BadPuts): a bug in the caller,
// never silently a corrupted free list.
func (p *Pool) Put(b *Buf) {
	p.mu.Lock()
	if b.pool != p || b.owner == OwnerFree {
		p.badPuts++
		p.mu.Unlock()
		return
	}
	b.owner = OwnerFree
	p.free = append(p.free, b)
	p.mu.Unlock()
}

// PutBurst returns several buffers under one lock.
func (p *Pool) PutBurst(bufs []*Buf) {
	p.mu.Lock()
	for _, b := range bufs {
		if b.pool != p || b.owner == OwnerFree {
			p.badPuts++
			continue
		}
		b.owner = OwnerFree
		p.free = append(p.free, b)
	}
	p.mu.Unlock()
}

// PoolStats is a snapshot of a pool's accounting.
type PoolStats struct {
	Size     int           // buffers in the pool
	Free     int           // on the free list
	LowWater int           // fewest free buffers seen
	BadPuts  uint64        // refused Puts (double free, wrong pool)
	ByOwner  map[Owner]int // buffers per owner, free included
}

// Stats counts the buffers per owner. It walks every buffer: a control-plane call,
// not for the fast path.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := PoolStats{Size: len(p.bufs), Free: len(p.free), LowWater: p.lowWater, BadPuts: p.badPuts, ByOwner: map[Owner]int{}}
	for i := range p.bufs {
		s.ByOwner[p.bufs[i].owner]++
	}
	return s
}

// CheckIdle returns an error unless every buffer is back on the free list and no
// bad Put was seen: what a test asserts after a run has stopped.
func (p *Pool) CheckIdle() error {
	s := p.Stats()
	if s.BadPuts != 0 {
		return fmt.Errorf("dma: pool saw %d bad puts (double free or wrong pool)", s.BadPuts)
	}
	if s.Free != s.Size || s.ByOwner[OwnerFree] != s.Size {
		return fmt.Errorf("dma: %d of %d buffers not returned (owners: %v)", s.Size-s.Free, s.Size, s.ByOwner)
	}
	return nil
}
