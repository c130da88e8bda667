package vfiouser

import (
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"
)

// Region accesses. The model's registers take aligned 32-bit accesses only (the
// 82576 datasheet, 8.1: "all registers ... should be accessed as 32-bit
// double words"; the DWC Ethernet QoS registers sit on a 32-bit APB/AHB slave
// port). A BAR0 access is therefore split or merged as follows:
//
//   - a 4-byte-aligned access whose count is a multiple of 4 (4, 8, 16, ...) is
//     that many 32-bit accesses in ascending address order: an 8-byte access is
//     the low dword, then the high one, as a PCIe root port splits a 64-bit
//     access to a 32-bit completer;
//   - a 1- or 2-byte read inside one dword is a 32-bit read of that dword (read
//     side effects included, as a device returns the whole dword) with the
//     requested bytes extracted;
//   - a 1- or 2-byte write is refused and logged as a fault in the model's log:
//     a partial write would need a read-modify-write, which on a register with
//     read side effects (ICR is clear-on-read) changes the device's state;
//   - anything else (unaligned, crossing a dword) is refused.
//
// Configuration space takes any access inside its 4096 bytes, byte by byte.

func (s *Session) regionRead(req *Request) ([][]byte, error) {
	rw, err := ParseRegionRW(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkRegion(rw.Region, rw.Offset, rw.Count); err != nil {
		return nil, err
	}
	data := s.scratchBuf(int(rw.Count))
	switch rw.Region {
	case RegionConfig:
		err = s.cfg.read(int(rw.Offset), data)
	case RegionBAR0:
		err = s.bar0Read(uint32(rw.Offset), data)
	case MSIXBAR:
		err = s.msix.read(uint32(rw.Offset), data)
	}
	if err != nil {
		return nil, err
	}
	s.stats.RegionReads.Add(1)
	return s.reply(req.Payload[:regionRWFixed], data), nil
}

func (s *Session) regionWrite(req *Request) ([][]byte, error) {
	rw, err := ParseRegionRW(req)
	if err != nil {
		return nil, err
	}
	if err := s.writeOne(rw); err != nil {
		return nil, err
	}
	return s.reply(req.Payload[:regionRWFixed]), nil
}

func (s *Session) writeOne(rw RegionRW) error {
	if err := s.checkRegion(rw.Region, rw.Offset, rw.Count); err != nil {
		return err
	}
	var err error
	switch rw.Region {
	case RegionConfig:
		err = s.cfg.write(int(rw.Offset), rw.Data)
	case RegionBAR0:
		err = s.bar0Write(uint32(rw.Offset), rw.Data)
	case MSIXBAR:
		err = s.msix.write(uint32(rw.Offset), rw.Data)
	}
	if err == nil {
		s.stats.RegionWrites.Add(1)
	}
	return err
}

// regionWriteMulti applies the writes in order; the reply counts those done.
func (s *Session) regionWriteMulti(req *Request) ([][]byte, error) {
	if !s.writeMulti.Load() {
		return nil, fail(unix.ENOTSUP, "REGION_WRITE_MULTI without write_multiple negotiated")
	}
	ws, err := ParseWriteMulti(req)
	if err != nil {
		return nil, err
	}
	for i, w := range ws {
		if err := s.writeOne(w); err != nil {
			return nil, fail(unix.EINVAL, "write %d of %d: %v", i, len(ws), err)
		}
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(len(ws)))
	return [][]byte{b}, nil
}

func (s *Session) checkRegion(idx uint32, off uint64, count uint32) error {
	size, flags := s.region(idx)
	switch {
	case flags == 0:
		return fail(unix.EINVAL, "region %d does not exist", idx)
	case count == 0:
		return fail(unix.EINVAL, "region %d: access of 0 bytes", idx)
	case int(count) > s.opts.MaxDataXfer:
		return fail(unix.E2BIG, "region %d: %d bytes exceed max_data_xfer_size %d", idx, count, s.opts.MaxDataXfer)
	case off >= size || uint64(count) > size-off:
		return fail(unix.EINVAL, "region %d: [0x%x, +%d) outside its %d bytes", idx, off, count, size)
	}
	return nil
}

func (s *Session) bar0Read(off uint32, p []byte) error {
	le := binary.LittleEndian
	n := uint32(len(p))
	switch {
	case off%4 == 0 && n%4 == 0:
		for i := uint32(0); i < n; i += 4 {
			le.PutUint32(p[i:], s.regs.Read32(off+i))
		}
	case (n == 1 || n == 2) && off%n == 0:
		v := s.regs.Read32(off &^ 3)
		sh := 8 * (off & 3)
		for i := range p {
			p[i] = byte(v >> (sh + 8*uint32(i)))
		}
	default:
		return fail(unix.EINVAL, "BAR0 read of %d bytes at 0x%x: the registers take aligned 32-bit accesses", n, off)
	}
	return nil
}

func (s *Session) bar0Write(off uint32, p []byte) error {
	le := binary.LittleEndian
	n := uint32(len(p))
	switch {
	case off%4 == 0 && n%4 == 0:
		for i := uint32(0); i < n; i += 4 {
			s.regs.Write32(off+i, le.Uint32(p[i:]))
		}
		return nil
	case n < 4:
		s.dev.Faults().Add("write", "", uint64(off), "%d-byte register write: the registers take 32-bit writes only; dropped", n)
	}
	return fail(unix.EINVAL, "BAR0 write of %d bytes at 0x%x: the registers take aligned 32-bit accesses", n, off)
}

// msixBAR is BAR3: the MSI-X table (16 bytes per vector: address low, high,
// data, vector control) and the PBA (one bit per vector). QEMU emulates both
// itself and never forwards their accesses; for other clients the table is
// plain storage (vector control resets to masked, PCI 3.0, 6.8.2.9) and the PBA
// shows the vectors whose signal the server is holding back.
type msixBAR struct {
	vectors int              // immutable
	pending func(v int) bool // immutable after NewSession
	mu      sync.Mutex       // guards table
	table   []byte           // guarded by mu
}

func newMSIXBAR(vectors int) *msixBAR {
	b := &msixBAR{vectors: vectors, table: make([]byte, 16*vectors)}
	for v := 0; v < vectors; v++ {
		b.table[16*v+12] = 1
	}
	return b
}

func msixAccessOK(off uint32, n int) bool {
	return (n == 4 && off%4 == 0) || (n == 8 && off%8 == 0)
}

func (b *msixBAR) read(off uint32, p []byte) error {
	if !msixAccessOK(off, len(p)) {
		return fail(unix.EINVAL, "MSI-X BAR read of %d bytes at 0x%x: want an aligned dword or qword (PCI 3.0, 6.8.2)", len(p), off)
	}
	clear(p)
	switch {
	case int(off) < len(b.table):
		b.mu.Lock()
		copy(p, b.table[off:])
		b.mu.Unlock()
	case off >= msixPBAOffset && int(off-msixPBAOffset)*8 < b.vectors:
		first := int(off-msixPBAOffset) * 8
		for i := 0; i < 8*len(p) && first+i < b.vectors; i++ {
			if b.pending(first + i) {
				p[i/8] |= 1 << (i % 8)
			}
		}
	}
	return nil
}

func (b *msixBAR) write(off uint32, p []byte) error {
	if !msixAccessOK(off, len(p)) {
		return fail(unix.EINVAL, "MSI-X BAR write of %d bytes at 0x%x: want an aligned dword or qword (PCI 3.0, 6.8.2)", len(p), off)
	}
	if int(off) < len(b.table) { // the PBA and the rest are read-only
		b.mu.Lock()
		copy(b.table[off:], p)
		b.mu.Unlock()
	}
	return nil
}
