package vfiouser_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
	"golang.org/x/sys/unix"
)

// 82576 registers and bits, transcribed here from the datasheet (section 8),
// not taken from the model.
const (
	rCTRL, rSTATUS, rMDIC, rRCTL    = 0x0000, 0x0008, 0x0020, 0x0100
	rGPIE, rEIMS, rEICR, rIVAR0     = 0x1514, 0x1524, 0x1580, 0x1700
	rRDBAL0, rRDBAH0, rRDLEN0       = 0x2800, 0x2804, 0x2808
	rSRRCTL0, rRDH0, rRDT0, rRXDCTL = 0x280C, 0x2810, 0x2818, 0x2828

	ctrlSLU             = 1 << 6
	statusLU            = 1 << 1
	mdicReady, mdicWrit = 1 << 28, 1 << 26
	rctlEN, rctlSECRC   = 1 << 1, 1 << 26
	gpieMSIX            = 1 << 4
	ivarValid           = 0x80
	srrctlAdvOneBuf     = 1 << 25
	rxdctlEnable        = 1 << 25
	rxStatusDD          = 1 << 0
)

var factoryMAC = []byte{0x02, 0, 0, 0, 0, 0x01} // igbsim's default

// guest plays the guest driver through the client.
type guest struct {
	t *testing.T
	c *vfiousertest.Client
}

func (g guest) rd(off uint32) uint32 {
	v, err := g.c.Read32(off)
	require.NoError(g.t, err)
	return v
}

func (g guest) wr(off, v uint32) { require.NoError(g.t, g.c.Write32(off, v)) }

func (g guest) waitReg(what string, off, mask uint32) {
	g.t.Helper()
	require.Eventually(g.t, func() bool { return g.rd(off)&mask != 0 }, 2*time.Second, 200*time.Microsecond, what)
}

func (g guest) linkUp() {
	g.wr(rCTRL, g.rd(rCTRL)|ctrlSLU)
	g.wr(rMDIC, mdicWrit|1<<21|0<<16|1<<12|1<<9) // PHY 1 BMCR: autoneg enable + restart
	g.waitReg("MDIC ready", rMDIC, mdicReady)
	g.waitReg("STATUS.LU", rSTATUS, statusLU)
}

func testFrame(n int) []byte {
	f := make([]byte, n)
	copy(f, factoryMAC)
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 0x99})
	f[12], f[13] = 0x88, 0xB5 // local experimental ethertype
	for i := 14; i < n; i++ {
		f[i] = byte(i * 7)
	}
	return f
}

