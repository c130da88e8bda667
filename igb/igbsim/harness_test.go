package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// The tests drive the model as a driver would, with their own transcription of
// the datasheet's offsets and bits (not the model's constants), so a wrong
// constant in the model fails here.
const (
	tCTRL, tSTATUS, tEECD, tEERD, tMDIC    = 0x0000, 0x0008, 0x0010, 0x0014, 0x0020
	tICR, tIMS, tRCTL, tTCTL               = 0x00C0, 0x00D0, 0x0100, 0x0400
	tGPIE, tEICS, tEIMS, tEIMC, tEIAC      = 0x1514, 0x1520, 0x1524, 0x1528, 0x152C
	tEIAM, tEICR, tEITR0, tIVAR0, tIVARMSC = 0x1530, 0x1580, 0x1680, 0x1700, 0x1740
	tRXCSUM, tRLPML, tMTA, tRAL0, tRAH0    = 0x5000, 0x5004, 0x5200, 0x5400, 0x5404
	tMRQC, tRETA, tRSSRK                   = 0x5818, 0x5C00, 0x5C80
	tMPC, tGPRC, tBPRC, tMPRC, tGPTC       = 0x4010, 0x4074, 0x4078, 0x407C, 0x4080
	tGORCL, tGORCH, tGOTCL, tGOTCH         = 0x4088, 0x408C, 0x4090, 0x4094
	tRNBC, tRUC, tROC, tTPR, tTPT, tCRC    = 0x40A0, 0x40A4, 0x40AC, 0x40D0, 0x40D4, 0x4000

	tCtrlSLU, tCtrlRST, tCtrlGIOMD = 1 << 6, 1 << 26, 1 << 2
	tStatusLU, tStatusFD           = 1 << 1, 1 << 0
	tStatus1000, tStatus100        = 1 << 7, 1 << 6
	tStatusGIOME                   = 1 << 19
	tEECDAutoRD                    = 1 << 9
	tMDICReady, tMDICError         = 1 << 28, 1 << 30
	tMDICRead, tMDICWrite          = 2 << 26, 1 << 26
	tRctlEN, tRctlUPE, tRctlMPE    = 1 << 1, 1 << 3, 1 << 4
	tRctlLPE, tRctlBAM, tRctlSECRC = 1 << 5, 1 << 15, 1 << 26
	tTctlEN, tTctlPSP              = 1 << 1, 1 << 3
	tDctlEnable                    = 1 << 25
	tSrrctlAdv                     = 1 << 25
	tGpieMSIX, tGpieEIAME          = 1 << 4, 1 << 30
	tIVARValid                     = 0x80
	tRahAV                         = 1 << 31

	tTxDtypData, tTxDtypCtxt = 3 << 20, 2 << 20
	tTxEOP, tTxIFCS, tTxRS   = 1 << 24, 1 << 25, 1 << 27
	tTxDEXT                  = 1 << 29
)

func tRDBAL(q int) uint32 { return 0x2800 + 0x100*uint32(q) }
func tTDBAL(q int) uint32 { return 0x3800 + 0x100*uint32(q) }

