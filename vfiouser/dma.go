package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim"
	"golang.org/x/sys/unix"
)

// DMA. A DMA_MAP with a file descriptor (guest RAM as a shared memfd) is mapped
// into the server (mmap of the descriptor at the given offset, at its IOVA's
// place in an arena when one holds it: arena.go; then the descriptor is
// closed: the mapping keeps the memory) and handed to the model's sim.Memory
// (MapArena, or MapExternal) at the client's IOVA, so the model's descriptor
// and buffer accesses reach guest memory directly and an access outside every
// mapped range is refused and logged as an IOMMU fault. DMA_UNMAP takes the
// range from the model, then swaps its pages for zeros before replying and
// unmaps them (or, in an arena, makes them inaccessible) a grace period later
// (releaseLocked). A DMA_MAP without a descriptor gets a mirror in the model
// that fetches and writes back with DMA_READ and DMA_WRITE messages
// (msgdma.go, sim.Memory.MapMessages); Session.ReadGuest and WriteGuest reach
// it with messages directly.

type dmaRange struct {
	iova, size uint64
	flags      uint32
	mem        []byte    // the mmap, or nil for a message-only range
	arena      *dmaArena // the arena mem is a piece of, or nil (mapped on its own)
	shadow     []byte    // message-only: the model's mirror and its clean copy (sim.MapMessages)
}

// dmaTable is the session's DMA ranges. mu guards everything.
type dmaTable struct {
	mem *sim.Memory  // immutable
	io  sim.GuestIO  // immutable: the session, for message-only ranges
	msg atomic.Int32 // message-only ranges the model reaches

	mu     sync.Mutex
	ranges []dmaRange
	graves []grave     // released mappings waiting out unmapGrace
	arenas []*dmaArena // reservations, unmapped by close
	closed bool
}

// grave is a released mapping, zero-filled, to be unmapped (or, in an arena,
// made PROT_NONE) after unmapGrace.
type grave struct {
	mem   []byte
	iova  uint64
	arena *dmaArena // nil: mem was mapped on its own
	at    time.Time
}

// unmapGrace is how long a released mapping stays (as zero pages) before it is
// unmapped. The models take their device lock for descriptor and buffer
// accesses, which UnmapExternal waits for, but a transmitted frame may be a view
// of guest memory that the wire reads after the lock is released (igbsim and
// dwmacsim send with only their transmit lock held), and ReadGuest copies
// without the table's lock; those accesses take microseconds.
const unmapGrace = 100 * time.Millisecond

func newDMATable(mem *sim.Memory, io sim.GuestIO) *dmaTable { return &dmaTable{mem: mem, io: io} }

func (t *dmaTable) overlapLocked(iova, size uint64) *dmaRange {
	for i := range t.ranges {
		r := &t.ranges[i]
		if r.iova < iova+size && iova < r.iova+r.size {
			return r
		}
	}
	return nil
}

func (t *dmaTable) mapRange(m DMAMap, fd int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fail(unix.ENODEV, "DMA_MAP after the session ended")
	}
	if len(t.ranges) >= maxDMAMaps {
		return fail(unix.ENOSPC, "DMA_MAP: %d ranges mapped already", len(t.ranges))
	}
	if o := t.overlapLocked(m.Address, m.Size); o != nil {
		return fail(unix.EEXIST, "DMA_MAP [0x%x, +0x%x) overlaps [0x%x, +0x%x)", m.Address, m.Size, o.iova, o.size)
	}
	r := dmaRange{iova: m.Address, size: m.Size, flags: m.Flags}
	if fd >= 0 {
		if m.Offset%pageSize != 0 {
			return fail(unix.EINVAL, "DMA_MAP file offset 0x%x is not page-aligned", m.Offset)
		}
		if m.Size > 1<<40 || m.Offset > 1<<62 {
			return fail(unix.EINVAL, "DMA_MAP of 0x%x bytes at file offset 0x%x: too large", m.Size, m.Offset)
		}
		// A mapping past the end of the file would fault (SIGBUS) on access.
		// (A client that shrinks the file after DMA_MAP can still do that: the
		// protocol trusts the client with its own memory file.)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fail(unix.EBADF, "DMA_MAP: fstat of the descriptor: %v", err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && uint64(st.Size) < m.Offset+m.Size {
			return fail(unix.EINVAL, "DMA_MAP of 0x%x bytes at file offset 0x%x: the file has only 0x%x bytes", m.Size, m.Offset, st.Size)
		}
		if err := t.mapFdLocked(&r, m, fd); err != nil {
			return err
		}
	} else if m.Flags&(DMAFlagRead|DMAFlagWrite) != 0 {
		if err := t.mapMsgLocked(&r, m); err != nil {
			return err
		}
	}
	t.ranges = append(t.ranges, r)
	return nil
}

