package igb_test

import (
	"encoding/binary"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// plainDevice is a register array with just enough behaviour for bring-up
// (reset done, PHY answering, link up) and sim.Memory for DMA. The test plays
// the device's DMA side itself, so allocation counts measure the driver alone
// (the strict model has its own costs).
type plainDevice struct {
	regs [0x20000 / 4]uint32
	mem  *sim.Memory
}

func newPlainDevice() *plainDevice {
	d := &plainDevice{mem: sim.NewMemory(sim.MemoryConfig{}, nil)}
	d.regs[0x5400/4] = 0x00000002     // RAL0: 02:00:00:00
	d.regs[0x5404/4] = 1<<31 | 0x0100 // RAH0: 00:01, AV
	return d
}

func (d *plainDevice) Info() nic.DeviceInfo {
	return nic.DeviceInfo{Name: "plain", Bus: "sim", Vendor: 0x8086, Device: 0x1533}
}
func (d *plainDevice) Regs(n int) (nic.Regs, error)                { return d, nil }
func (d *plainDevice) DMA() dma.Allocator                          { return d.mem }
func (d *plainDevice) ReadConfig(off, size int) (uint32, error)    { return 0, nic.ErrNotSupported }
func (d *plainDevice) WriteConfig(off, size int, val uint32) error { return nil }
func (d *plainDevice) EnableBusMaster() error                      { return nil }
func (d *plainDevice) EnableMSIX(n int) ([]nic.IRQ, error)         { return nil, nic.ErrNotSupported }
func (d *plainDevice) DisableIRQs() error                          { return nil }
func (d *plainDevice) Reset() error                                { return nil }
func (d *plainDevice) Close() error                                { return nil }

func (d *plainDevice) Read32(off uint32) uint32 {
	switch off {
	case 0x0008: // STATUS: link up, full duplex, 1000
		return 1<<1 | 1<<0 | 1<<7
	case 0x0010: // EECD: auto-read done
		return 1 << 9
	case 0x0020: // MDIC: ready at once
		return d.regs[off/4] | 1<<28
	}
	return d.regs[off/4]
}

func (d *plainDevice) Write32(off, val uint32) {
	if off == 0 { // CTRL.RST self-clears
		val &^= 1 << 26
	}
	d.regs[off/4] = val
}

// deliver plays the RX DMA engine of queue 0: it fills up to n posted
// descriptors with frame and writes them back (DD|EOP).
func (d *plainDevice) deliver(t testing.TB, frame []byte, n int) {
	base := uint64(d.regs[0x2804/4])<<32 | uint64(d.regs[0x2800/4])
	size := int(d.regs[0x2808/4] / 16)
	head, tail := int(d.regs[0x2810/4]), int(d.regs[0x2818/4])
	for ; n > 0 && head != tail; n-- {
		desc, err := d.mem.View("rx", base+uint64(head)*16, 16)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := d.mem.View("rx", binary.LittleEndian.Uint64(desc), len(frame))
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, frame)
		clear(desc)
		binary.LittleEndian.PutUint16(desc[12:], uint16(len(frame)))
		binary.LittleEndian.PutUint32(desc[8:], 3) // DD | EOP
		head = (head + 1) % size
	}
	d.regs[0x2810/4] = uint32(head)
}

// complete plays the TX engine of queue 0: every descriptor up to TDT is done.
func (d *plainDevice) complete(t testing.TB) {
	base := uint64(d.regs[0x3804/4])<<32 | uint64(d.regs[0x3800/4])
	size := int(d.regs[0x3808/4] / 16)
	head, tail := int(d.regs[0x3810/4]), int(d.regs[0x3818/4])
	for ; head != tail; head = (head + 1) % size {
		desc, err := d.mem.View("tx", base+uint64(head)*16, 16)
		if err != nil {
			t.Fatal(err)
		}
		desc[12] |= 1 // DD
	}
	d.regs[0x3810/4] = uint32(head)
}

// TestZeroAllocsPerPacket: Recv, Send and Reclaim allocate nothing.
func TestZeroAllocsPerPacket(t *testing.T) {
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 64, TxRingSize: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 256)
	nictest.ZeroAllocBounce(t, 500, p.RxQueue(0), p.TxQueue(0),
		func() { d.deliver(t, frame, 16) }, func() { d.complete(t) })
}