// TestGuestRxDMAAndMSIX brings an igbsim RX ring up from the client side, with
// the ring and buffers in a memfd passed by DMA_MAP: a frame injected on the
// model's wire lands in the memfd and fires the MSI-X eventfd. After DMA_UNMAP
// the model's DMA is refused and logged, and the memfd is left untouched.
func TestGuestRxDMAAndMSIX(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	g := guest{t, s.c}
	const (
		iova    = 0x10_0000 // guest physical address of the memfd
		size    = 1 << 20
		ringOff = 0x0
		bufOff  = 0x1000
		nDesc   = 8
		bufSize = 2048
	)
	ram, err := vfiousertest.NewMemfd(size)
	require.NoError(t, err)
	defer ram.Close()
	require.NoError(t, s.c.DMAMap(iova, size, 0, ram.Fd, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	require.Equal(t, unix.EEXIST, errnoOf(s.c.DMAMap(iova+size/2, size, 0, ram.Fd, 3)), "overlap")

	ev, err := vfiousertest.NewEventfd()
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSIX, 0, 1, nil, int(ev)))
	require.Equal(t, 1, s.dev.VectorsEnabled(), "one model vector per eventfd")

	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x06, 0})) // memory + bus master
	g.linkUp()
	for i := 0; i < nDesc; i++ { // advanced RX descriptors, read format: buffer address, header 0
		d := ram.Mem[ringOff+16*i:]
		le.PutUint64(d, iova+bufOff+uint64(i*bufSize))
		le.PutUint64(d[8:], 0)
	}
	g.wr(rRDBAL0, iova+ringOff)
	g.wr(rRDBAH0, 0)
	g.wr(rRDLEN0, nDesc*16)
	g.wr(rSRRCTL0, bufSize/1024|srrctlAdvOneBuf)
	g.wr(rRDH0, 0)
	g.wr(rRDT0, 0)
	g.wr(rRXDCTL, rxdctlEnable)
	g.wr(rRDT0, nDesc-1)
	g.wr(rGPIE, gpieMSIX)
	g.wr(rIVAR0, ivarValid) // RX queue 0 -> vector 0 (byte 0: valid, vector number 0)
	g.wr(rEIMS, 1)
	g.wr(rRCTL, rctlEN|rctlSECRC)

	f := testFrame(200)
	require.True(t, s.m.Inject(f), "model accepts the frame")
	n, err := ev.Wait(2 * time.Second)
	require.NoError(t, err)
	require.NotZero(t, n, "MSI-X vector 0's eventfd fired")
	wb := ram.Mem[ringOff:]
	require.NotZero(t, le.Uint32(wb[8:])&rxStatusDD, "descriptor 0 written back in guest memory")
	require.Equal(t, uint16(len(f)), le.Uint16(wb[12:]), "write-back length")
	require.Equal(t, f, ram.Mem[bufOff:bufOff+len(f)], "frame DMAed into the memfd")
	require.NoError(t, s.m.Err(), "no model faults")

	// Unmap: the next frame's DMA is refused and logged; guest memory unchanged.
	require.NoError(t, s.c.DMAUnmap(iova, size))
	require.Zero(t, s.dev.Memory().Regions(), "the model's memory has no range left")
	before := bytes.Clone(ram.Mem[:bufOff+4*bufSize])
	s.m.Inject(testFrame(100))
	require.Eventually(t, func() bool { return s.m.FaultLog().Count() > 0 }, time.Second, time.Millisecond)
	var iommu bool
	for _, f := range s.m.Faults() {
		iommu = iommu || strings.Contains(f.Detail, "IOMMU fault")
	}
	require.True(t, iommu, "the refused DMA is logged as an IOMMU fault: %v", s.m.Faults())
	require.Equal(t, before, ram.Mem[:bufOff+4*bufSize], "nothing written after the unmap")
	require.NoError(t, s.c.DMAUnmap(iova, size), "an unmap holding no range does nothing, as type1's")
}

func TestDMAMapChecks(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	ram, err := vfiousertest.NewMemfd(1 << 16)
	require.NoError(t, err)
	defer ram.Close()
	dup, err := unix.Dup(ram.Fd)
	require.NoError(t, err)
	defer unix.Close(dup)
	rw := vfiouser.DMAFlagRead | vfiouser.DMAFlagWrite
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAMap(0, 1<<16, 0, -1, 0xF0)), "unknown flags")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAMap(0, 0, 0, ram.Fd, rw)), "empty")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAMap(0, 1<<16, 100, ram.Fd, rw)), "unaligned file offset")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAMap(0, 1<<16, 1<<30, ram.Fd, rw)), "past the end of the file (it would SIGBUS)")
	p := make([]byte, 32)
	le.PutUint32(p, 32)
	le.PutUint32(p[4:], rw)
	le.PutUint64(p[24:], 1<<16)
	_, err = s.c.Call(vfiouser.CmdDMAMap, p, ram.Fd, dup)
	require.Equal(t, unix.EINVAL, errnoOf(err), "two descriptors")
	require.NoError(t, s.c.DMAUnmap(0x5000, 0x1000), "nothing mapped there: nothing to do")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAUnmap(0x5000, 0)), "empty unmap")
	require.Zero(t, s.dev.Memory().Regions())
	require.NoError(t, s.c.DMAMap(0x2000_0000, 1<<16, 0, ram.Fd, rw))
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAUnmap(0x2000_0000, 0x1000)), "an unmap may not cut a mapping")
	require.Equal(t, 1, s.dev.Memory().Regions())

	// A vIOMMU unmaps whole IOTLB spans: every mapping inside goes, gaps are fine.
	require.NoError(t, s.c.DMAMap(0x2001_0000, 0x1000, 0x1000, ram.Fd, rw))
	require.NoError(t, s.c.DMAMap(0x2004_0000, 0x2000, 0, ram.Fd, rw))
	require.NoError(t, s.c.DMAMap(0x3000_0000, 0x1000, 0, -1, rw))
	require.Equal(t, 4, s.dev.Memory().Regions(), "the message-only range is the model's too (a mirror)")
	require.NoError(t, s.c.DMAUnmap(0x2000_0000, 0x10_0000))
	require.Equal(t, 1, s.dev.Memory().Regions(), "three mappings in one unmap; the message-only one is outside")
	require.NoError(t, s.c.DMAMap(0x2000_0000, 1<<16, 0, ram.Fd, rw), "the range is free again")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAUnmapFlags(0x2000_0000, 1<<16, vfiouser.DMAUnmapFlagAll)), "unmap-all takes address and size 0")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAUnmapFlags(0, 0, 1)), "dirty bitmaps are not supported")
	require.NoError(t, s.c.DMAMap(0xFEF0_0000, 0x1000, 0, ram.Fd, rw))
	require.NoError(t, s.c.DMAUnmap(0xFEF0_0000, 0xFFFF_FFFF_0110_0000), "an unmap up to 2^64 (QEMU's intel-iommu sends one)")
	require.Equal(t, 2, s.dev.Memory().Regions(), "it took the range at 0xFEF00000 only")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.DMAUnmap(0xFEF0_0000, 0xFFFF_FFFF_0110_0001)), "past 2^64")
	require.NoError(t, s.c.DMAUnmapFlags(0, 0, vfiouser.DMAUnmapFlagAll))
	require.Zero(t, s.dev.Memory().Regions())
	require.NoError(t, s.c.DMAMap(0x3000_0000, 0x1000, 0, -1, rw), "the message-only range went too")
}

