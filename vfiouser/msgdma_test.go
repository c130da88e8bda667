package vfiouser_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
)

// 82576 transmit registers and the advanced data descriptor (datasheet 8.12
// and 7.2.2.3), transcribed here, not taken from the model.
const (
	rTCTL                                             = 0x0400
	rTDBAL0, rTDBAH0, rTDLEN0, rTDH0, rTDT0, rTXDCTL0 = 0xE000, 0xE004, 0xE008, 0xE010, 0xE018, 0xE028

	tctlEN       = 1 << 1
	txdctlEnable = 1 << 25
	txDtypData   = 0x3 << 20 // DTYP 0011b: advanced data descriptor
	txCmdEOP     = 1 << 24
	txCmdIFCS    = 1 << 25
	txCmdRS      = 1 << 27
	txCmdDEXT    = 1 << 29
	txStatusDD   = 1 << 0 // write-back STA.DD, dword 3
)

// wireTap is a link that hands every frame sent to a channel (a copy).
type wireTap chan []byte

func (w wireTap) Send(f []byte) error      { w <- append([]byte(nil), f...); return nil }
func (w wireTap) SetReceiver(sim.Receiver) {}
func (w wireTap) Close() error             { return nil }

// Guest memory without a descriptor: the client keeps it and answers DMA_READ
// and DMA_WRITE; the model works on a mirror (sim.Memory.MapMessages).
const (
	msgIOVA  = 0x10_0000
	msgSize  = 1 << 16
	msgBufs  = 0x1000
	msgNDesc = 8
	msgBufSz = 2048
)

// rxRingByMessages brings igbsim's RX queue 0 up on a ring and buffers in
// client memory mapped without a descriptor, MSI-X vector 0 on ev.
func rxRingByMessages(t *testing.T, s *served, mem []byte, ev vfiousertest.Eventfd) guest {
	g := guest{t, s.c}
	s.c.AddMemory(msgIOVA, mem)
	require.NoError(t, s.c.DMAMap(msgIOVA, msgSize, 0, -1, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSIX, 0, 1, nil, int(ev)))
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x06, 0}))
	g.linkUp()
	for i := 0; i < msgNDesc; i++ {
		le.PutUint64(mem[16*i:], msgIOVA+msgBufs+uint64(i*msgBufSz))
		le.PutUint64(mem[16*i+8:], 0)
	}
	g.wr(rRDBAL0, msgIOVA)
	g.wr(rRDBAH0, 0)
	g.wr(rRDLEN0, msgNDesc*16)
	g.wr(rSRRCTL0, msgBufSz/1024|srrctlAdvOneBuf)
	g.wr(rRDH0, 0)
	g.wr(rRDT0, 0)
	g.wr(rRXDCTL, rxdctlEnable)
	g.wr(rRDT0, msgNDesc-1)
	g.wr(rGPIE, gpieMSIX)
	g.wr(rIVAR0, ivarValid)
	g.wr(rEIMS, 1)
	g.wr(rRCTL, rctlEN|rctlSECRC)
	return g
}

// TestRxByMessages: frames received into message-only memory are in the
// client's memory, descriptor written back, when the MSI-X eventfd fires (the
// server writes back before it signals), and the model logs no fault.
func TestRxByMessages(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	mem := make([]byte, msgSize)
	ev, err := vfiousertest.NewEventfd()
	require.NoError(t, err)
	defer ev.Close()
	g := rxRingByMessages(t, s, mem, ev)
	const frames = 5
	for k := 0; k < frames; k++ {
		f := testFrame(100 + 50*k)
		require.True(t, s.m.Inject(f))
		n, err := ev.Wait(2 * time.Second)
		require.NoError(t, err)
		require.NotZero(t, n, "frame %d: MSI-X vector 0 fired", k)
		// What the client's memory holds at the moment of the interrupt.
		d := s.c.Memory(msgIOVA+uint64(16*k), 16)
		require.NotZero(t, le.Uint32(d[8:])&rxStatusDD, "frame %d: DD in the client's memory before the interrupt", k)
		require.Equal(t, uint16(len(f)), le.Uint16(d[12:]))
		require.Equal(t, f, s.c.Memory(msgIOVA+msgBufs+uint64(k*msgBufSz), len(f)), "frame %d in the client's memory", k)
		g.wr(rEICR, 1) // clear the cause: the next frame raises it again
	}
	require.NoError(t, s.m.Err(), "no model faults")
	st := s.stats
	require.NotZero(t, st.DMAMessages.Load())
	require.Zero(t, st.DMAGivenUp.Load())
	t.Logf("%d frames: %d DMA messages (%s)", frames, st.DMAMessages.Load(), st)
	require.NoError(t, s.end())
}