// writeBack plays the device writing one RX write-back at RDH with the given
// status/error word, length, packet info and RSS hash, and advances RDH.
func (d *plainDevice) writeBack(t testing.TB, stat uint32, length uint16, pktInfo uint16, rss uint32, payload byte) {
	base := uint64(d.regs[0x2804/4])<<32 | uint64(d.regs[0x2800/4])
	size := int(d.regs[0x2808/4] / 16)
	head, tail := int(d.regs[0x2810/4]), int(d.regs[0x2818/4])
	if head == tail {
		t.Fatal("no descriptor posted")
	}
	desc, err := d.mem.View("rx", base+uint64(head)*16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if buf, err := d.mem.View("rx", binary.LittleEndian.Uint64(desc), 64); err == nil {
		buf[0] = payload
	}
	clear(desc)
	binary.LittleEndian.PutUint16(desc[0:], pktInfo)
	binary.LittleEndian.PutUint32(desc[4:], rss)
	binary.LittleEndian.PutUint16(desc[12:], length)
	binary.LittleEndian.PutUint32(desc[8:], stat)
	d.regs[0x2810/4] = uint32((head + 1) % size)
}

// TestHostileWriteback: the driver drops (and counts) what a device or a
// corrupted ring hands it, and delivers only sane frames.
func TestHostileWriteback(t *testing.T) {
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 16, TxRingSize: 16, PoolSize: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const dd, eop, rxe = 1, 2, 1 << 31
	d.writeBack(t, dd|eop|rxe, 100, 0, 0, 1)     // frame error
	d.writeBack(t, dd, 2048, 0, 0, 2)            // first part of a frame spanning buffers...
	d.writeBack(t, dd|eop, 100, 0, 0, 3)         // ...and its end: both dropped
	d.writeBack(t, dd|eop, 4000, 0, 0, 4)        // longer than the buffer
	d.writeBack(t, dd|eop, 0, 0, 0, 5)           // empty
	d.writeBack(t, dd|eop, 60, 1, 0xCAFEF00D, 6) // good, with an RSS hash (type 1)
	d.writeBack(t, dd|eop|1<<30, 61, 0, 0, 7)    // IPv4 checksum error only: delivered
	bufs := make([]*dma.Buf, 16)
	n := p.RxQueue(0).Recv(bufs)
	if n != 2 {
		t.Fatalf("Recv delivered %d frames, want 2", n)
	}
	if b := bufs[0]; b.Len != 60 || b.Data()[0] != 6 || b.RSSHash != 0xCAFEF00D || b.Flags&dma.FlagRSSValid == 0 {
		t.Fatalf("good frame: len %d first byte %d hash %#x flags %#x", b.Len, b.Data()[0], b.RSSHash, b.Flags)
	}
	if b := bufs[1]; b.Len != 61 || b.Flags&dma.FlagCsumOK != 0 {
		t.Fatalf("checksum-error frame: len %d flags %#x", b.Len, b.Flags)
	}
	if v := nictest.Counter(t, p, "rx_desc_errors"); v != 5 {
		t.Fatalf("rx_desc_errors %d, want 5", v)
	}
	// Every consumed slot was refilled and made visible with one tail write.
	if tail := d.regs[0x2818/4]; tail != (15+7)%16 {
		t.Fatalf("RDT %d, want %d", tail, (15+7)%16)
	}
	for _, b := range bufs[:n] {
		b.Free()
	}
	if s := p.RxQueue(0).Pool().Stats(); s.ByOwner[dma.OwnerRx] != 15 || s.BadPuts != 0 {
		t.Fatalf("pool accounting %+v", s)
	}
	// TX: a device that never completes leaves descriptors in flight; Send
	// takes only what fits and Reclaim returns nothing.
	tq := p.TxQueue(0)
	pool := p.RxQueue(0).Pool()
	var tx []*dma.Buf
	for i := 0; i < 20; i++ {
		b := pool.Get()
		b.Len = 64
		tx = append(tx, b)
	}
	if k := tq.Send(tx); k != 15 {
		t.Fatalf("Send took %d into a 16-ring, want 15", k)
	}
	if tq.Free() != 0 || tq.Reclaim() != 0 {
		t.Fatal("descriptors completed that the device never finished")
	}
	if k := tq.Send(tx[15:]); k != 0 {
		t.Fatalf("Send took %d into a full ring", k)
	}
	for _, b := range tx[15:] {
		b.Free()
	}
	d.complete(t)
	if r := tq.Reclaim(); r != 15 || tq.Free() != 15 {
		t.Fatalf("Reclaim %d, Free %d after completion", r, tq.Free())
	}
}

// FuzzRecv: whatever the device writes back, Recv does not panic, delivers
// only frames that fit their buffer, and keeps every buffer accounted for.
func FuzzRecv(f *testing.F) {
	f.Add(uint32(3), uint16(60), uint16(0), uint32(0))
	f.Add(uint32(1), uint16(2048), uint16(1), uint32(7))
	f.Add(uint32(0xFFFFFFFF), uint16(0xFFFF), uint16(0xFFFF), uint32(0xFFFFFFFF))
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 8, PoolSize: 16, LinkTimeout: -1})
	if err != nil {
		f.Fatal(err)
	}
	bufs := make([]*dma.Buf, 8)
	f.Fuzz(func(t *testing.T, stat uint32, length, pktInfo uint16, rss uint32) {
		d.writeBack(t, stat|1, length, pktInfo, rss, 0) // DD set: the driver must look
		n := p.RxQueue(0).Recv(bufs)
		for _, b := range bufs[:n] {
			if b.Len <= 0 || b.Off+b.Len > len(b.Mem) {
				t.Fatalf("delivered a frame of %d bytes at %d in a %d-byte buffer", b.Len, b.Off, len(b.Mem))
			}
			b.Free()
		}
		s := p.RxQueue(0).Pool().Stats()
		if s.ByOwner[dma.OwnerApp] != 0 || s.BadPuts != 0 || s.ByOwner[dma.OwnerRx]+s.Free != s.Size {
			t.Fatalf("pool accounting %+v", s)
		}
	})
}