// TestDMAByMessages maps memory without a descriptor: the server reaches it
// with DMA_READ and DMA_WRITE, split at the client's max_data_xfer_size, and
// the model's own View fetches what it returns with DMA_READ.
func TestDMAByMessages(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{})
	require.NoError(t, err)
	defer m.Close()
	sc, cc, err := vfiousertest.Pair()
	require.NoError(t, err)
	sess, err := vfiouser.NewSession(sc, m.SimDevice(), vfiouser.Options{})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- sess.Run(context.Background()) }()
	c := vfiousertest.New(cc)
	_, _, err = c.Version(0, map[string]any{"max_data_xfer_size": 4096})
	require.NoError(t, err)

	guestMem := make([]byte, 3*4096)
	c.AddMemory(0x8000, guestMem)
	require.NoError(t, c.DMAMap(0x8000, uint64(len(guestMem)), 0, -1, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	src := make([]byte, 10000)
	for i := range src {
		src[i] = byte(i * 13)
	}
	require.NoError(t, sess.WriteGuest(0x8000+100, src))
	require.Equal(t, src, c.Memory(0x8000+100, len(src)))
	require.Equal(t, 3, c.Served(), "10000 bytes in 4096-byte messages")
	got := make([]byte, 5000)
	require.NoError(t, sess.ReadGuest(0x8000+200, got))
	require.Equal(t, src[100:5100], got)
	require.Equal(t, 5, c.Served())

	require.ErrorIs(t, sess.ReadGuest(0x8000+12000, got), dma.ErrNotMapped, "past the mapped range")
	require.Equal(t, 1, m.FaultLog().Count(), "logged in the model's fault log")
	served := c.Served()
	require.NoError(t, m.Device().EnableBusMaster())
	v, err := m.Memory().View("rx-buffer", 0x8000+100, 64)
	require.NoError(t, err, "the model reaches a message-only range through its mirror")
	require.Equal(t, src[:64], v)
	require.Equal(t, served+1, c.Served(), "one DMA_READ for the view")
	_, err = m.Memory().View("rx-buffer", 0x8000+3*4096-8, 64)
	require.ErrorIs(t, err, dma.ErrNotMapped, "past the range: refused")
	require.Equal(t, served+1, c.Served(), "without asking the client")

	c.Close()
	require.NoError(t, <-errc)
	require.Error(t, sess.ReadGuest(0x8000, got), "no guest access after the session ended")
}

// TestIRQForwarding drives the model's interrupt signal (sim.Device.Signal, as
// the models raise it) and checks what reaches the eventfds: INTx automasks and
// re-fires on unmask, MSI-X masks hold a signal pending (and show in the PBA),
// and only one index may be active.
func TestIRQForwarding(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	intx, err := vfiousertest.NewEventfd()
	require.NoError(t, err)
	defer intx.Close()
	trig := vfiouser.IRQSetDataEventfd | vfiouser.IRQSetActionTrigger
	require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQIntx, 0, 1, nil, int(intx)))
	require.Equal(t, 1, s.dev.VectorsEnabled())

	waitFired := func(e vfiousertest.Eventfd, want bool, what string) {
		t.Helper()
		timeout := 2 * time.Second
		if !want {
			timeout = 30 * time.Millisecond
		}
		n, err := e.Wait(timeout)
		require.NoError(t, err)
		require.Equal(t, want, n != 0, what)
	}
	require.True(t, s.dev.Signal(0))
	waitFired(intx, true, "INTx fires")
	require.True(t, s.dev.Signal(0))
	waitFired(intx, false, "INTx is automasked after firing")
	unmask := vfiouser.IRQSetDataNone | vfiouser.IRQSetActionUnmask
	require.NoError(t, s.c.SetIRQs(unmask, vfiouser.IRQIntx, 0, 1, nil))
	waitFired(intx, true, "the unmask delivers the held signal")
	require.NoError(t, s.c.SetIRQs(unmask, vfiouser.IRQIntx, 0, 1, nil))
	waitFired(intx, false, "nothing more was pending")

	// The command register's Interrupt Disable holds INTx back (PCI 3.0, 6.2.2).
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x02, 0x04}))
	require.True(t, s.dev.Signal(0))
	waitFired(intx, false, "INTx disabled in the command register")
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x02, 0x00}))
	waitFired(intx, true, "clearing the disable delivers it")
	require.NoError(t, s.c.SetIRQs(unmask, vfiouser.IRQIntx, 0, 1, nil))

	// One index at a time.
	msix := make([]vfiousertest.Eventfd, 3)
	fds := make([]int, 3)
	for i := range msix {
		msix[i], err = vfiousertest.NewEventfd()
		require.NoError(t, err)
		defer msix[i].Close()
		fds[i] = int(msix[i])
	}
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(trig, vfiouser.IRQMSIX, 0, 3, nil, fds...)), "INTx is active")
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataNone|vfiouser.IRQSetActionTrigger, vfiouser.IRQIntx, 0, 0, nil), "disable INTx")
	require.Zero(t, s.dev.VectorsEnabled())
	require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQMSIX, 0, 3, nil, fds...))
	require.Equal(t, 3, s.dev.VectorsEnabled())

	require.True(t, s.dev.Signal(2))
	waitFired(msix[2], true, "vector 2 -> its eventfd")
	waitFired(msix[0], false, "not vector 0")
	require.False(t, s.dev.Signal(3), "vector 3 has no eventfd: not enabled on the model")

	mask := vfiouser.IRQSetDataBool | vfiouser.IRQSetActionMask
	require.NoError(t, s.c.SetIRQs(mask, vfiouser.IRQMSIX, 0, 3, []byte{0, 1, 0}))
	require.True(t, s.dev.Signal(1))
	waitFired(msix[1], false, "masked")
	require.Eventually(t, func() bool {
		pba, err := s.c.ReadRegion(vfiouser.MSIXBAR, 0x2000, 4)
		return err == nil && pba[0] == 0x2
	}, time.Second, time.Millisecond, "PBA shows vector 1 pending")
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataNone|vfiouser.IRQSetActionUnmask, vfiouser.IRQMSIX, 1, 1, nil))
	waitFired(msix[1], true, "unmask delivers")

	// The client triggers a vector itself.
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataBool|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSIX, 0, 2, []byte{1, 0}))
	waitFired(msix[0], true, "client trigger")

	// De-assign by SET_IRQS with DATA_EVENTFD and no descriptors.
	require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQMSIX, 1, 2, nil))
	require.Equal(t, 1, s.dev.VectorsEnabled(), "only vector 0 keeps an eventfd")

	// Malformed sets.
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(trig, vfiouser.IRQMSIX, 24, 2, nil)), "past the 25 vectors")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(trig|vfiouser.IRQSetDataBool, vfiouser.IRQMSIX, 0, 1, []byte{1})), "two data flags")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(vfiouser.IRQSetDataNone|vfiouser.IRQSetActionTrigger, vfiouser.IRQErr, 0, 1, nil)), "ERR takes eventfds only")
	require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQErr, 0, 1, nil, int(msix[0])), "QEMU's error notifier")
	require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQReq, 0, 1, nil, int(msix[1])), "QEMU's request notifier")
	require.Equal(t, 1, s.dev.VectorsEnabled(), "notifications take no model vector")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(trig, vfiouser.IRQMSIX, 0, 2, nil, fds[0])), "1 eventfd for count 2")
	require.Equal(t, unix.ENOTSUP, errnoOf(s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionUnmask, vfiouser.IRQIntx, 0, 1, nil, fds[0])), "unmask eventfds (KVM resamplefd)")
}