// rig is a model with a register window and bus mastering on.
type rig struct {
	simtest.Rig
	m *Model
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	if cfg.AutonegDelay == 0 {
		cfg.AutonegDelay = 2 * time.Millisecond
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return &rig{Rig: simtest.NewRig(t, m), m: m}
}

func (r *rig) mdic(v uint32) uint32     { r.Wr(tMDIC, v); return r.Rd(tMDIC) }
func (r *rig) phyWrite(reg, val uint32) { r.mdic(tMDICWrite | 1<<21 | reg<<16 | val) }
func (r *rig) phyRead(reg uint32) uint32 {
	return r.mdic(tMDICRead|1<<21|reg<<16) & 0xFFFF
}

// linkUp sets SLU, restarts autonegotiation and waits for STATUS.LU.
func (r *rig) linkUp() {
	r.T.Helper()
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlSLU)
	r.phyWrite(0, 1<<12|1<<9) // BMCR: AN enable, restart
	r.WaitFor("STATUS.LU", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
}

// rxRing is a receive ring set up the way the datasheet's init sequence says.
type rxRing struct {
	q     int
	ring  *dma.Region
	bufs  *dma.Region
	n     int
	bsize int
}

func (r *rig) setupRx(q, n, bsizeKiB int) *rxRing {
	r.T.Helper()
	ring, err := r.A.Alloc(n*16, 128)
	require.NoError(r.T, err)
	bufs, err := r.A.Alloc(n*bsizeKiB*1024, 0)
	require.NoError(r.T, err)
	b := tRDBAL(q)
	r.Wr(b+0x28, 0)
	r.Wr(b+0x00, uint32(ring.IOVA))
	r.Wr(b+0x04, uint32(ring.IOVA>>32))
	r.Wr(b+0x08, uint32(n*16))
	r.Wr(b+0x0C, uint32(bsizeKiB)|tSrrctlAdv)
	r.Wr(b+0x10, 0)
	r.Wr(b+0x18, 0)
	rx := &rxRing{q: q, ring: ring, bufs: bufs, n: n, bsize: bsizeKiB * 1024}
	for i := 0; i < n; i++ {
		rx.post(i)
	}
	r.A.Sync(ring, 0, n*16, dma.ForDevice)
	r.Wr(b+0x28, tDctlEnable)
	require.NotZero(r.T, r.Rd(b+0x28)&tDctlEnable, "RXDCTL.ENABLE reads back")
	return rx
}

// post writes the read format of descriptor i: its buffer, header address 0.
func (rx *rxRing) post(i int) {
	d := rx.ring.CPU[i*16:]
	le.PutUint64(d[0:], rx.bufs.IOVA+uint64(i*rx.bsize))
	le.PutUint64(d[8:], 0)
}

func (rx *rxRing) desc(i int) (status, length uint32, pktInfo uint16, rss uint32) {
	d := rx.ring.CPU[i*16:]
	return le.Uint32(d[8:]), uint32(le.Uint16(d[12:])), le.Uint16(d[0:]), le.Uint32(d[4:])
}

func (rx *rxRing) buf(i, n int) []byte { return rx.bufs.CPU[i*rx.bsize : i*rx.bsize+n] }

func (r *rig) enableRx(rctl uint32) { r.Wr(tRCTL, tRctlEN|tRctlSECRC|rctl) }

// txRing is a transmit ring with one buffer per descriptor.
type txRing struct {
	q    int
	ring *dma.Region
	bufs *dma.Region
	n    int
	tail int
}

const txBufSize = 2048

func (r *rig) setupTx(q, n int) *txRing {
	r.T.Helper()
	ring, err := r.A.Alloc(n*16, 128)
	require.NoError(r.T, err)
	bufs, err := r.A.Alloc(n*txBufSize, 0)
	require.NoError(r.T, err)
	b := tTDBAL(q)
	r.Wr(b+0x28, 0)
	r.Wr(b+0x00, uint32(ring.IOVA))
	r.Wr(b+0x04, uint32(ring.IOVA>>32))
	r.Wr(b+0x08, uint32(n*16))
	r.Wr(b+0x10, 0)
	r.Wr(b+0x18, 0)
	r.Wr(b+0x28, tDctlEnable)
	return &txRing{q: q, ring: ring, bufs: bufs, n: n}
}

// put writes frame into the next descriptor's buffer as one data descriptor
// with EOP, IFCS and RS, and returns its index (the tail is not written).
func (tx *txRing) put(frame []byte) int {
	i := tx.tail
	copy(tx.bufs.CPU[i*txBufSize:], frame)
	tx.desc(i, tx.bufs.IOVA+uint64(i*txBufSize), uint32(len(frame)), tTxEOP|tTxIFCS|tTxRS, uint32(len(frame)))
	tx.tail = (tx.tail + 1) % tx.n
	return i
}

func (tx *txRing) desc(i int, addr uint64, length, cmd, paylen uint32) {
	d := tx.ring.CPU[i*16:]
	le.PutUint64(d[0:], addr)
	le.PutUint32(d[8:], tTxDtypData|tTxDEXT|cmd|length)
	le.PutUint32(d[12:], paylen<<14)
}

func (tx *txRing) dd(i int) bool { return le.Uint32(tx.ring.CPU[i*16+12:])&1 != 0 }

// frame builds an Ethernet frame to dst of n bytes (payload counts up).
func frame(dst [6]byte, n int) []byte {
	f := make([]byte, n)
	copy(f, dst[:])
	copy(f[6:], []byte{0x02, 0xAA, 0, 0, 0, 1})
	f[12], f[13] = 0x88, 0xB5 // local experimental EtherType
	for i := 14; i < n; i++ {
		f[i] = byte(i)
	}
	return f
}

var (
	factoryMAC = [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	bcastMAC   = [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
)

func testCfg() Config {
	return Config{MAC: factoryMAC[:], AutonegDelay: 2 * time.Millisecond}
}
