package fecsim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// The tests play the driver from the reference manual's side: they write the
// registers and BDs themselves (with their own byte order and Syncs), so the
// model is checked against the manual, not against the fec driver.

const bufSize = 2048

// bed is a model brought up to the point a test needs.
type bed struct {
	t     testing.TB
	m     *Model
	r     nic.Regs // settles the device side after every write
	raw   nic.Regs // the window itself: the device runs on its own time
	alloc dma.Allocator
	ext   bool // enhanced BDs
	le    bool // BD byte order the "driver" writes
	n     int  // BDs per ring
	rx    [3]*dma.Region
	tx    [3]*dma.Region
	rxBuf [3]*dma.Region
	txBuf [3]*dma.Region
	sent  [][]byte
}

type bedOpts struct {
	cfg      Config
	ext      bool
	bigEnd   bool // write BDs big-endian (and leave DBSWP clear)
	noDBSWP  bool // leave DBSWP clear but write little-endian BDs (the bug)
	n        int
	mrbr     uint32
	shift16  bool
	rcr      uint32 // 0: the default below
	noLink   bool
	noEnable bool
}

func defaultRCR() uint32 { return 1984<<16 | rcrMIIMODE | rcrRGMII | rcrFCE }

func (b *bed) bdSize() int {
	if b.ext {
		return bdSizeExt
	}
	return bdSizeLeg
}

func newBed(t testing.TB, o bedOpts) *bed {
	t.Helper()
	if o.cfg.AutonegDelay == 0 {
		o.cfg.AutonegDelay = time.Millisecond
	}
	m, err := New(o.cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	r, err := m.Device().Regs(0)
	require.NoError(t, err)
	if o.n == 0 {
		o.n = 8
	}
	b := &bed{t: t, m: m, r: simtest.Settled{Regs: r, M: m}, raw: r, alloc: m.Device().DMA(), ext: o.ext, le: !o.bigEnd, n: o.n}
	m.SetTransmit(func(f []byte) { b.sent = append(b.sent, append([]byte(nil), f...)) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%v", m.Sched())
		}
	})
	if !o.noLink {
		b.linkUp()
	}
	rings := m.Rings()
	for q := 0; q < rings; q++ {
		var err error
		b.rx[q], err = b.alloc.Alloc(o.n*b.bdSize(), 0)
		require.NoError(t, err)
		b.tx[q], err = b.alloc.Alloc(o.n*b.bdSize(), 0)
		require.NoError(t, err)
		b.rxBuf[q], err = b.alloc.Alloc(o.n*bufSize, 0)
		require.NoError(t, err)
		b.txBuf[q], err = b.alloc.Alloc(o.n*bufSize, 0)
		require.NoError(t, err)
		for i := 0; i < o.n; i++ {
			b.setRX(q, i)
			b.putBD(b.tx[q], i, 0, b.wrap(i), 0, 0)
		}
		b.syncAll(q)
	}
	b.r.Write32(regEIR, 0xFFFFFFFF)
	b.r.Write32(regEIMR, 0)
	mrbr := o.mrbr
	if mrbr == 0 {
		mrbr = bufSize
	}
	rdsr := [3]reg{regRDSR, regRDSR1, regRDSR2}
	tdsr := [3]reg{regTDSR, regTDSR1, regTDSR2}
	mrb := [3]reg{regMRBR, regMRBR1, regMRBR2}
	for q := 0; q < rings; q++ {
		b.r.Write32(rdsr[q], uint32(b.rx[q].IOVA))
		b.r.Write32(tdsr[q], uint32(b.tx[q].IOVA))
		b.r.Write32(mrb[q], mrbr)
	}
	if rings > 1 {
		b.r.Write32(regDMACFG1, dmaClassEn|0x100)
		b.r.Write32(regDMACFG2, dmaClassEn|0x100)
	}
	rcr := o.rcr
	if rcr == 0 {
		rcr = defaultRCR()
	}
	b.r.Write32(regRCR, rcr)
	b.r.Write32(regTCR, tcrFDEN)
	b.r.Write32(regTFWR, tfwrSTRFWD)
	b.r.Write32(regFTRL, 2048)
	if o.shift16 {
		b.r.Write32(regRACC, racc16)
	}
	b.r.Write32(regMIBC, 0)
	ecr := ecrETHEREN | ecrSPEED
	if o.cfg.RMII {
		ecr &^= ecrSPEED
	}
	if !o.bigEnd && !o.noDBSWP {
		ecr |= ecrDBSWP
	}
	if o.ext {
		ecr |= ecrEN1588
	}
	if o.noDBSWP {
		b.le = true
	}
	if !o.noEnable {
		b.r.Write32(regECR, ecr)
		for q := 0; q < rings; q++ {
			b.r.Write32([3]reg{regRDAR, regRDAR1, regRDAR2}[q], darActive)
		}
	}
	return b
}

func (b *bed) wrap(i int) uint16 {
	if i == b.n-1 {
		return rxW
	}
	return 0
}

// linkUp restarts autonegotiation through MMFR and waits for the link.
func (b *bed) linkUp() {
	b.t.Helper()
	b.r.Write32(regMSCR, 0x1A)
	b.mdioWrite(1, 0, 0x1200) // BMCR: AN enable + restart
	deadline := time.Now().Add(2 * time.Second)
	for !b.m.PHY().LinkUp() {
		require.True(b.t, time.Now().Before(deadline), "link did not come up")
		time.Sleep(50 * time.Microsecond)
	}
}

