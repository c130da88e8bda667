package dwmacsim

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// The tests drive the model as a driver would, with their own transcription of
// the databook's offsets and bits (not the model's constants), so a wrong
// constant in the model fails here.
const (
	tMACConfig, tPktFilter, tHash0, tRxqCtrl0 = 0x000, 0x008, 0x010, 0x0a0
	tVersion, tHWF0, tHWF1, tHWF2, tHWF3      = 0x110, 0x11c, 0x120, 0x124, 0x128
	tMDIOAddr, tMDIOData, tAddrHi0, tAddrLo0  = 0x200, 0x204, 0x300, 0x304
	tMTLTxOp0, tMTLRxOp0, tMTLMissed0         = 0xd00, 0xd30, 0xd34
	tRxqDMAMap0                               = 0xc30
	tBusMode, tSysBus, tDMAIntStatus          = 0x1000, 0x1004, 0x1008
	tMMC                                      = 0x700

	tChCtrl, tTxCtrl, tRxCtrl        = 0x00, 0x04, 0x08
	tTxBaseHi, tTxBaseLo             = 0x10, 0x14
	tRxBaseHi, tRxBaseLo             = 0x18, 0x1c
	tTxTail, tRxTail, tTxLen, tRxLen = 0x20, 0x28, 0x2c, 0x30
	tIntEn, tRxWdt, tCurTx, tCurRx   = 0x34, 0x38, 0x44, 0x4c
	tStatus, tMissFrame              = 0x60, 0x6c

	tRE, tTE, tDM, tFES, tPS, tCST = 1 << 0, 1 << 1, 1 << 13, 1 << 14, 1 << 15, 1 << 21
	tSWR, tINTM1, tEAME            = 1 << 0, 1 << 16, 1 << 11
	tST, tSR                       = 1 << 0, 1 << 0
	tTXQEN, tTSF, tRSF             = 2 << 2, 1 << 1, 1 << 5
	tTQS4K                         = (4096/256 - 1) << 16 // MTL_TxQ_Operation_Mode.TQS
	tGB, tC45E, tGOCWrite, tGOCRd  = 1 << 0, 1 << 1, 1 << 2, 3 << 2
	tPR, tHMC, tPM, tDBF, tRA      = 1 << 0, 1 << 2, 1 << 4, 1 << 5, 1 << 31

	tOWN, tCTXT, tFD, tLD  = 1 << 31, 1 << 30, 1 << 29, 1 << 28
	tTxIOC, tBUF1V, tRxIOC = 1 << 31, 1 << 24, 1 << 30
	tDE, tES               = 1 << 23, 1 << 15

	tTI, tTPS, tTBU, tRI, tRBU, tRPS = 1 << 0, 1 << 1, 1 << 2, 1 << 6, 1 << 7, 1 << 8
	tFBE, tAIS, tNIS                 = 1 << 12, 1 << 14, 1 << 15
	tNIE, tAIE                       = 1 << 15, 1 << 14 // 4.10 and later
	tNIE400, tAIE400                 = 1 << 16, 1 << 15

	tMMCRstOnRd                                   = 1 << 2
	tMMCTxOctGB, tMMCTxFrGB, tMMCRxFrGB, tMMCRxOc = 0x14, 0x18, 0x80, 0x84
	tMMCRxBcast, tMMCRxUcast, tMMCRxFIFOOvf       = 0x8c, 0xc4, 0xd4
)

func tCh(c int) uint32 { return 0x1100 + 0x80*uint32(c) }

var factoryMAC = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}

// rig is a model with its register window and bus mastering on.
type rig struct {
	simtest.Rig
	m *Model
}

// testCfg is an Intel mGbE with a 200 MHz PTP reference, as the tests drive
// the system time for (ADL-S's own is 204.8 MHz: TestIntelPTPClock).
func testCfg() Config {
	return Config{MAC: factoryMAC, AutonegDelay: time.Millisecond, ResetDelay: 50 * time.Microsecond, PTPClockHz: 200_000_000}
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return &rig{Rig: simtest.NewRig(t, m), m: m}
}