// mapFdLocked maps the descriptor's memory for r: at its IOVA's place in an
// arena when one holds it, else on its own; then into the model.
func (t *dmaTable) mapFdLocked(r *dmaRange, m DMAMap, fd int) error {
	// A range the client does not let the device write is mapped privately:
	// device writes then stay in the server, as writes to ROM go nowhere.
	shared := m.Flags&DMAFlagWrite != 0
	a, err := t.arenaForLocked(m.Address, m.Size)
	if err != nil {
		return fail(unix.ENOMEM, "DMA_MAP: %v", err)
	}
	var b []byte
	if a != nil {
		b = a.piece(m.Address, m.Size)
		err = mapFixed(b, fd, int64(m.Offset), shared)
	} else {
		flags := unix.MAP_PRIVATE
		if shared {
			flags = unix.MAP_SHARED
		}
		b, err = unix.Mmap(fd, int64(m.Offset), int(m.Size), unix.PROT_READ|unix.PROT_WRITE, flags)
	}
	if err != nil {
		no := unix.EINVAL
		var e unix.Errno
		if errors.As(err, &e) {
			no = e
		}
		return fail(no, "DMA_MAP: mmap of 0x%x bytes at file offset 0x%x: %v", m.Size, m.Offset, err)
	}
	undo := func() {
		if a != nil {
			_ = protNone(b)
		} else {
			unix.Munmap(b)
		}
	}
	if m.Flags&DMAFlagRead != 0 || m.Flags&DMAFlagWrite != 0 {
		if a != nil {
			err = t.mem.MapArena(a.sim, m.Address, int(m.Size))
		} else {
			err = t.mem.MapExternal(m.Address, b)
		}
		if err != nil {
			undo()
			if errors.Is(err, sim.ErrExternalOverlap) {
				return fail(unix.EEXIST, "DMA_MAP: %v", err)
			}
			return fail(unix.EINVAL, "DMA_MAP: %v", err)
		}
	}
	r.mem, r.arena = b, a
	return nil
}

// maxMsgRange bounds one message-only range (its mirror is address space the
// server reserves; pages are committed only where the model looks).
const maxMsgRange = 64 << 30

