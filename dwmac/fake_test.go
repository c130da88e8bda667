package dwmac

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// fakeDev is a tiny scripted DWC EQoS register file for bring-up tests. Its
// offsets and bits are written here from stmmac's dwmac4.h and dwmac4_dma.h as
// literals, not
// taken from regs.go, so a wrong constant in the driver shows up as a failed
// expectation rather than passing on both sides.
//
// Behaviour: DMA_Mode.SWR clears on the next read unless swrStuck; the MDIO GB
// bit clears at once unless mdioStuck, and the access goes to phy when the
// address matches; everything else is plain storage. Every write is logged.
// The test plays the DMA side itself (deliver, complete).
type fakeDev struct {
	mu        sync.Mutex
	info      nic.DeviceInfo
	mem       *sim.Memory
	regs      map[uint32]uint32
	log       []write // every register write, in order
	allOnes   bool
	swrStuck  bool
	mdioStuck bool
	phy       *sim.PHY // nil: nothing answers on MDIO
	busMaster bool
	irqs      []nic.IRQ
	noLog     bool   // do not log writes (allocation tests)
	rdes3Clr  uint32 // bits deliver clears from its write-back (hostile cases)
}

type write struct{ off, val uint32 }

// Literal offsets (Linux stmmac dwmac4.h, dwmac4_dma.h).
const (
	fMACConfig  = 0x000
	fPktFilter  = 0x008
	fRxQCtrl0   = 0x0a0
	fVersion    = 0x110
	fHWF0       = 0x11c
	fHWF1       = 0x120
	fHWF2       = 0x124
	fMDIOAddr   = 0x200
	fMDIOData   = 0x204
	fAddrHigh0  = 0x300
	fAddrLow0   = 0x304
	fMMCCntrl   = 0x700
	fMTLTxOp0   = 0xd00
	fMTLRxOp0   = 0xd30
	fBusMode    = 0x1000
	fSysBusMode = 0x1004
	fCh0        = 0x1100
	fChCtrl     = 0x00
	fChTxCtrl   = 0x04
	fChRxCtrl   = 0x08
	fChTxBaseHi = 0x10
	fChTxBaseLo = 0x14
	fChRxBaseHi = 0x18
	fChRxBaseLo = 0x1c
	fChTxTail   = 0x20
	fChRxTail   = 0x28
	fChTxLen    = 0x2c
	fChRxLen    = 0x30
	fChIntrEna  = 0x34
	fChStatus   = 0x60
)

func newFakeDev(t testing.TB) *fakeDev {
	d := &fakeDev{
		// Elkhart Lake RGMII: no SerDes or xPCS on MDIO, which the fake lacks.
		info: nic.DeviceInfo{Name: "fake", Bus: "sim", Vendor: 0x8086, Device: 0x4b30},
		mem:  sim.NewMemory(sim.MemoryConfig{}, nil),
		regs: map[uint32]uint32{},
		phy:  sim.NewPHY(sim.PHYConfig{Addr: 1, ID1: 0x001c, ID2: 0xc916, AutonegDelay: 1}),
	}
	d.regs[fVersion] = 0x3051 // 5.10
	d.regs[fHWF0] = 1 << 8    // MMC
	// RX and TX FIFO 16 KiB (128 << 7), ADDR64 = 1 (40 bits), 64 hash bins.
	d.regs[fHWF1] = 7 | 7<<6 | 1<<14 | 1<<24
	d.regs[fHWF2] = 3 | 3<<6 | 3<<12 | 3<<18 // 4 queues and channels each way
	t.Cleanup(func() { d.mem.Close() })
	return d
}

func (d *fakeDev) Info() nic.DeviceInfo                        { return d.info }
func (d *fakeDev) Regs(n int) (nic.Regs, error)                { return d, nil }
func (d *fakeDev) DMA() dma.Allocator                          { return d.mem }
func (d *fakeDev) ReadConfig(off, size int) (uint32, error)    { return 0, nic.ErrNotSupported }
func (d *fakeDev) WriteConfig(off, size int, val uint32) error { return nic.ErrNotSupported }
func (d *fakeDev) EnableBusMaster() error                      { d.busMaster = true; return nil }
func (d *fakeDev) EnableMSIX(n int) ([]nic.IRQ, error) {
	if d.irqs == nil {
		return nil, nic.ErrNotSupported
	}
	return d.irqs[:min(n, len(d.irqs))], nil
}
func (d *fakeDev) DisableIRQs() error { return nil }
func (d *fakeDev) Reset() error       { return nil }
func (d *fakeDev) Close() error       { return nil }

func (d *fakeDev) Read32(off uint32) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.allOnes {
		return 0xFFFFFFFF
	}
	v := d.regs[off]
	if off == fBusMode && v&1 != 0 && !d.swrStuck {
		d.regs[off] = v &^ 1 // the reset completes
	}
	return v
}