// swr runs the DMA software reset and waits for SWR to clear.
func (r *rig) swr() {
	r.T.Helper()
	r.Wr(tBusMode, tSWR)
	r.WaitFor("DMA_Mode.SWR to clear", func() bool { return r.Rd(tBusMode)&tSWR == 0 })
}

// mdio runs one MDIO frame and polls GB; it returns MAC_MDIO_Data.
func (r *rig) mdio(addr uint32) uint32 {
	r.T.Helper()
	r.Wr(tMDIOAddr, addr|tGB|5<<8)
	for i := 0; ; i++ {
		if r.Rd(tMDIOAddr)&tGB == 0 {
			break
		}
		if i > 100 {
			r.T.Fatal("MDIO GB never cleared")
		}
	}
	return r.Rd(tMDIOData)
}

func (r *rig) phyRead(pa, reg uint32) uint16 {
	return uint16(r.mdio(pa<<21 | reg<<16 | tGOCRd))
}

func (r *rig) phyWrite(pa, reg uint32, v uint16) {
	r.Wr(tMDIOData, uint32(v))
	r.mdio(pa<<21 | reg<<16 | tGOCWrite)
}

// linkUp restarts autonegotiation, waits for the link, and sets the MAC to
// 1 Gb/s full duplex with RE and TE.
func (r *rig) linkUp() {
	r.T.Helper()
	r.phyWrite(1, 0, 1<<12|1<<9)
	r.WaitFor("PHY link", func() bool {
		r.phyRead(1, 1)
		return r.phyRead(1, 1)&(1<<2) != 0
	})
	r.Wr(tMACConfig, tRE|tTE|tDM)
}

// bringUp is the stmmac order: reset, bus mode, queues, link.
func (r *rig) bringUp() {
	r.T.Helper()
	hi, lo := r.Rd(tAddrHi0), r.Rd(tAddrLo0) // firmware's address, before the reset clears it
	r.swr()
	r.Wr(tAddrHi0, hi)
	r.Wr(tAddrLo0, lo)
	r.Wr(tSysBus, tEAME)
	r.Wr(tRxqCtrl0, 2) // queue 0 generic
	for c := 0; c < r.m.TxChannels(); c++ {
		r.Wr(tMTLTxOp0+0x40*uint32(c), tTXQEN|tTSF|tTQS4K) // a 4 KiB queue, as stmmac splits the FIFO
	}
	for c := 0; c < r.m.RxChannels(); c++ {
		r.Wr(tMTLRxOp0+0x40*uint32(c), tRSF)
	}
	r.linkUp()
}

const bufSize = 2048

// txRing is a TX ring the test writes like a driver: descriptors [cur, tail)
// are the device's.
type txRing struct {
	r    *rig
	c    int
	ring *dma.Region
	bufs *dma.Region
	n    int
	tail int
}

func (r *rig) setupTx(c, n int) *txRing {
	r.T.Helper()
	ring, err := r.A.Alloc(n*16, 0)
	require.NoError(r.T, err)
	bufs, err := r.A.Alloc(n*bufSize, 0)
	require.NoError(r.T, err)
	b := tCh(c)
	r.Wr(b+tTxBaseHi, uint32(ring.IOVA>>32))
	r.Wr(b+tTxBaseLo, uint32(ring.IOVA))
	r.Wr(b+tTxLen, uint32(n-1))
	r.Wr(b+tTxTail, uint32(ring.IOVA))
	r.Wr(b+tTxCtrl, tST)
	return &txRing{r: r, c: c, ring: ring, bufs: bufs, n: n}
}

func (x *txRing) bufAddr(i int) uint64 { return x.bufs.IOVA + uint64(i*bufSize) }

// put writes descriptor i for a buffer of ln bytes (at buffer i) with the DES3
// flags given; fl is the frame length field.
func (x *txRing) put(i, ln int, des2, des3 uint32, fl int) {
	d := x.ring.CPU[i*16 : i*16+16]
	a := x.bufAddr(i)
	binary.LittleEndian.PutUint32(d[0:], uint32(a))
	binary.LittleEndian.PutUint32(d[4:], uint32(a>>32))
	binary.LittleEndian.PutUint32(d[8:], des2|uint32(ln))
	binary.LittleEndian.PutUint32(d[12:], des3|uint32(fl))
	x.r.A.Sync(x.bufs, i*bufSize, ln, dma.ForDevice)
	x.r.A.Sync(x.ring, i*16, 16, dma.ForDevice)
}

