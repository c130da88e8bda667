package dwmacsim

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStrictness provokes each refused operation and checks the model says so
// and refuses it.
func TestStrictness(t *testing.T) {
	cases := []struct {
		name string
		do   func(r *rig)
		want string
		then func(t *testing.T, r *rig)
	}{
		{"RX start before ring", func(r *rig) { r.Wr(tCh(0)+tRxCtrl, 1536<<1|tSR) }, "before its descriptor list address",
			func(t *testing.T, r *rig) { require.Zero(t, r.Rd(tCh(0)+tRxCtrl)&tSR) }},
		{"TX start before ring", func(r *rig) { r.Wr(tCh(1)+tTxCtrl, tST) }, "before its descriptor list address", nil},
		{"unaligned ring", func(r *rig) { r.Wr(tCh(0)+tTxBaseLo, 0x1008) }, "not 16-byte aligned",
			func(t *testing.T, r *rig) { require.Zero(t, r.Rd(tCh(0)+tTxBaseLo)) }},
		{"ring length too big", func(r *rig) { r.Wr(tCh(0)+tRxLen, 1024) }, "10 bits", nil},
		{"ring not mapped", func(r *rig) {
			r.Wr(tCh(0)+tTxBaseHi, 7)
			r.Wr(tCh(0)+tTxBaseLo, 0x1000)
			r.Wr(tCh(0)+tTxLen, 7)
			r.Wr(tCh(0)+tTxCtrl, tST)
		}, "not mapped for the device", nil},
		{"ring crosses 4 GiB", func(r *rig) {
			r.Wr(tCh(0)+tTxBaseHi, 1)
			r.Wr(tCh(0)+tTxBaseLo, 0xffffff00)
			r.Wr(tCh(0)+tTxLen, 31)
			r.Wr(tCh(0)+tTxCtrl, tST)
		}, "crosses a 4 GiB boundary", nil},
		{"RBSZ 0", func(r *rig) {
			x := r.setupRx(0, 4, 1536)
			r.Wr(tCh(0)+tRxCtrl, 0)
			r.m.FaultLog().Clear()
			_ = x
			r.Wr(tCh(0)+tRxCtrl, tSR)
		}, "RBSZ 0", nil},
		{"RBSZ not a multiple of 16", func(r *rig) {
			r.setupRx(0, 4, 1536)
			r.Wr(tCh(0)+tRxCtrl, 0)
			r.m.FaultLog().Clear()
			r.Wr(tCh(0)+tRxCtrl, 1500<<1|tSR)
		}, "multiple of 16", nil},
		{"RBSZ changed while running", func(r *rig) {
			r.setupRx(0, 4, 1536)
			r.Wr(tCh(0)+tRxCtrl, 1024<<1|tSR)
		}, "RBSZ of channel 0 changed", func(t *testing.T, r *rig) {
			require.Equal(t, uint32(1536), r.Rd(tCh(0)+tRxCtrl)>>1&0x3fff)
		}},
		{"ring reprogrammed while running", func(r *rig) {
			x := r.setupTx(0, 4)
			r.Wr(tCh(0)+tTxBaseLo, uint32(x.ring.IOVA)+0x100)
		}, "reprogrammed while the channel runs", nil},
		{"tail before ring", func(r *rig) { r.Wr(tCh(2)+tRxTail, 0x1000) }, "before its descriptor list address", nil},
		{"tail before length, outside at start", func(r *rig) {
			ring, err := r.A.Alloc(64, 0)
			require.NoError(r.T, err)
			r.Wr(tCh(1)+tTxBaseHi, uint32(ring.IOVA>>32))
			r.Wr(tCh(1)+tTxBaseLo, uint32(ring.IOVA))
			r.Wr(tCh(1)+tTxTail, uint32(ring.IOVA)+5*16) // stmmac order: tail, then length
			r.Wr(tCh(1)+tTxLen, 3)
			require.NoError(r.T, r.m.Err())
			r.Wr(tCh(1)+tTxCtrl, tST)
		}, "started with its tail pointer", nil},
		{"tail outside ring", func(r *rig) {
			x := r.setupRx(0, 4, 1536)
			r.Wr(tCh(0)+tRxTail, uint32(x.ring.IOVA)+5*16)
		}, "outside the ring", nil},
		{"tail off a descriptor", func(r *rig) {
			x := r.setupTx(0, 4)
			r.Wr(tCh(0)+tTxTail, uint32(x.ring.IOVA)+8)
		}, "descriptor boundary", nil},
		{"EAME changed while running", func(r *rig) {
			r.setupTx(0, 4)
			r.Wr(tSysBus, 0)
		}, "EAME changed", func(t *testing.T, r *rig) { require.NotZero(t, r.Rd(tSysBus)&tEAME) }},
		{"TXQEN AV", func(r *rig) { r.Wr(tMTLTxOp0, 1<<2) }, "only 2", nil},
		{"descriptor skip", func(r *rig) { r.Wr(tCh(0)+tChCtrl, 1<<18) }, "descriptor skip", nil},
		{"split header", func(r *rig) { r.Wr(tCh(0)+tChCtrl, 1<<24) }, "split header", nil},
		{"PBL 24", func(r *rig) { r.Wr(tCh(0)+tRxCtrl, 24<<16) }, "burst length", nil},
		{"hash unicast", func(r *rig) { r.Wr(tPktFilter, 1<<1) }, "HUC", nil},
		{"MDIO GOC", func(r *rig) { r.Wr(tMDIOAddr, tGB) }, "GOC=0", nil},
		{"source address filter", func(r *rig) { r.Wr(tAddrHi0+8, 1<<31|1<<30) }, "SA or MBC", nil},
		{"RX buffer unmapped", func(r *rig) {
			x := r.setupRx(0, 4, 1536)
			binary.LittleEndian.PutUint32(x.ring.CPU[4:], 0x77) // DES1: a buffer nowhere
			r.m.Inject(frame(factoryMAC, 60))
		}, "not inside a live mapping", func(t *testing.T, r *rig) {
			require.NotZero(t, r.Rd(tCh(0)+tStatus)&tFBE, "fatal bus error")
			require.False(t, r.m.Inject(frame(factoryMAC, 60)), "the RX process is stopped")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, testCfg())
			r.bringUp()
			require.NoError(t, r.m.Err())
			tc.do(r)
			r.expectFault(tc.want)
			if tc.then != nil {
				tc.then(t, r)
			}
		})
	}
}