// TestSessionClosesEveryDescriptor runs a session that keeps descriptors (a
// mapped memfd, eventfds), disconnects without cleaning up, and checks the
// process has as many descriptors open as before.
func TestSessionClosesEveryDescriptor(t *testing.T) {
	before := openFds(t)
	func() {
		s := negotiated(t, igbsim.Config{})
		ram, err := vfiousertest.NewMemfd(1 << 16)
		require.NoError(t, err)
		defer ram.Close()
		require.NoError(t, s.c.DMAMap(0x10000, 1<<16, 0, ram.Fd, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
		require.NoError(t, s.c.DMAMap(0x40000, 1<<12, 0, -1, vfiouser.DMAFlagRead))
		var evs []int
		for i := 0; i < 4; i++ {
			e, err := vfiousertest.NewEventfd()
			require.NoError(t, err)
			defer e.Close()
			evs = append(evs, int(e))
		}
		trig := vfiouser.IRQSetDataEventfd | vfiouser.IRQSetActionTrigger
		require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQMSIX, 0, 4, nil, evs...))
		require.NoError(t, s.c.SetIRQs(trig, vfiouser.IRQMSIX, 0, 2, nil, evs[:2]...), "replacing closes the old ones")
		require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(trig, vfiouser.IRQMSIX, 30, 1, nil, evs[0])), "refused: its descriptor is closed too")
		require.Less(t, before, openFds(t), "the server holds descriptors now")
		require.NoError(t, s.end())
		require.Zero(t, s.dev.VectorsEnabled(), "the model's vectors are torn down")
		require.Zero(t, s.dev.Memory().Regions(), "the model's memory has no range left")
	}()
	require.Eventually(t, func() bool { return openFds(t) == before }, 2*time.Second, time.Millisecond,
		"descriptors open: %d before, now %d", before, openFds(t))
}