// mapMsgLocked gives the model a mirror of a range without a descriptor, which
// sim.Memory fetches on every View and writes back at WriteBack.
func (t *dmaTable) mapMsgLocked(r *dmaRange, m DMAMap) error {
	if m.Size > maxMsgRange {
		return fail(unix.ENOMEM, "DMA_MAP of 0x%x bytes without a descriptor: at most 0x%x", m.Size, uint64(maxMsgRange))
	}
	b, err := unix.Mmap(-1, 0, int(2*m.Size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fail(unix.ENOMEM, "DMA_MAP: mirror of 0x%x bytes: %v", m.Size, err)
	}
	if err := t.mem.MapMessages(m.Address, b[:m.Size:m.Size], b[m.Size:], t.io); err != nil {
		unix.Munmap(b)
		if errors.Is(err, sim.ErrExternalOverlap) {
			return fail(unix.EEXIST, "DMA_MAP: %v", err)
		}
		return fail(unix.EINVAL, "DMA_MAP: %v", err)
	}
	r.shadow = b
	t.msg.Add(1)
	return nil
}

// unmapRange removes every range inside [iova, iova+size) (all of them with
// all), as the kernel's type1 IOMMU does: QEMU with a vIOMMU unmaps whole IOTLB
// spans that may hold several mappings or none. A range only partly inside is
// refused (EINVAL) and nothing is removed; an unmap that holds no range removes
// nothing and succeeds, as type1's does. vfio-user.rst asks for an exact match;
// this is a superset of that.
func (t *dmaTable) unmapRange(iova, size uint64, all bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := iova + (size - 1) // inclusive: the range may end at 2^64
	inside := func(r dmaRange) bool { return all || (r.iova >= iova && r.iova+(r.size-1) <= last) }
	for _, r := range t.ranges {
		if !inside(r) && r.iova <= last && iova <= r.iova+(r.size-1) {
			return 0, fail(unix.EINVAL, "DMA_UNMAP [0x%x, +0x%x) cuts the mapping [0x%x, +0x%x)", iova, size, r.iova, r.size)
		}
	}
	kept, n := t.ranges[:0], 0
	for _, r := range t.ranges {
		if inside(r) {
			t.releaseLocked(r)
			n++
			continue
		}
		kept = append(kept, r)
	}
	clear(t.ranges[len(kept):])
	t.ranges = kept
	return n, nil
}

// releaseLocked takes r away from the model (UnmapExternal also waits for the
// model's device lock), replaces its pages with zeros at once, so the guest's
// memory is out of reach when DMA_UNMAP is answered (vfio-user.rst: "release
// all references ... before replying"), and unmaps the replacement once
// unmapGrace has passed.
func (t *dmaTable) releaseLocked(r dmaRange) {
	if r.shadow != nil {
		// The mirror is the server's own memory: no guest page behind it to
		// hide, but a view the model still holds stays readable for the grace.
		_, _, _ = t.mem.UnmapExternal(r.iova, r.size)
		t.msg.Add(-1)
		t.graves = append(t.graves, grave{mem: r.shadow, at: time.Now()})
		t.sweepLocked(time.Now(), false)
		return
	}
	if r.mem == nil {
		return
	}
	if r.flags&(DMAFlagRead|DMAFlagWrite) != 0 {
		_, _, _ = t.mem.UnmapExternal(r.iova, r.size) // not mapped: the model was closed
	}
	now := time.Now()
	if err := zeroFill(r.mem); err != nil {
		now = now.Add(unmapGrace) // keep it longer: the guest's pages are still behind it
	}
	t.graves = append(t.graves, grave{mem: r.mem, iova: r.iova, arena: r.arena, at: now})
	t.sweepLocked(time.Now(), false)
}

// sweepLocked unmaps the graves older than unmapGrace, or all with all.
func (t *dmaTable) sweepLocked(now time.Time, all bool) {
	kept := t.graves[:0]
	for _, g := range t.graves {
		if all || now.Sub(g.at) >= unmapGrace {
			if g.arena != nil {
				t.restoreLocked(g)
			} else {
				unix.Munmap(g.mem)
			}
			continue
		}
		kept = append(kept, g)
	}
	clear(t.graves[len(kept):])
	t.graves = kept
}

// close releases every range and, after the grace of the youngest, unmaps them.
func (t *dmaTable) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, r := range t.ranges {
		t.releaseLocked(r)
	}
	t.ranges = nil
	var youngest time.Time
	for _, g := range t.graves {
		if g.at.After(youngest) {
			youngest = g.at
		}
	}
	if wait := unmapGrace - time.Since(youngest); len(t.graves) > 0 && wait > 0 {
		time.Sleep(wait)
	}
	t.sweepLocked(time.Now(), true)
	for _, a := range t.arenas {
		_ = release(a.mem)
	}
	t.arenas = nil
}

// find returns the range holding [iova, iova+n).
func (t *dmaTable) find(iova uint64, n int) (dmaRange, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.ranges {
		if iova >= r.iova && uint64(n) <= r.size && iova-r.iova <= r.size-uint64(n) {
			return r, true
		}
	}
	return dmaRange{}, false
}