// send queues one single-descriptor frame and returns its index (no tail write).
func (x *txRing) queue(frame []byte, ioc bool) int {
	i := x.tail
	copy(x.bufs.CPU[i*bufSize:], frame)
	var d2 uint32
	if ioc {
		d2 = tTxIOC
	}
	x.put(i, len(frame), d2, tOWN|tFD|tLD, len(frame))
	x.tail = (x.tail + 1) % x.n
	return i
}

func (x *txRing) kick() {
	x.r.Wr(tCh(x.c)+tTxTail, uint32(x.ring.IOVA)+uint32(x.tail*16))
}

// des3 reads TDES3 of descriptor i atomically, as a driver does: the device
// side may be writing it back at that moment.
func (x *txRing) des3(i int) uint32 {
	x.r.A.Sync(x.ring, i*16, 16, dma.ForCPU)
	return loadDES3(x.ring.CPU[i*16 : i*16+16])
}

// rxRing is an RX ring posted like stmmac posts it.
type rxRing struct {
	r    *rig
	c    int
	ring *dma.Region
	bufs *dma.Region
	n    int
	bsz  int
}

func (r *rig) setupRx(c, n, bsz int) *rxRing {
	r.T.Helper()
	ring, err := r.A.Alloc(n*16, 0)
	require.NoError(r.T, err)
	bufs, err := r.A.Alloc(n*bufSize, 0)
	require.NoError(r.T, err)
	x := &rxRing{r: r, c: c, ring: ring, bufs: bufs, n: n, bsz: bsz}
	for i := 0; i < n; i++ {
		x.post(i)
	}
	b := tCh(c)
	r.Wr(b+tRxBaseHi, uint32(ring.IOVA>>32))
	r.Wr(b+tRxBaseLo, uint32(ring.IOVA))
	r.Wr(b+tRxLen, uint32(n-1))
	r.Wr(b+tRxTail, uint32(ring.IOVA)+uint32(n*16))
	r.Wr(b+tRxCtrl, uint32(bsz)<<1|tSR)
	return x
}

func (x *rxRing) bufAddr(i int) uint64 { return x.bufs.IOVA + uint64(i*bufSize) }

// post gives descriptor i back to the device (read format, OWN last).
func (x *rxRing) post(i int) {
	d := x.ring.CPU[i*16 : i*16+16]
	a := x.bufAddr(i)
	binary.LittleEndian.PutUint32(d[0:], uint32(a))
	binary.LittleEndian.PutUint32(d[4:], uint32(a>>32))
	binary.LittleEndian.PutUint32(d[8:], 0)
	binary.LittleEndian.PutUint32(d[12:], tOWN|tBUF1V|tRxIOC)
	x.r.A.Sync(x.ring, i*16, 16, dma.ForDevice)
}

func (x *rxRing) tailTo(i int) {
	x.r.Wr(tCh(x.c)+tRxTail, uint32(x.ring.IOVA)+uint32(i*16))
}

func (x *rxRing) des3(i int) uint32 {
	x.r.A.Sync(x.ring, i*16, 16, dma.ForCPU)
	return binary.LittleEndian.Uint32(x.ring.CPU[i*16+12:])
}

func (x *rxRing) buf(i, n int) []byte {
	x.r.A.Sync(x.bufs, i*bufSize, n, dma.ForCPU)
	return x.bufs.CPU[i*bufSize : i*bufSize+n]
}

// frame builds a frame to dst of n bytes (no FCS) with a recognisable payload.
func frame(dst net.HardwareAddr, n int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee})
	f[12], f[13] = 0x08, 0x00
	for i := 14; i < n; i++ {
		f[i] = byte(i)
	}
	return f
}

// expectFault asserts that a fault mentioning substr was recorded, then
// clears the log.
func (r *rig) expectFault(substr string) {
	r.T.Helper()
	for _, f := range r.m.Faults() {
		if strings.Contains(f.String(), substr) {
			r.m.FaultLog().Clear()
			return
		}
	}
	r.T.Fatalf("no fault mentioning %q; faults: %v", substr, r.m.Faults())
}