// TestTxByMessages: igbsim transmits a frame whose descriptor and buffer are
// in message-only memory; the descriptor the driver rewrote before the next
// tail write is fetched afresh (no stale descriptor), and DD comes back.
func TestTxByMessages(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	sent := make(wireTap, 8)
	s.m.Attach(sent)
	g := guest{t, s.c}
	mem := make([]byte, msgSize)
	s.c.AddMemory(msgIOVA, mem)
	require.NoError(t, s.c.DMAMap(msgIOVA, msgSize, 0, -1, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x06, 0}))
	g.linkUp()
	g.wr(rTDBAL0, msgIOVA)
	g.wr(rTDBAH0, 0)
	g.wr(rTDLEN0, msgNDesc*16)
	g.wr(rTDH0, 0)
	g.wr(rTDT0, 0)
	g.wr(rTXDCTL0, txdctlEnable)
	g.wr(rTCTL, tctlEN)
	for k := 0; k < 3; k++ {
		f := testFrame(80 + 20*k)
		buf := msgBufs + k*msgBufSz
		copy(mem[buf:], f) // the client's memory, as the guest's driver writes it
		d := mem[16*k:]
		le.PutUint64(d, msgIOVA+uint64(buf))
		le.PutUint32(d[8:], uint32(len(f))|txDtypData|txCmdEOP|txCmdIFCS|txCmdRS|txCmdDEXT)
		le.PutUint32(d[12:], uint32(len(f))<<14)
		g.wr(rTDT0, uint32(k+1))
		require.Eventually(t, func() bool {
			return le.Uint32(s.c.Memory(msgIOVA+uint64(16*k)+12, 4))&txStatusDD != 0
		}, 2*time.Second, time.Millisecond, "frame %d: DD written back to the client", k)
		select {
		case got := <-sent:
			require.Equal(t, f, got, "frame %d sent as the client's memory held it", k)
		case <-time.After(time.Second):
			t.Fatalf("frame %d not sent", k)
		}
	}
	require.NoError(t, s.m.Err(), "no model faults: no descriptor seen stale")
	require.NoError(t, s.end())
}

// TestMessagesClientHoldingItsLock: a client that does not answer DMA_READ
// while it waits for a register read (QEMU's vCPU holds the lock its DMA
// service needs) gets its read answered: the model's access is given up after
// the limit and logged as a fault, instead of both sides waiting for ever.
func TestMessagesClientHoldingItsLock(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	mem := make([]byte, msgSize)
	ev, err := vfiousertest.NewEventfd()
	require.NoError(t, err)
	defer ev.Close()
	g := rxRingByMessages(t, s, mem, ev)
	s.c.HoldDMA(true)
	go s.m.Inject(testFrame(100)) // the wire's goroutine: it waits in the model's RX step
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	g.rd(rSTATUS)
	took := time.Since(start)
	require.Less(t, took, time.Second, "the register read was answered")
	require.Eventually(t, func() bool { return s.stats.DMAGivenUp.Load() > 0 }, time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return s.m.FaultLog().Count() > 0 }, time.Second, time.Millisecond)
	var given bool
	for _, f := range s.m.Faults() {
		given = given || strings.Contains(f.Detail, "given up")
	}
	require.True(t, given, "the fault says why: %v", s.m.Faults())
	s.c.HoldDMA(false) // late replies are dropped by the server
	t.Logf("register read answered after %v", took.Round(time.Millisecond))
	require.NoError(t, s.end())
}

// TestMessagesClientGoneMidDMA: the client disconnects while the session's
// own goroutine waits for a DMA_READ (the descriptor fetch of a posted TDT
// write): the fetch fails and the session ends instead of waiting for ever.
func TestMessagesClientGoneMidDMA(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	g := guest{t, s.c}
	mem := make([]byte, msgSize)
	s.c.AddMemory(msgIOVA, mem)
	require.NoError(t, s.c.DMAMap(msgIOVA, msgSize, 0, -1, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x06, 0}))
	g.linkUp()
	g.wr(rTDBAL0, msgIOVA)
	g.wr(rTDBAH0, 0)
	g.wr(rTDLEN0, msgNDesc*16)
	g.wr(rTDH0, 0)
	g.wr(rTDT0, 0)
	g.wr(rTXDCTL0, txdctlEnable)
	g.wr(rTCTL, tctlEN)
	s.c.HoldDMA(true)
	w := make([]byte, 16+4)
	le.PutUint64(w, rTDT0)
	le.PutUint32(w[8:], 0) // region 0: BAR0
	le.PutUint32(w[12:], 4)
	le.PutUint32(w[16:], 1)
	require.NoError(t, s.c.Send(vfiouser.CmdRegionWrite, w), "a posted TDT write: its fetch waits")
	require.Eventually(t, func() bool { return s.stats.DMAMessages.Load() > 0 }, time.Second, time.Millisecond)
	require.NoError(t, s.end(), "the session ended")
}
