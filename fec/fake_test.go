package fec_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// plainFEC is a scripted register file with just enough behaviour for
// bring-up (MDIO completing at once, ECR.RESET self-clearing, GTS raising GRA)
// and sim.Memory for DMA. Tests play the DMA engines themselves (deliver,
// complete), so they see exactly what the driver wrote, and allocation counts
// measure the driver alone. Offsets are written out here from the reference
// manual, not taken from the driver.
type plainFEC struct {
	regs     [0x800 / 4]uint32 // up to the 1588 timer (0x400-0x414)
	mem      *sim.Memory
	alloc    dma.Allocator // what DMA returns; mem unless replaced
	compat   string
	mdioDead bool // MDIO frames never complete (MSCR/clock problem)
	allOnes  bool // every read returns all ones
	tdarBusy int  // the next TDAR reads return "active"
	phy      [32]uint16
	writes   []regWrite
	record   bool
	rxPos    int
	txPos    int
	// absent are registers the MAC lacks (as QEMU's imx.enet lacks the MIB and
	// rings 1-2): writes are dropped, reads give 0.
	absent func(off uint32) bool
}

type regWrite struct{ off, val uint32 }

const (
	oEIR, oEIMR, oRDAR, oTDAR, oECR = 0x004, 0x008, 0x010, 0x014, 0x024
	oMMFR, oMSCR, oRCR, oTCR        = 0x040, 0x044, 0x084, 0x0C4
	oPALR, oPAUR, oTFWR, oFTRL      = 0x0E4, 0x0E8, 0x144, 0x1B0
	oRDSR, oTDSR, oMRBR             = 0x180, 0x184, 0x188
)

func newPlainFEC(compat string) *plainFEC {
	d := &plainFEC{mem: sim.NewMemory(sim.MemoryConfig{Below4G: true}, nil), compat: compat}
	d.alloc = d.mem
	d.regs[oECR/4] = 0xF0000000
	d.regs[oPALR/4] = 0x02123456
	d.regs[oPAUR/4] = 0x789A8808
	d.phy[2], d.phy[3] = 0x0007, 0xC0D1
	d.phy[1] = 0x796D                   // link up, autonegotiation complete
	d.phy[4], d.phy[5] = 0x01E1, 0x45E1 // 100 full both sides
	return d
}

func (d *plainFEC) Info() nic.DeviceInfo {
	return nic.DeviceInfo{Name: "plain", Bus: "platform", Compatible: d.compat}
}
func (d *plainFEC) Regs(n int) (nic.Regs, error)                { return d, nil }
func (d *plainFEC) DMA() dma.Allocator                          { return d.alloc }
func (d *plainFEC) ReadConfig(off, size int) (uint32, error)    { return 0, nic.ErrNotSupported }
func (d *plainFEC) WriteConfig(off, size int, val uint32) error { return nic.ErrNotSupported }
func (d *plainFEC) EnableBusMaster() error                      { return nil }
func (d *plainFEC) EnableMSIX(n int) ([]nic.IRQ, error)         { return nil, nic.ErrNotSupported }
func (d *plainFEC) DisableIRQs() error                          { return nil }
func (d *plainFEC) Reset() error                                { return nic.ErrNotSupported }
func (d *plainFEC) Close() error                                { return nil }

func (d *plainFEC) Read32(off uint32) uint32 {
	if d.allOnes {
		return 0xFFFFFFFF
	}
	if d.absent != nil && d.absent(off) {
		return 0
	}
	if off == oTDAR && d.tdarBusy > 0 {
		d.tdarBusy--
		return 1 << 24
	}
	return d.regs[off/4]
}

func (d *plainFEC) Write32(off, val uint32) {
	if d.record {
		d.writes = append(d.writes, regWrite{off, val})
	}
	if d.absent != nil && d.absent(off) {
		return
	}
	switch off {
	case oEIR:
		d.regs[off/4] &^= val
		return
	case oECR:
		val &^= 1 // RESET self-clears
		if val&2 == 0 {
			d.rxPos, d.txPos = 0, 0
		}
	case oTCR:
		if val&1 != 0 {
			d.regs[oEIR/4] |= 1 << 28 // GRA
		}
	case oMMFR:
		d.regs[off/4] = val
		if d.mdioDead || d.regs[oMSCR/4] == 0 {
			return
		}
		ra := val >> 18 & 0x1F
		switch val >> 28 & 3 {
		case 2: // read
			d.regs[off/4] = val&^0xFFFF | uint32(d.phy[ra])
		case 1: // write
			d.phy[ra] = uint16(val) &^ (1 << 9) // AN restart self-clears
		}
		d.regs[oEIR/4] |= 1 << 23
		return
	case oRDAR, oTDAR:
		d.regs[off/4] = 1 << 24
		return
	}
	d.regs[off/4] = val
}