func TestMSIForwarding(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	ev, err := vfiousertest.NewEventfd()
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSI, 0, 1, nil, int(ev)))
	require.Equal(t, 1, s.dev.VectorsEnabled(), "MSI: one model vector")
	require.True(t, s.dev.Signal(0))
	n, err := ev.Wait(2 * time.Second)
	require.NoError(t, err)
	require.Equal(t, uint64(1), n)
	require.False(t, s.dev.Signal(1), "one MSI message: the model's vector 1 is not enabled")
	require.True(t, s.dev.Signal(0))
	n, err = ev.Wait(2 * time.Second)
	require.NoError(t, err)
	require.Equal(t, uint64(1), n, "MSI is not automasked")
	require.Equal(t, unix.EINVAL, errnoOf(s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSI, 0, 2, nil)), "MSI has one vector")
}

// TestUnmapWhileViewHeld: a device access still holding a view of guest memory
// when DMA_UNMAP arrives (a frame the wire is sending) reads zeros afterwards
// and cannot reach the guest's memory any more; nothing faults in the process.
func TestUnmapWhileViewHeld(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	ram, err := vfiousertest.NewMemfd(1 << 16)
	require.NoError(t, err)
	defer ram.Close()
	copy(ram.Mem, "guest data")
	require.NoError(t, s.c.DMAMap(0x4000_0000, 1<<16, 0, ram.Fd, vfiouser.DMAFlagRead|vfiouser.DMAFlagWrite))
	require.NoError(t, s.dev.EnableBusMaster())
	v, err := s.dev.Memory().View("tx-buffer", 0x4000_0000, 64)
	require.NoError(t, err)
	require.Equal(t, "guest data", string(v[:10]))
	require.NoError(t, s.c.DMAUnmap(0x4000_0000, 1<<16))
	require.Equal(t, make([]byte, 64), bytes.Clone(v), "the stale view reads zeros")
	v[0] = 'X'
	require.Equal(t, "guest data", string(ram.Mem[:10]), "and writes through it miss the guest")
	require.NoError(t, s.end())
}
