package igb

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Ring set-up shared by the RX and TX queues (82576 datasheet 4.5.9 and 4.5.10):
// disable the queue and wait for the device to let go of it, program base,
// length, head and tail, enable and wait for the enable to read back. kind is
// "RX" or "TX"; b is the queue's register block (rxBlock, txBlock).

// allocRing allocates the descriptors of one ring: n of them, the IOVA
// 128-byte aligned as the device requires, the CPU view 16-byte aligned as the
// atomic status loads require (desc_unsafe.go).
func (p *Port) allocRing(kind string, n int) (*dma.Region, error) {
	r, err := p.alloc.Alloc(n*descSize, 128)
	if err != nil {
		return nil, fmt.Errorf("%s descriptor ring of %d: %w", kind, n, err)
	}
	if !ringAligned(r.CPU) {
		_ = p.alloc.Free(r) // unusable either way; the alignment is the error to report
		return nil, fmt.Errorf("%s descriptor ring: CPU view not 16-byte aligned (the allocator must align its memory)", kind)
	}
	return r, nil
}

// disableQueue clears the queue's xXDCTL.ENABLE and waits up to 100 ms for it
// to read back clear.
func (p *Port) disableQueue(kind string, b reg) error {
	p.w32(b+qDCTL, 0)
	if !p.poll(100*time.Millisecond, func(v uint32) bool { return dctlBits(v)&dctlEnable == 0 }, b+qDCTL) {
		return fmt.Errorf("%sDCTL.ENABLE still set 100ms after clearing it: %w", kind, nic.ErrTimeout)
	}
	return nil
}

// enableRing disables the queue, points it at ring (n descriptors, head = tail
// = 0), writes the extra registers (SRRCTL for RX) through extra, then enables
// it with dctl and waits up to 1 s for the enable to read back.
func (p *Port) enableRing(kind string, b reg, ring *dma.Region, n int, extra func(), dctl uint32) error {
	if err := p.disableQueue(kind, b); err != nil {
		return err
	}
	p.w32(b+qBAL, uint32(ring.IOVA))
	p.w32(b+qBAH, uint32(ring.IOVA>>32))
	p.w32(b+qLEN, uint32(n*descSize))
	p.w32(b+qHead, 0)
	p.w32(b+qTail, 0)
	if extra != nil {
		extra()
	}
	p.w32(b+qDCTL, dctl)
	if !p.poll(time.Second, func(v uint32) bool { return dctlBits(v)&dctlEnable != 0 }, b+qDCTL) {
		return fmt.Errorf("%sDCTL.ENABLE not set 1s after enabling the queue: %w", kind, nic.ErrTimeout)
	}
	return nil
}
