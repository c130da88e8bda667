package sim

// RxFIFO is a MAC's receive FIFO (packet buffer): frames that arrived from the
// wire and wait for the receive DMA because no descriptor was free, oldest
// first, up to the FIFO's size in bytes as the datasheet gives it. A frame
// that does not fit when it arrives is dropped by the model and counted in the
// register the datasheet names for a FIFO overflow.
//
// A frame takes its length plus the FCS, rounded up to the FIFO's 8-byte
// words (the MACs keep the FCS in the FIFO and store whole words). The
// frames' bytes are copied in (Push) and read back in place (Front) until Pop.
// It does not allocate after NewRxFIFO (or a SetSize that grows it). It has
// no lock: the model's lock guards it.
type RxFIFO struct {
	size    int       // capacity in bytes (footprints)
	used    int       // bytes of footprints held
	buf     []byte    // frame bytes, placed contiguously, wrapping
	ents    []fifoEnt // ring of entries, oldest at head
	head    int       // index of the oldest entry in ents
	n       int       // entries held
	rd, wr  int       // byte offsets in buf: oldest frame's start, next free byte
	flushed uint64    // frames Flush threw away, in all
}

type fifoEnt struct {
	off, n int // the frame is buf[off:off+n]
	tag    int // what the model noted with it (a queue number)
}

// fifoMaxFrame is the longest frame a FIFO copies: a 9 KB jumbo frame with
// room to spare, and the slack its wrapping storage needs.
const fifoMaxFrame = 16 << 10

// NewRxFIFO makes a FIFO of size bytes.
func NewRxFIFO(size int) *RxFIFO {
	f := &RxFIFO{}
	f.SetSize(size)
	return f
}

// footprint is the FIFO bytes a frame of n bytes (no FCS) takes.
func footprint(n int) int { return (n + WireFCS + 7) &^ 7 }

// SetSize changes the capacity (a driver programming the FIFO's size). Frames
// held stay; arrivals are checked against the new size. It allocates when the
// FIFO grows: call it at configuration, not per frame.
func (f *RxFIFO) SetSize(size int) {
	size = max(size, 0)
	if size == f.size && f.buf != nil {
		return
	}
	f.size = size
	if need := size + fifoMaxFrame; need > len(f.buf) || size/WireMinFrame+2 > len(f.ents) {
		old := *f
		f.buf = make([]byte, need)
		f.ents = make([]fifoEnt, size/WireMinFrame+2)
		f.head, f.n, f.rd, f.wr, f.used = 0, 0, 0, 0, 0
		for i := 0; i < old.n; i++ {
			e := old.ents[(old.head+i)%len(old.ents)]
			f.place(old.buf[e.off:e.off+e.n], e.tag)
		}
	}
}

// Size is the capacity in bytes.
func (f *RxFIFO) Size() int { return f.size }

// Len is the number of frames held.
func (f *RxFIFO) Len() int { return f.n }

// Used is the bytes the held frames take.
func (f *RxFIFO) Used() int { return f.used }

// Push copies frame in behind the others, noting tag with it. It reports
// false, and holds nothing new, when the frame does not fit: an overflow.
func (f *RxFIFO) Push(frame []byte, tag int) bool {
	if len(frame) > fifoMaxFrame || f.used+footprint(len(frame)) > f.size || f.n == len(f.ents) {
		return false
	}
	return f.place(frame, tag)
}

// place stores frame contiguously in buf after the newest frame, wrapping to
// the start when the end has no room.
func (f *RxFIFO) place(frame []byte, tag int) bool {
	n := len(frame)
	off := -1
	switch {
	case f.n == 0:
		f.rd, f.wr, off = 0, 0, 0
	case f.wr > f.rd: // held: [rd, wr)
		if n <= len(f.buf)-f.wr {
			off = f.wr
		} else if n < f.rd {
			off = 0
		}
	default: // wrapped: held [rd, end of the tail) and [0, wr)
		if f.wr+n < f.rd {
			off = f.wr
		}
	}
	if off < 0 {
		return false
	}
	copy(f.buf[off:], frame)
	f.ents[(f.head+f.n)%len(f.ents)] = fifoEnt{off: off, n: n, tag: tag}
	f.n++
	f.wr = off + n
	f.used += footprint(n)
	return true
}

// Front is the oldest frame and its tag; ok is false when the FIFO is empty.
// frame stays valid until the next Pop, Flush or SetSize.
func (f *RxFIFO) Front() (frame []byte, tag int, ok bool) {
	if f.n == 0 {
		return nil, 0, false
	}
	e := f.ents[f.head]
	return f.buf[e.off : e.off+e.n : e.off+e.n], e.tag, true
}

// Pop removes the oldest frame (the receive DMA took it, or the model dropped
// it).
func (f *RxFIFO) Pop() {
	if f.n == 0 {
		return
	}
	e := f.ents[f.head]
	f.used -= footprint(e.n)
	f.head = (f.head + 1) % len(f.ents)
	f.n--
	if f.n == 0 {
		f.head, f.rd, f.wr, f.used = 0, 0, 0, 0
		return
	}
	f.rd = f.ents[f.head].off
}

// Flush empties the FIFO (a reset) and returns how many frames it held.
func (f *RxFIFO) Flush() int {
	n := f.n
	f.flushed += uint64(n)
	f.head, f.n, f.rd, f.wr, f.used = 0, 0, 0, 0, 0
	return n
}

// Flushed is how many frames Flush threw away since NewRxFIFO: frames a reset
// lost that no register of the MAC counts.
func (f *RxFIFO) Flushed() uint64 { return f.flushed }

// RxUnseen is what a model knows of the frames from its wire that reached no
// register a driver reads and no ring: only the wire (the link partner's
// transmit counters, a tap on the cable) sees them. With the device's drop
// counters and the driver's discard counters they account for every frame
// offered: offered = received + dropped by the device + discarded by the
// driver + Off + Filtered + Flushed.
type RxUnseen struct {
	// Off arrived while the MAC took nothing: receiver disabled (a port
	// stopped for a reset), link down, device in reset or removed. The
	// datasheets' receive counters do not count while receives are off.
	Off uint64
	// Filtered failed the MAC's address filter.
	Filtered uint64
	// Flushed waited in the receive FIFO when a reset emptied it.
	Flushed uint64
}