func (d *plainFEC) bdSize() int {
	if d.regs[oECR/4]&(1<<4) != 0 {
		return 32
	}
	return 8
}

// deliver plays the RX DMA engine of ring 0: it writes data into the buffer of
// the next descriptor with E set and writes back datlen and sc (E cleared, W
// kept, status given). It reports false when no descriptor is empty.
func (d *plainFEC) deliver(t testing.TB, data []byte, status uint16) bool {
	base := uint64(d.regs[oRDSR/4])
	sz := d.bdSize()
	desc, err := d.mem.View("rx", base+uint64(d.rxPos*sz), sz)
	if err != nil {
		t.Fatal(err)
	}
	sc := binary.LittleEndian.Uint16(desc[2:])
	if sc&0x8000 == 0 {
		return false
	}
	if len(data) > 0 {
		buf, err := d.mem.View("rx", uint64(binary.LittleEndian.Uint32(desc[4:])), len(data))
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, data)
	}
	binary.LittleEndian.PutUint16(desc[0:], uint16(len(data)))
	binary.LittleEndian.PutUint16(desc[2:], sc&0x2000|status)
	if sc&0x2000 != 0 {
		d.rxPos = 0
	} else {
		d.rxPos++
	}
	return true
}

// complete plays the TX engine of ring 0: every ready descriptor is sent (R
// cleared); it returns the frames.
func (d *plainFEC) complete(t testing.TB) int {
	base := uint64(d.regs[oTDSR/4])
	sz := d.bdSize()
	n := 0
	for {
		desc, err := d.mem.View("tx", base+uint64(d.txPos*sz), sz)
		if err != nil {
			t.Fatal(err)
		}
		sc := binary.LittleEndian.Uint16(desc[2:])
		if sc&0x8000 == 0 {
			return n
		}
		binary.LittleEndian.PutUint16(desc[2:], sc&^0x8000)
		n++
		if sc&0x2000 != 0 {
			d.txPos = 0
		} else {
			d.txPos++
		}
	}
}

func (d *plainFEC) count(off uint32) int {
	n := 0
	for _, w := range d.writes {
		if w.off == off {
			n++
		}
	}
	return n
}

func TestOpenMDIOTimeout(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	d.mdioDead = true
	_, err := fec.Open(d, fec.Config{LinkTimeout: -1})
	if !errors.Is(err, nic.ErrTimeout) {
		t.Fatalf("Open with MDIO never completing: %v, want ErrTimeout", err)
	}
	for _, want := range []string{"MSCR", "ModuleClockHz", "EIR.MII", "clock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	if n := d.mem.Regions(); n != 0 {
		t.Fatalf("%d DMA regions left after a failed Open", n)
	}
}

func TestOpenAllOnes(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	d.allOnes = true
	if _, err := fec.Open(d, fec.Config{LinkTimeout: -1}); !errors.Is(err, nic.ErrNoDevice) {
		t.Fatalf("Open on all-ones registers: %v, want ErrNoDevice", err)
	}
	d = newPlainFEC("fsl,imx8mp-fec")
	d.phy[2], d.phy[3] = 0xFFFF, 0xFFFF // nothing at the PHY address
	if _, err := fec.Open(d, fec.Config{LinkTimeout: -1}); err == nil || !strings.Contains(err.Error(), "PHYAddr") {
		t.Fatalf("Open with no PHY: %v", err)
	}
	d = newPlainFEC("fsl,imx9-unknown")
	if _, err := fec.Open(d, fec.Config{LinkTimeout: -1}); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("unknown compatible: %v", err)
	}
}

// liar claims a 4 GiB limit but hands out memory above it.
type liar struct{ *sim.Memory }

func (l liar) Limit() uint64 { return 1 << 32 }