// ReadGuest reads client memory at iova into p, as the device would: through
// the mapping when the client passed a descriptor, else with DMA_READ messages
// of at most the client's max_data_xfer_size. An address the client did not map
// is refused and logged in the model's fault log. It must not be called from
// the session's own goroutine (the loop that delivers the replies).
func (s *Session) ReadGuest(iova uint64, p []byte) error {
	r, err := s.guestRange(iova, len(p), false)
	if err != nil {
		return err
	}
	if r.mem != nil {
		copy(p, r.mem[iova-r.iova:])
		return nil
	}
	chunk := s.chunk()
	for len(p) > 0 {
		n := min(len(p), chunk)
		fixed := dmaRWHeader(iova, n)
		s.stats.DMAMessages.Add(1)
		rep, err := s.call(CmdDMARead, fixed[:])
		if err != nil {
			return err
		}
		if len(rep.Payload) != dmaRWFixed+n {
			return fmt.Errorf("%w: DMA_READ reply of %d bytes for %d", ErrMessage, len(rep.Payload), dmaRWFixed+n)
		}
		copy(p, rep.Payload[dmaRWFixed:])
		iova += uint64(n)
		p = p[n:]
	}
	return nil
}

// WriteGuest writes p to client memory at iova; see ReadGuest.
func (s *Session) WriteGuest(iova uint64, p []byte) error {
	done, err := s.PostWriteGuest(iova, p)
	if err != nil {
		return err
	}
	return done()
}

// PostWriteGuest sends the DMA_WRITE messages that write p at iova (p may be
// reused when it returns) and returns done, which waits for their replies.
// The client handles requests in order, so a DMA_READ sent after
// PostWriteGuest returns reads what it wrote (sim.GuestIO).
func (s *Session) PostWriteGuest(iova uint64, p []byte) (done func() error, err error) {
	r, err := s.guestRange(iova, len(p), true)
	if err != nil {
		return nil, err
	}
	if r.mem != nil {
		copy(r.mem[iova-r.iova:], p)
		return func() error { return nil }, nil
	}
	chunk := s.chunk()
	var sent []pendingCall
	for len(p) > 0 {
		n := min(len(p), chunk)
		fixed := dmaRWHeader(iova, n)
		s.stats.DMAMessages.Add(1)
		c, err := s.send(CmdDMAWrite, fixed[:], p[:n])
		if err != nil {
			return nil, err // the ones sent: their replies are dropped
		}
		sent = append(sent, c)
		iova += uint64(n)
		p = p[n:]
	}
	return func() error {
		var first error
		for _, c := range sent {
			if _, err := s.wait(c); err != nil && first == nil {
				first = err
			}
		}
		return first
	}, nil
}

// guestRange is the range holding [iova, iova+n) the client mapped for a
// read (or write); a refusal is logged in the model's fault log.
func (s *Session) guestRange(iova uint64, n int, write bool) (dmaRange, error) {
	op, need := "dma-read", DMAFlagRead
	if write {
		op, need = "dma-write", DMAFlagWrite
	}
	r, ok := s.dma.find(iova, n)
	if !ok || r.flags&need == 0 {
		s.dev.Faults().Add(op, "", iova, "%d-byte guest access not inside a range the client mapped for it", n)
		return dmaRange{}, fmt.Errorf("vfiouser: %s of %d bytes at 0x%x: %w", op, n, iova, dma.ErrNotMapped)
	}
	return r, nil
}

// chunk is the largest DMA_READ/DMA_WRITE count both sides accept.
func (s *Session) chunk() int { return int(min(s.peerMaxXfer.Load(), uint32(s.opts.MaxDataXfer))) }

// dmaRWHeader is the fixed part of a DMA_READ/DMA_WRITE: address, count.
func dmaRWHeader(iova uint64, n int) [dmaRWFixed]byte {
	var fixed [dmaRWFixed]byte
	binary.LittleEndian.PutUint64(fixed[0:], iova)
	binary.LittleEndian.PutUint64(fixed[8:], uint64(n))
	return fixed
}
