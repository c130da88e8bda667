package sim

import (
	"errors"
	"fmt"

	"github.com/xnic-dev/xnic/dma"
)

// External memory: ranges of another party's memory (a VM's guest RAM, mapped
// from the file descriptors a vfio-user client passes) that the device side of a
// Memory reaches at IOVAs that party chose. The model sees them through View like
// its own regions, so an access outside every mapped range is refused and logged
// as an IOMMU fault, as for memory the driver never allocated.

// ErrExternalOverlap is wrapped by MapExternal for a range that overlaps one
// already mapped (vfio-user's DMA_MAP answers it with EEXIST).
var ErrExternalOverlap = errors.New("sim: external range overlaps a mapped range")

// MapExternal makes b visible to the device at [iova, iova+len(b)). The bytes
// stay the caller's: it must keep them valid until UnmapExternal returns.
// Refused on non-coherent memory (the other party shares its bytes with the
// device directly) and on a closed Memory.
func (m *Memory) MapExternal(iova uint64, b []byte) error {
	return m.mapExternal(iova, b, nil, nil)
}

// mapExternalMsg maps the mirror b of message-only memory r.
func (m *Memory) mapExternalMsg(iova uint64, b []byte, r *msgRange) error {
	return m.mapExternal(iova, b, nil, r)
}

// mapExternal inserts the external mapping of b at iova (a part of arena, or
// the mirror of msg, or neither) into the sorted snapshot.
func (m *Memory) mapExternal(iova uint64, b []byte, arena *Arena, msg *msgRange) error {
	n := uint64(len(b))
	if n == 0 {
		return fmt.Errorf("sim: external map of 0 bytes at 0x%x", iova)
	}
	end := iova + n
	if end < iova {
		return fmt.Errorf("sim: external map of %d bytes at 0x%x wraps the address space", n, iova)
	}
	if m.cfg.NonCoherent {
		return fmt.Errorf("sim: external map at 0x%x: the memory is non-coherent; external ranges are shared with the device directly", iova)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("sim: external map at 0x%x on closed memory: %w", iova, dma.ErrNoMemory)
	}
	old := *m.snap.Load()
	at := len(old)
	for i, mp := range old {
		if mp.iova < end && iova < mp.end {
			return fmt.Errorf("sim: external map [0x%x, 0x%x) overlaps [0x%x, 0x%x): %w", iova, end, mp.iova, mp.end, ErrExternalOverlap)
		}
		if mp.iova >= end && at == len(old) {
			at = i
		}
	}
	mp := &mapping{iova: iova, end: end, cpu: b, dev: b, arena: arena, msg: msg}
	ns := make([]*mapping, 0, len(old)+1)
	ns = append(ns, old[:at]...)
	ns = append(ns, mp)
	ns = append(ns, old[at:]...)
	m.snap.Store(&ns)
	// Alloc hands out IOVAs upwards from next and appends: keep its regions above
	// every external range so the snapshot stays sorted.
	if guard := ((end + PageSize - 1) &^ (PageSize - 1)) + PageSize; guard > m.next {
		m.next = guard
	}
	return nil
}

// UnmapExternal removes the external range mapped at exactly [iova, iova+size)
// and returns its bytes; the device's later accesses there fault. When the model
// has set a device lock (SetDeviceLock), UnmapExternal takes it once after the
// removal, so every access made under that lock has ended when it returns and
// quiesced is true. A model may still use a view after releasing its lock (the
// models hand a transmitted frame, a view of the buffer, to the wire with only
// their transmit lock held), so the caller should keep the bytes readable a
// little longer (vfiouser replaces them with zero pages for a grace period).
// Without a device lock quiesced is false.
func (m *Memory) UnmapExternal(iova, size uint64) (b []byte, quiesced bool, err error) {
	m.mu.Lock()
	old := *m.snap.Load()
	idx := -1
	for i, mp := range old {
		if mp.iova == iova && mp.region == nil {
			idx = i
			break
		}
	}
	if idx < 0 || old[idx].end-old[idx].iova != size {
		m.mu.Unlock()
		return nil, false, fmt.Errorf("sim: external unmap of [0x%x, +0x%x): no external range mapped exactly there: %w", iova, size, dma.ErrNotMapped)
	}
	mp := old[idx]
	ns := make([]*mapping, 0, len(old)-1)
	ns = append(ns, old[:idx]...)
	ns = append(ns, old[idx+1:]...)
	m.snap.Store(&ns)
	m.mu.Unlock()
	if mp.msg != nil {
		// Fetches and write-backs already past their check finish on the
		// mirror, which the caller keeps as it keeps any external bytes.
		mp.msg.dead.Store(true)
	}
	if l := m.devLock.Load(); l != nil {
		(*l).Lock()
		//lint:ignore SA2001 an empty critical section: it waits out device accesses in flight
		(*l).Unlock()
		return mp.cpu, true, nil
	}
	return mp.cpu, false, nil
}

// PCIConfig is the configuration the Device was built with (defaults applied).
func (d *Device) PCIConfig() DeviceConfig { return d.cfg }