func TestOpenRefusesHighMemory(t *testing.T) {
	for _, c := range []struct {
		name  string
		alloc dma.Allocator
	}{
		{"unlimited", sim.NewMemory(sim.MemoryConfig{}, nil)},
		{"8GiB", sim.NewMemory(sim.MemoryConfig{Limit: 1 << 33}, nil)},
		{"lying", liar{sim.NewMemory(sim.MemoryConfig{}, nil)}},
		// Memory that starts below 4 GiB and runs across it: the first
		// bytes of a region are reachable, its end is not.
		{"straddling", liar{sim.NewMemory(sim.MemoryConfig{Base: 1<<32 - 16<<10}, nil)}},
	} {
		d := newPlainFEC("fsl,imx8mp-fec")
		d.alloc = c.alloc
		_, err := fec.Open(d, fec.Config{LinkTimeout: -1})
		if !errors.Is(err, dma.ErrTooHigh) || !strings.Contains(err.Error(), "32-bit") {
			t.Errorf("%s allocator: %v, want ErrTooHigh naming 32-bit addresses", c.name, err)
		}
	}
}

// TestBringUpOrder checks the register sequence against fec_restart: reset
// first, MAC, EIR cleared, rings before ETHEREN, RDAR after it, EIMR last.
func TestBringUpOrder(t *testing.T) {
	for _, c := range []struct {
		compat string
		reset  uint32
		ecr    uint32
	}{
		{"fsl,imx8mp-fec", 0, 0x2 | 0x100 | 0x10}, // ETHEREN | DBSWP | EN1588 (100 Mb/s: no SPEED)
		{"fsl,imx6q-fec", 1, 0x2 | 0x100 | 0x10},
		{"fsl,imx6ul-fec", 1, 0x2 | 0x100 | 0x10},
		{"fsl,mvf600-fec", 1, 0x2 | 0x100}, // legacy descriptors only
	} {
		t.Run(c.compat, func(t *testing.T) {
			d := newPlainFEC(c.compat)
			d.record = true
			p, err := fec.Open(d, fec.Config{RxRingSize: 8, TxRingSize: 8, LinkTimeout: -1, MAC: []byte{2, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE}, Interface: fec.RMII})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			w := d.writes
			if w[0].off != oECR || w[0].val != c.reset {
				t.Fatalf("first write %#x=%#x, want ECR=%#x", w[0].off, w[0].val, c.reset)
			}
			idx := func(off, val uint32, any bool) int {
				for i, x := range w {
					if x.off == off && (any || x.val == val) {
						return i
					}
				}
				t.Fatalf("no write of %#x to %#x", val, off)
				return -1
			}
			ethen := idx(oECR, c.ecr, false)
			order := []int{idx(oPALR, 0x02AABBCC, false), idx(oPAUR, 0xDDEE8808, false), idx(oEIR, 0xFFFFFFFF, false),
				idx(oRDSR, 0, true), idx(oMRBR, 2048, false), idx(oTDSR, 0, true), idx(oTCR, 4, false),
				idx(oFTRL, 1984, false), idx(oRCR, 1984<<16|1<<2|1<<8, false), ethen}
			if c.compat != "fsl,mvf600-fec" {
				order = append(order[:len(order)-1], idx(oTFWR, 1<<8, false), ethen)
			}
			for i := 1; i < len(order); i++ {
				if order[i] < order[i-1] {
					t.Fatalf("write %d (%#x=%#x) before write %d (%#x=%#x)", order[i], w[order[i]].off, w[order[i]].val, order[i-1], w[order[i-1]].off, w[order[i-1]].val)
				}
			}
			if r := idx(oRDAR, 0, true); r < ethen {
				t.Fatal("RDAR written before ETHEREN")
			}
			if last := w[len(w)-1]; last.off != oEIMR || last.val != 0 {
				t.Fatalf("last write %#x=%#x, want EIMR=0 (polling)", last.off, last.val)
			}
			if d.regs[oMSCR/4] != 13<<1 {
				t.Fatalf("MSCR %#x, want %#x for 66 MHz", d.regs[oMSCR/4], 13<<1)
			}
			// Ring contents: every RX descriptor empty with a 16-byte aligned
			// buffer, W on the last only; TX all ours, W on the last.
			sz := d.bdSize()
			for i := 0; i < 8; i++ {
				rx, _ := d.mem.View("t", uint64(d.regs[oRDSR/4])+uint64(i*sz), sz)
				tx, _ := d.mem.View("t", uint64(d.regs[oTDSR/4])+uint64(i*sz), sz)
				sc, txsc := binary.LittleEndian.Uint16(rx[2:]), binary.LittleEndian.Uint16(tx[2:])
				wantW := uint16(0)
				if i == 7 {
					wantW = 0x2000
				}
				if sc != 0x8000|wantW || txsc != wantW {
					t.Fatalf("BD %d: RX sc %#x, TX sc %#x", i, sc, txsc)
				}
				if a := binary.LittleEndian.Uint32(rx[4:]); a%16 != 0 || a == 0 {
					t.Fatalf("BD %d: RX buffer at %#x", i, a)
				}
			}
		})
	}
}