func (b *bed) mdioWrite(pa, ra int, v uint16) {
	b.t.Helper()
	b.r.Write32(regEIR, eirMII)
	b.r.Write32(regMMFR, 1<<30|1<<28|uint32(pa)<<23|uint32(ra)<<18|2<<16|uint32(v))
	require.NotZero(b.t, b.r.Read32(regEIR)&eirMII, "MII event after an MDIO write")
	b.r.Write32(regEIR, eirMII)
}

func (b *bed) mdioRead(pa, ra int) uint16 {
	b.t.Helper()
	b.r.Write32(regEIR, eirMII)
	b.r.Write32(regMMFR, 1<<30|2<<28|uint32(pa)<<23|uint32(ra)<<18|2<<16)
	require.NotZero(b.t, b.r.Read32(regEIR)&eirMII, "MII event after an MDIO read")
	b.r.Write32(regEIR, eirMII)
	return uint16(b.r.Read32(regMMFR))
}

func (b *bed) u16(d []byte, v uint16) {
	if b.le {
		binary.LittleEndian.PutUint16(d, v)
	} else {
		binary.BigEndian.PutUint16(d, v)
	}
}

func (b *bed) u32(d []byte, v uint32) {
	if b.le {
		binary.LittleEndian.PutUint32(d, v)
	} else {
		binary.BigEndian.PutUint32(d, v)
	}
}

func (b *bed) g16(d []byte) uint16 {
	if b.le {
		return binary.LittleEndian.Uint16(d)
	}
	return binary.BigEndian.Uint16(d)
}

func (b *bed) g32(d []byte) uint32 {
	if b.le {
		return binary.LittleEndian.Uint32(d)
	}
	return binary.BigEndian.Uint32(d)
}

// putBD writes BD i of ring region r on the CPU side (no Sync).
func (b *bed) putBD(r *dma.Region, i int, length, sc uint16, addr uint32, esc uint32) {
	d := r.CPU[i*b.bdSize():]
	b.u16(d[bdLen:], length)
	b.u32(d[bdAddr:], addr)
	if b.ext {
		b.u32(d[bdESC:], esc)
		b.u32(d[bdProt:], 0)
		b.u32(d[bdBDU:], 0)
		b.u32(d[bdTS:], 0)
	}
	b.u16(d[bdSC:], sc)
}

// setRX gives RX BD i of ring q back to the device (E, W on the last, INT).
func (b *bed) setRX(q, i int) {
	b.putBD(b.rx[q], i, 0, rxE|b.wrap(i), uint32(b.rxBuf[q].IOVA)+uint32(i*bufSize), rxeINT)
}

// giveRX gives RX BD i of ring q back and syncs just that BD.
func (b *bed) giveRX(q, i int) {
	b.setRX(q, i)
	b.alloc.Sync(b.rx[q], i*b.bdSize(), b.bdSize(), dma.ForDevice)
}

func (b *bed) syncAll(q int) {
	b.alloc.Sync(b.rx[q], 0, b.rx[q].Len(), dma.ForDevice)
	b.alloc.Sync(b.tx[q], 0, b.tx[q].Len(), dma.ForDevice)
}

// rxBD reads RX BD i of ring q after a Sync for the CPU.
func (b *bed) rxBD(q, i int) (length, sc uint16, d []byte) {
	sz := b.bdSize()
	b.alloc.Sync(b.rx[q], i*sz, sz, dma.ForCPU)
	d = b.rx[q].CPU[i*sz : (i+1)*sz]
	return b.g16(d[bdLen:]), b.g16(d[bdSC:]), d
}

func (b *bed) txBD(q, i int) (length, sc uint16, d []byte) {
	sz := b.bdSize()
	b.alloc.Sync(b.tx[q], i*sz, sz, dma.ForCPU)
	d = b.tx[q].CPU[i*sz : (i+1)*sz]
	return b.g16(d[bdLen:]), b.g16(d[bdSC:]), d
}

// rxData returns n bytes of RX buffer i of ring q after a Sync for the CPU.
func (b *bed) rxData(q, i, n int) []byte {
	b.alloc.Sync(b.rxBuf[q], i*bufSize, n, dma.ForCPU)
	return b.rxBuf[q].CPU[i*bufSize : i*bufSize+n]
}

// queueTX puts frame in TX BD i of ring q (one BD, L|TC|R) and syncs it.
func (b *bed) queueTX(q, i int, frame []byte, sc uint16, esc uint32) {
	off := i * bufSize
	copy(b.txBuf[q].CPU[off:], frame)
	b.alloc.Sync(b.txBuf[q], off, len(frame), dma.ForDevice)
	b.putBD(b.tx[q], i, uint16(len(frame)), sc|b.wrap(i), uint32(b.txBuf[q].IOVA)+uint32(off), esc)
	b.alloc.Sync(b.tx[q], i*b.bdSize(), b.bdSize(), dma.ForDevice)
}

func (b *bed) mib(off reg) uint32 { return b.r.Read32(off) }

func (b *bed) noFaults() {
	b.t.Helper()
	require.NoError(b.t, b.m.Err())
}

// testFrame is a unicast frame to the model's MAC of n bytes (n >= 60).
func testFrame(m *Model, n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, m.MAC())
	copy(f[6:], []byte{0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE})
	f[12], f[13] = 0x08, 0x00
	for i := 14; i < n; i++ {
		f[i] = byte(i) + seed
	}
	return f
}

// waitResetDone polls ECR until RESET reads 0, as a driver must.
func waitResetDone(t testing.TB, r nic.Regs) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for r.Read32(regECR)&ecrRESET != 0 {
		require.True(t, time.Now().Before(deadline), "ECR.RESET still set after 1 s")
		time.Sleep(time.Microsecond)
	}
}