func (d *fakeDev) Write32(off, val uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.noLog {
		d.log = append(d.log, write{off, val})
	}
	if d.allOnes {
		return
	}
	if off >= fCh0 && off < fCh0+8*0x80 && (off-fCh0)%0x80 == fChStatus {
		d.regs[off] &^= val // write 1 to clear
		return
	}
	d.regs[off] = val
	if off == fMDIOAddr && val&1 != 0 && !d.mdioStuck {
		pa, rda, goc := int(val>>21&31), int(val>>16&31), val>>2&3
		if d.phy != nil && pa == d.phy.Addr() {
			switch goc {
			case 1:
				d.phy.Write(rda, uint16(d.regs[fMDIOData]))
			case 3:
				d.regs[fMDIOData] = uint32(d.phy.Read(rda))
			}
		} else if goc == 3 {
			d.regs[fMDIOData] = 0xffff // nobody drives MDIO: it reads high
		}
		d.regs[off] = val &^ 1
	}
}

// writes returns the logged writes to off, in order.
func (d *fakeDev) writes(off uint32) []uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []uint32
	for _, w := range d.log {
		if w.off == off {
			out = append(out, w.val)
		}
	}
	return out
}

// firstWrite is the index in the log of the first write to off, or -1.
func (d *fakeDev) firstWrite(off uint32, pred func(uint32) bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, w := range d.log {
		if w.off == off && (pred == nil || pred(w.val)) {
			return i
		}
	}
	return -1
}

func (d *fakeDev) reg(off uint32) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regs[off]
}

// ring reads a channel's ring base (hi:lo) and length from the registers.
func (d *fakeDev) ring(ch int, hi, lo, ln uint32) (base uint64, n int) {
	b := uint32(fCh0 + 0x80*ch)
	return uint64(d.reg(b+hi))<<32 | uint64(d.reg(b+lo)), int(d.reg(b+ln)) + 1
}

// rxState is the fake DMA's RX position for channel 0.
type rxState struct{ cur int }

// deliver plays the RX DMA of channel 0: it writes frame into each descriptor
// from st.cur that the driver owns over to the DMA (OWN set, before the tail),
// up to count, and writes it back with FD|LD|PL (+4 when the MAC keeps the FCS).
func (d *fakeDev) deliver(t testing.TB, st *rxState, frame []byte, count int, rdes3Extra uint32) int {
	base, n := d.ring(0, fChRxBaseHi, fChRxBaseLo, fChRxLen)
	tail := int(d.reg(fCh0+fChRxTail)-uint32(base)) / 16
	done := 0
	for ; done < count && st.cur != tail; done++ {
		desc, err := d.mem.View("rx", base+uint64(st.cur)*16, 16)
		if err != nil {
			t.Fatal(err)
		}
		d3 := binary.LittleEndian.Uint32(desc[12:])
		if d3&(1<<31) == 0 || d3&(1<<24) == 0 {
			t.Fatalf("RX descriptor %d before the tail has DES3 0x%08x: want OWN and BUF1V", st.cur, d3)
		}
		addr := uint64(binary.LittleEndian.Uint32(desc[4:]))<<32 | uint64(binary.LittleEndian.Uint32(desc[0:]))
		buf, err := d.mem.View("rx", addr, len(frame)+4)
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, frame)
		pl := uint32(len(frame))
		if d.reg(fMACConfig)&(3<<20) != 3<<20 {
			pl += 4
		}
		clear(desc)
		binary.LittleEndian.PutUint32(desc[12:], (1<<29|1<<28|pl|rdes3Extra)&^d.rdes3Clr)
		st.cur = (st.cur + 1) % n
	}
	return done
}

// txState is the fake DMA's TX position for channel 0.
type txState struct{ cur int }

// complete plays the TX DMA of channel 0: every descriptor up to the tail is
// checked (OWN|FD|LD), its frame copied out, and OWN cleared.
func (d *fakeDev) complete(t testing.TB, st *txState, out func([]byte)) int {
	base, n := d.ring(0, fChTxBaseHi, fChTxBaseLo, fChTxLen)
	tail := int(d.reg(fCh0+fChTxTail)-uint32(base)) / 16
	done := 0
	for ; st.cur != tail; done++ {
		desc, err := d.mem.View("tx", base+uint64(st.cur)*16, 16)
		if err != nil {
			t.Fatal(err)
		}
		d3 := binary.LittleEndian.Uint32(desc[12:])
		if d3&(7<<28|1<<31) != 1<<31|1<<29|1<<28 {
			t.Fatalf("TX descriptor %d: DES3 0x%08x, want OWN|FD|LD and no CTXT", st.cur, d3)
		}
		n1 := int(binary.LittleEndian.Uint32(desc[8:]) & 0x3fff)
		if fl := int(d3 & 0x7fff); fl != n1 {
			t.Fatalf("TX descriptor %d: frame length %d, buffer length %d", st.cur, fl, n1)
		}
		if out != nil {
			addr := uint64(binary.LittleEndian.Uint32(desc[4:]))<<32 | uint64(binary.LittleEndian.Uint32(desc[0:]))
			buf, err := d.mem.View("tx", addr, n1)
			if err != nil {
				t.Fatal(err)
			}
			out(buf)
		}
		binary.LittleEndian.PutUint32(desc[12:], 1<<28) // write-back: LD, OWN clear
		st.cur = (st.cur + 1) % n
	}
	return done
}