func TestRxTxAgainstScript(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 68) // 64 bytes + FCS
	for i := range frame {
		frame[i] = byte(i)
	}
	const L, CR, LG, OV = 1 << 11, 1 << 2, 1 << 5, 1 << 1
	d.deliver(t, frame, L)         // good
	d.deliver(t, frame, L|CR)      // CRC error
	d.deliver(t, frame, L|LG)      // too long
	d.deliver(t, frame, 0)         // first part of a frame spanning buffers...
	d.deliver(t, frame, L)         // ...and its last: both dropped
	d.deliver(t, frame[:10], L)    // shorter than a header plus FCS
	d.deliver(t, frame[:61], L|OV) // overrun
	d.deliver(t, frame[:30], L)    // good, 26 bytes
	d.record = true
	bufs := make([]*dma.Buf, 16)
	n := p.RxQueue(0).Recv(bufs)
	if n != 2 || bufs[0].Len != 64 || bufs[1].Len != 26 || bufs[0].Data()[5] != 5 {
		t.Fatalf("Recv: %d frames (%v)", n, bufs[:n])
	}
	for name, want := range map[string]uint64{"rx_desc_crc_errors": 1, "rx_desc_length_errors": 1,
		"rx_desc_fifo_errors": 1, "rx_desc_errors": 6, "rx_queue_0_packets": 2, "rx_queue_0_bytes": 90} {
		if got := nictest.Counter(t, p, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if k := d.count(oRDAR); k != 1 {
		t.Fatalf("%d RDAR writes for one Recv, want 1", k)
	}
	// Every descriptor was refilled: the device can go round again.
	for i := 0; i < 8; i++ {
		if !d.deliver(t, frame, L) {
			t.Fatalf("descriptor %d not empty after refill", i)
		}
	}
	if d.deliver(t, frame, L) {
		t.Fatal("more empty descriptors than the ring has")
	}
	d.writes = nil
	if k := p.RxQueue(0).Recv(bufs[2:]); k != 8 || d.count(oRDAR) != 1 {
		t.Fatalf("second Recv: %d frames, %d RDAR writes", k, d.count(oRDAR))
	}
	for _, b := range bufs[:10] {
		b.Free()
	}
	// TX: one TDAR write for a burst; BDs carry R|L|TC and the length.
	pool := p.RxQueue(0).Pool()
	tx := p.TxQueue(0)
	burst := make([]*dma.Buf, 3)
	for i := range burst {
		burst[i] = pool.Get()
		burst[i].Len = 100 + i
	}
	d.writes = nil
	if k := tx.Send(burst); k != 3 || d.count(oTDAR) != 1 {
		t.Fatalf("Send took %d with %d TDAR writes", k, d.count(oTDAR))
	}
	bd, _ := d.mem.View("t", uint64(d.regs[oTDSR/4])+32, 32) // extended BDs on the i.MX8MP
	if sc, l := binary.LittleEndian.Uint16(bd[2:]), binary.LittleEndian.Uint16(bd[0:]); sc != 0x8000|0x0800|0x0400 || l != 101 {
		t.Fatalf("TX BD 1: sc %#x len %d", sc, l)
	}
	if a := uint64(binary.LittleEndian.Uint32(bd[4:])); a != burst[1].DataIOVA() {
		t.Fatalf("TX BD 1 address %#x, want %#x", a, burst[1].DataIOVA())
	}
	if tx.Reclaim() != 0 {
		t.Fatal("reclaimed before the device finished")
	}
	d.complete(t)
	if r := tx.Reclaim(); r != 3 || tx.Free() != 7 {
		t.Fatalf("Reclaim %d, Free %d", r, tx.Free())
	}
	// ERR007885: TDAR reads busy four times: no write; Reclaim kicks the ring
	// once it reads idle with descriptors still ready.
	b := pool.Get()
	b.Len = 60
	d.tdarBusy = 4
	d.regs[oTDAR/4] = 0
	d.writes = nil
	tx.Send([]*dma.Buf{b})
	if d.count(oTDAR) != 0 || nictest.Counter(t, p, "tx_doorbells_skipped") != 1 {
		t.Fatalf("TDAR written %d times while busy", d.count(oTDAR))
	}
	tx.Reclaim()
	if d.count(oTDAR) != 1 {
		t.Fatalf("Reclaim did not re-kick an idle ring with a ready descriptor (%d writes)", d.count(oTDAR))
	}
	d.complete(t)
	tx.Reclaim()
	// A short frame is padded to 60 bytes; a misaligned one moved down.
	b = pool.Get()
	b.Len = 20
	b.Off = dma.Headroom + 3
	b.Mem[b.Off] = 0xAB
	tx.Send([]*dma.Buf{b})
	if b.Len != 60 || b.Off != dma.Headroom || b.Mem[b.Off] != 0xAB || nictest.Counter(t, p, "tx_realigned") != 1 {
		t.Fatalf("short misaligned frame: len %d off %d first %#x", b.Len, b.Off, b.Mem[b.Off])
	}
	d.complete(t)
	tx.Reclaim()
	if s := pool.Stats(); s.ByOwner[dma.OwnerTx] != 0 || s.ByOwner[dma.OwnerApp] != 0 || s.BadPuts != 0 {
		t.Fatalf("pool accounting %+v", s)
	}
}

// TestZeroAllocsPerPacket: Recv, Send and Reclaim allocate nothing.
func TestZeroAllocsPerPacket(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{RxRingSize: 64, TxRingSize: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 256)
	nictest.ZeroAllocBounce(t, 500, p.RxQueue(0), p.TxQueue(0), func() {
		for i := 0; i < 16; i++ {
			d.deliver(t, frame, 1<<11)
		}
	}, func() { d.complete(t) })
}

// TestStatsDeltas: MIB counters do not clear on read: Stats adds increments
// since the last reading (wrapping at 2^32), not the raw values.
func TestStatsDeltas(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	const rxPackets = 0x284
	d.regs[rxPackets/4] = 1000 // counted before Open: not ours
	p, err := fec.Open(d, fec.Config{LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if v := nictest.Counter(t, p, "rx_packets"); v != 0 {
		t.Fatalf("rx_packets %d right after Open", v)
	}
	d.regs[rxPackets/4] = 1010
	if v := nictest.Counter(t, p, "rx_packets"); v != 10 {
		t.Fatalf("rx_packets %d, want 10", v)
	}
	if v := nictest.Counter(t, p, "rx_packets"); v != 10 {
		t.Fatalf("rx_packets %d on a second read, want 10", v)
	}
	d.regs[rxPackets/4] = 0xFFFFFFF0
	nictest.Counter(t, p, "rx_packets")
	d.regs[rxPackets/4] = 0x10
	if v := nictest.Counter(t, p, "rx_packets"); v != 0xFFFFFFF0-1000+0x20 {
		t.Fatalf("rx_packets %#x across a wrap, want %#x", v, uint64(0xFFFFFFF0-1000+0x20))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	d.regs[rxPackets/4] = 0x50
	if v := nictest.Counter(t, p, "rx_packets"); v != 0xFFFFFFF0-1000+0x20 {
		t.Fatalf("rx_packets moved after Close: %#x", v)
	}
}

// TestCacheLineRings: with 64-byte cache lines and 8-byte descriptors, RX
// buffers are posted eight at a time (whole lines the device no longer owns)
// and TX never writes a line holding a descriptor in flight.
func TestCacheLineRings(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	if _, err := fec.Open(d, fec.Config{RxRingSize: 12, TxRingSize: 16, LegacyBD: true, CacheLine: 64, LinkTimeout: -1}); err == nil {
		t.Fatal("a ring of 12 accepted with 8 descriptors per line")
	}
	p, err := fec.Open(d, fec.Config{RxRingSize: 16, TxRingSize: 16, PoolSize: 64, LegacyBD: true, CacheLine: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 64)
	for i := 0; i < 3; i++ {
		d.deliver(t, frame, 1<<11)
	}
	d.record = true
	bufs := make([]*dma.Buf, 16)
	if n := p.RxQueue(0).Recv(bufs); n != 3 || d.count(oRDAR) != 0 {
		t.Fatalf("3 frames: Recv %d, %d RDAR writes (a partial line must not be refilled)", n, d.count(oRDAR))
	}
	bd, _ := d.mem.View("t", uint64(d.regs[oRDSR/4]), 8)
	if binary.LittleEndian.Uint16(bd[2:])&0x8000 != 0 {
		t.Fatal("descriptor 0 refilled while its line is still the device's")
	}
	for i := 0; i < 5; i++ {
		d.deliver(t, frame, 1<<11)
	}
	if n := p.RxQueue(0).Recv(bufs[3:]); n != 5 || d.count(oRDAR) != 1 {
		t.Fatalf("5 more: Recv %d, %d RDAR writes", n, d.count(oRDAR))
	}
	for i := 0; i < 8; i++ {
		bd, _ := d.mem.View("t", uint64(d.regs[oRDSR/4])+uint64(8*i), 8)
		if binary.LittleEndian.Uint16(bd[2:])&0x8000 == 0 {
			t.Fatalf("descriptor %d of the first line not refilled", i)
		}
	}
	for _, b := range bufs[:8] {
		b.Free()
	}
	tx := p.TxQueue(0)
	pool := p.RxQueue(0).Pool()
	get := func() *dma.Buf { b := pool.Get(); b.Len = 60; return b }
	if k := tx.Send([]*dma.Buf{get()}); k != 1 {
		t.Fatal("first frame not taken")
	}
	b := get()
	if k := tx.Send([]*dma.Buf{b}); k != 0 || tx.Free() != 0 {
		t.Fatalf("second frame taken (%d) into the line of a descriptor in flight; Free %d", k, tx.Free())
	}
	d.complete(t)
	if k := tx.Send([]*dma.Buf{b}); k != 1 {
		t.Fatal("frame not taken after the line's descriptor completed")
	}
	d.complete(t)
	tx.Reclaim()
	// Descriptors 2-7 (the rest of line 0) with nothing in flight: allowed
	// mid-line. Then line 0 is in flight: only line 1 may be written.
	var burst []*dma.Buf
	for i := 0; i < 6; i++ {
		burst = append(burst, get())
	}
	if k := tx.Send(burst); k != 6 { // descriptors 2-7: nothing in flight, so mid-line is fine
		t.Fatalf("took %d of 6", k)
	}
	if tx.Free() != 8 {
		t.Fatalf("Free %d with line 0 in flight and line 1 free, want 8", tx.Free())
	}
	d.complete(t)
	tx.Reclaim()
}

// FuzzRecv: whatever the device writes back into a descriptor (sc, datlen),
// Recv does not panic, delivers only frames that fit their buffer, and keeps
// every buffer accounted for.
func FuzzRecv(f *testing.F) {
	f.Add(uint16(1<<11), uint16(68))
	f.Add(uint16(0), uint16(2048))
	f.Add(uint16(0xFFFF), uint16(0xFFFF))
	f.Add(uint16(1<<11), uint16(3))
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{RxRingSize: 8, PoolSize: 16, LinkTimeout: -1})
	if err != nil {
		f.Fatal(err)
	}
	bufs := make([]*dma.Buf, 8)
	payload := make([]byte, 2048)
	f.Fuzz(func(t *testing.T, status, datlen uint16) {
		base := uint64(d.regs[oRDSR/4])
		desc, err := d.mem.View("rx", base+uint64(d.rxPos*32), 32)
		if err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint16(desc[2:])&0x8000 == 0 {
			t.Fatal("ring not refilled")
		}
		d.deliver(t, payload[:min(int(datlen), len(payload))], status&^0x8000) // E cleared: the driver must look
		binary.LittleEndian.PutUint16(desc[0:], datlen)
		n := p.RxQueue(0).Recv(bufs)
		for _, b := range bufs[:n] {
			if b.Len < 14 || b.Off+b.Len > len(b.Mem) || b.Len > 2048-4 {
				t.Fatalf("delivered a frame of %d bytes at %d in a %d-byte buffer", b.Len, b.Off, len(b.Mem))
			}
			b.Free()
		}
		s := p.RxQueue(0).Pool().Stats()
		if s.ByOwner[dma.OwnerApp] != 0 || s.BadPuts != 0 || s.ByOwner[dma.OwnerRx] != 8 {
			t.Fatalf("pool accounting %+v", s)
		}
	})
}
