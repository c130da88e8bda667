package igbsim

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

func TestRxDMAAndStats(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(tRctlBAM)

	f := frame(factoryMAC, 100)
	require.True(t, r.m.Inject(f))
	status, length, _, _ := rx.desc(0)
	require.Equal(t, uint32(0x3), status&0x3, "DD and EOP")
	require.Equal(t, uint32(100), length)
	require.Equal(t, f, rx.buf(0, 100))
	require.Equal(t, uint32(1), r.Rd(tRDBAL(0)+0x10), "RDH advanced")

	require.True(t, r.m.Inject(frame(bcastMAC, 60)))
	require.False(t, r.m.Inject(frame([6]byte{0x02, 9, 9, 9, 9, 9}, 60)), "foreign unicast filtered")
	require.False(t, r.m.Inject(frame([6]byte{0x01, 0, 0x5E, 0, 0, 1}, 60)), "multicast without MPE or MTA bit")

	require.Equal(t, uint32(2), r.Rd(tGPRC))
	require.Equal(t, uint32(0), r.Rd(tGPRC), "clear on read")
	require.Equal(t, uint32(1), r.Rd(tBPRC))
	require.Equal(t, uint32(2), r.Rd(tTPR), "filtered frames are not counted")
	require.Equal(t, uint32(104+64), r.Rd(tGORCL), "octets include the FCS")
	require.Equal(t, uint32(0), r.Rd(tGORCH))
	require.Equal(t, uint32(0), r.Rd(tGORCL), "reading the high half cleared both")
	c := r.m.Counters()
	require.Equal(t, uint64(2), c.RxFrames)
	require.Equal(t, uint64(2), c.RxFiltered)
	require.NoError(t, r.m.Err())
}

func TestRxFilterModes(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 32, 2)
	r.Wr(tRDBAL(0)+0x18, 31)
	mc := [6]byte{0x01, 0x00, 0x5E, 0x7F, 0x12, 0x34}
	other := [6]byte{0x02, 1, 2, 3, 4, 5}

	r.enableRx(0)
	require.False(t, r.m.Inject(frame(bcastMAC, 60)), "broadcast needs BAM")
	// MTA, multicast offset 0: hash = address bits 47:36.
	h := (uint32(mc[5])<<8 | uint32(mc[4])) >> 4 & 0xFFF
	r.Wr(tMTA+4*(h>>5), 1<<(h&31))
	require.True(t, r.m.Inject(frame(mc, 60)), "multicast whose MTA bit is set")
	r.Wr(tMTA+4*(h>>5), 0)
	require.False(t, r.m.Inject(frame(mc, 60)))
	r.enableRx(tRctlMPE)
	require.True(t, r.m.Inject(frame(mc, 60)), "MPE accepts all multicast")
	require.False(t, r.m.Inject(frame(other, 60)))
	// A second receive address.
	r.Wr(tRAL0+8, 0x03020102)
	r.Wr(tRAH0+8, 0x0504|tRahAV)
	require.True(t, r.m.Inject(frame(other, 60)), "RAL/RAH(1) match")
	r.Wr(tRAH0+8, 0x0504)
	require.False(t, r.m.Inject(frame(other, 60)), "without AV the entry does not match")
	r.enableRx(tRctlUPE)
	require.True(t, r.m.Inject(frame(other, 60)), "UPE accepts everything")
	require.Equal(t, uint32(2), r.Rd(tMPRC), "two multicast frames: one by MTA, one by MPE")
	require.Equal(t, uint32(4), r.Rd(tGPRC))
	_ = rx
	require.NoError(t, r.m.Err())
}

func TestRxWrapAndRefill(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	const n = 8
	rx := r.setupRx(0, n, 2)
	r.enableRx(0)
	tail := n - 1
	r.Wr(tRDBAL(0)+0x18, uint32(tail))
	next := 0 // next descriptor software looks at
	for k := 0; k < 3*n+3; k++ {
		f := frame(factoryMAC, 60+k)
		require.True(t, r.m.Inject(f), "frame %d", k)
		status, length, _, _ := rx.desc(next)
		require.Equal(t, uint32(3), status&3)
		require.Equal(t, uint32(len(f)), length)
		require.Equal(t, f, rx.buf(next, len(f)))
		// Software takes the descriptor, reposts it, and gives it back by moving
		// the tail onto it.
		rx.post(next)
		r.Wr(tRDBAL(0)+0x18, uint32(next))
		next = (next + 1) % n
	}
	require.Equal(t, uint32(next), r.Rd(tRDBAL(0)+0x10), "RDH wrapped around the ring")
	require.Equal(t, uint32(0), r.Rd(tMPC))
	require.NoError(t, r.m.Err())
}

// A frame that finds no descriptor waits in the packet buffer (RNBC counts
// it), goes to the ring when RDT hands descriptors over, and only a frame the
// full packet buffer cannot take is dropped: MPC alone (82576 datasheet 8.19:
// RQDPC counts only DROP_EN drops). The default 64 KB RXPBS holds 910 frames
// of 64 bytes (72 with the FCS, in 8-byte words).
func TestRxNoDescriptorWaitsInPacketBuffer(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.enableRx(0)
	first := frame(factoryMAC, 64)
	require.True(t, r.m.Inject(first), "RDH == RDT: the frame waits in the packet buffer")
	status, _, _, _ := rx.desc(0)
	require.Zero(t, status&1, "nothing written back")
	require.Equal(t, 1, r.m.RxHeld())
	require.Equal(t, uint32(1), r.Rd(tRNBC))
	r.Wr(tRDBAL(0)+0x18, 2) // two descriptors: the waiting frame takes the first
	require.Equal(t, 0, r.m.RxHeld())
	status, length, _, _ := rx.desc(0)
	require.Equal(t, uint32(3), status&3)
	require.Equal(t, first, rx.buf(0, int(length)))
	require.True(t, r.m.Inject(frame(factoryMAC, 64)))
	held := 0
	for r.m.Inject(frame(factoryMAC, 64)) {
		held++
		require.Less(t, held, 2000, "the packet buffer never fills")
	}
	require.Equal(t, (64<<10)/72, held, "64 KB of 72-byte frames")
	require.Equal(t, uint32(1), r.Rd(tMPC), "the one frame the full buffer refused")
	require.Equal(t, uint32(0), r.Rd(tMPC), "clear on read")
	require.Equal(t, uint32(0), r.Rd(0xC030), "RQDPC(0): DROP_EN is clear")
	require.Equal(t, uint32(2), r.Rd(tGPRC))
	// Seven more descriptors (2-7 and a reposted 0): seven frames drain.
	rx.post(0)
	r.Wr(tRDBAL(0)+0x18, 1)
	require.Equal(t, held-7, r.m.RxHeld(), "seven more descriptors took seven frames")
	r.m.Reset()
	require.Equal(t, 0, r.m.RxHeld(), "a reset empties the packet buffer")
	require.NoError(t, r.m.Err())
}

// With SRRCTL.DROP_EN a frame for a queue without descriptors is dropped at
// once and counted in that queue's RQDPC, not MPC; a disabled queue's frames
// count in MPC.
func TestRxDropEnCountsRQDPC(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x28, 0)
	r.Wr(tRDBAL(0)+0x0C, 2|tSrrctlAdv|1<<31)
	r.Wr(tRDBAL(0)+0x28, tDctlEnable)
	r.enableRx(0)
	require.False(t, r.m.Inject(frame(factoryMAC, 64)), "no descriptor, DROP_EN: dropped")
	require.False(t, r.m.Inject(frame(factoryMAC, 64)))
	require.Equal(t, 0, r.m.RxHeld())
	require.Equal(t, uint32(2), r.Rd(0xC030), "RQDPC(0)")
	require.Equal(t, uint32(0), r.Rd(tMPC), "MPC does not count DROP_EN drops")
	require.Equal(t, uint32(2), r.Rd(tRNBC))

	r.Wr(tRDBAL(0)+0x28, 0) // a disabled queue receives nothing
	r.Wr(tRDBAL(0)+0x18, 5)
	require.False(t, r.m.Inject(frame(factoryMAC, 64)))
	require.Equal(t, uint32(1), r.Rd(tMPC))
	require.NoError(t, r.m.Err())
}

func TestRxSizeLimitsAndSplit(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 16, 1)
	r.Wr(tRDBAL(0)+0x18, 15)
	r.enableRx(0)
	require.False(t, r.m.Inject(frame(factoryMAC, 40)), "undersize")
	require.Equal(t, uint32(1), r.Rd(tRUC))
	require.False(t, r.m.Inject(frame(factoryMAC, 1519)), "oversize without LPE")
	require.Equal(t, uint32(1), r.Rd(tROC))
	require.True(t, r.m.Inject(frame(factoryMAC, 1518)))

	r.enableRx(tRctlLPE)
	r.Wr(tRLPML, 9018+4)
	big := frame(factoryMAC, 2500)
	require.True(t, r.m.Inject(big))
	// 1518 bytes took descriptors 0-1; the 2500-byte frame takes 2, 3, 4.
	var got []byte
	for i := 2; i <= 4; i++ {
		status, length, _, _ := rx.desc(i)
		require.NotZero(t, status&1, "DD on every descriptor")
		require.Equal(t, i == 4, status&2 != 0, "EOP only on the last")
		got = append(got, rx.buf(i, int(length))...)
	}
	require.Equal(t, big, got)
	require.False(t, r.m.Inject(frame(factoryMAC, 9019)), "over RLPML")
	r.m.InjectBadFCS(frame(factoryMAC, 64))
	require.Equal(t, uint32(1), r.Rd(tCRC), "CRCERRS")
	require.Equal(t, uint32(0), r.Rd(tCRC), "clear on read")
	require.NoError(t, r.m.Err())
}

func TestRxKeepsFCSWithoutSECRC(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.Wr(tRCTL, tRctlEN) // no SECRC
	f := frame(factoryMAC, 60)
	require.True(t, r.m.Inject(f))
	_, length, _, _ := rx.desc(0)
	require.Equal(t, uint32(64), length)
	require.Equal(t, crc32.ChecksumIEEE(f), le.Uint32(rx.buf(0, 64)[60:]), "the FCS follows the frame")
	require.NoError(t, r.m.Err())
}

func TestRxStrictDMA(t *testing.T) {
	t.Run("buffer outside mapped memory", func(t *testing.T) {
		r := newRig(t, testCfg())
		r.linkUp()
		rx := r.setupRx(0, 8, 2)
		le.PutUint64(rx.ring.CPU[0:], 0x1000) // not mapped
		r.Wr(tRDBAL(0)+0x18, 7)
		r.enableRx(0)
		require.False(t, r.m.Inject(frame(factoryMAC, 60)))
		require.Equal(t, 1, r.m.FaultLog().Count())
		require.Equal(t, "rx-buffer", r.m.Faults()[0].Op)
	})
	t.Run("buffer truncated to 32 bits", func(t *testing.T) {
		r := newRig(t, testCfg())
		r.linkUp()
		rx := r.setupRx(0, 8, 2)
		le.PutUint64(rx.ring.CPU[0:], rx.bufs.IOVA&0xFFFFFFFF)
		r.Wr(tRDBAL(0)+0x18, 7)
		r.enableRx(0)
		require.False(t, r.m.Inject(frame(factoryMAC, 60)))
		require.Equal(t, 1, r.m.FaultLog().Count())
	})
	t.Run("bus mastering off", func(t *testing.T) {
		r := newRig(t, testCfg())
		r.linkUp()
		r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(0)+0x18, 7)
		r.enableRx(0)
		require.NoError(t, r.m.Device().WriteConfig(4, 2, 0x2)) // memory on, bus master off
		require.False(t, r.m.Inject(frame(factoryMAC, 60)))
		require.Equal(t, 1, r.m.FaultLog().Count())
	})
	t.Run("link down drops without fault", func(t *testing.T) {
		r := newRig(t, testCfg())
		r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(0)+0x18, 7)
		r.enableRx(0)
		require.False(t, r.m.Inject(frame(factoryMAC, 60)))
		require.Equal(t, uint64(1), r.m.Counters().RxNoLink)
		require.NoError(t, r.m.Err())
	})
}

func TestRxNonCoherent(t *testing.T) {
	cfg := testCfg()
	cfg.NonCoherent = true
	r := newRig(t, cfg)
	r.linkUp()
	rx := r.setupRx(0, 8, 2) // syncs the ring for the device
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(0)
	f := frame(factoryMAC, 80)
	require.True(t, r.m.Inject(f))
	status, _, _, _ := rx.desc(0)
	require.Zero(t, status, "the CPU sees nothing before Sync(ForCPU)")
	r.A.Sync(rx.ring, 0, 16, dma.ForCPU)
	r.A.Sync(rx.bufs, 0, 80, dma.ForCPU)
	status, length, _, _ := rx.desc(0)
	require.Equal(t, uint32(3), status&3)
	require.Equal(t, uint32(80), length)
	require.Equal(t, f, rx.buf(0, 80))

	// Repost descriptor 1 with a new buffer address but forget Sync(ForDevice):
	// the device still sees the old one (a stale descriptor).
	rx.post(1)
	le.PutUint64(rx.ring.CPU[16:], 0x42)
	require.True(t, r.m.Inject(f), "the device used the stale, valid address")
	require.NoError(t, r.m.Err())
	r.A.Sync(rx.ring, 16*2, 16, dma.ForDevice) // descriptor 2 synced with garbage
	le.PutUint64(rx.ring.CPU[32:], 0x42)
	r.A.Sync(rx.ring, 32, 16, dma.ForDevice)
	require.False(t, r.m.Inject(f))
	// Two faults: descriptor 2 changed after RDT handed it over, and its
	// synced bad address.
	require.Equal(t, 2, r.m.FaultLog().Count(), "the synced bad address faults")
	require.Contains(t, r.m.Faults()[0].Detail, "changed after the RDT write")
}

// A driver polling a non-coherent ring with Sync(ForCPU) while frames arrive on
// another goroutine: Sync is ordered with the device's writes (run with -race).
func TestRxNonCoherentConcurrentSync(t *testing.T) {
	cfg := testCfg()
	cfg.NonCoherent = true
	r := newRig(t, cfg)
	r.linkUp()
	const n = 64
	rx := r.setupRx(0, n, 2)
	r.Wr(tRDBAL(0)+0x18, n-1)
	r.enableRx(0)
	done := make(chan int)
	go func() {
		k := 0
		for i := 0; i < n-1; i++ {
			if r.m.Inject(frame(factoryMAC, 60+i)) {
				k++
			}
		}
		done <- k
	}()
	seen := 0
	deadline := time.Now().Add(5 * time.Second)
	for seen < n-1 && time.Now().Before(deadline) {
		r.A.Sync(rx.ring, seen*16, 16, dma.ForCPU)
		status, length, _, _ := rx.desc(seen)
		if status&1 == 0 {
			continue
		}
		r.A.Sync(rx.bufs, seen*rx.bsize, int(length), dma.ForCPU)
		require.Equal(t, frame(factoryMAC, 60+seen), rx.buf(seen, int(length)))
		seen++
	}
	require.Equal(t, n-1, <-done)
	require.Equal(t, n-1, seen)
	require.NoError(t, r.m.Err())
}

// TestInjectBurstMatchesInject: a burst does what the same frames injected one
// by one do: the same frames accepted, the same bytes in buffers and
// write-backs, the same statistics, counters and faults (a descriptor whose
// buffer is unmapped, a runt, a ring that fills up mid-burst).
func TestInjectBurstMatchesInject(t *testing.T) {
	frames := [][]byte{frame(factoryMAC, 64), frame(factoryMAC, 20), frame(factoryMAC, 1514),
		frame(factoryMAC, 60), frame(factoryMAC, 100), frame(factoryMAC, 64), frame(factoryMAC, 64), frame(factoryMAC, 64)}
	type result struct {
		accepted int
		ring     []byte
		bufs     []byte
		stats    []uint32
		cnt      Counters
		faults   []string
	}
	run := func(burst, badDesc bool) result {
		r := newRig(t, testCfg())
		r.linkUp()
		rx := r.setupRx(0, 8, 2)
		if badDesc {
			le.PutUint64(rx.ring.CPU[3*16:], 0x1000) // descriptor 3: buffer not mapped
		}
		r.Wr(tRDBAL(0)+0x28, 0)
		r.Wr(tRDBAL(0)+0x0C, 2|tSrrctlAdv|1<<31) // DROP_EN: no waiting in the packet buffer
		r.Wr(tRDBAL(0)+0x28, tDctlEnable)
		r.Wr(tRDBAL(0)+0x18, 6) // six descriptors for eight frames
		r.enableRx(0)
		var res result
		if burst {
			res.accepted = r.m.InjectBurst(frames)
		} else {
			for _, f := range frames {
				if r.m.Inject(f) {
					res.accepted++
				}
			}
		}
		res.ring = bytes.Clone(rx.ring.CPU)
		res.bufs = bytes.Clone(rx.bufs.CPU)
		for _, off := range []uint32{tGPRC, tMPC, tRNBC, tRUC, tTPR, 0xC030} {
			res.stats = append(res.stats, r.Rd(off))
		}
		res.cnt = r.m.Counters()
		for _, f := range r.m.Faults() {
			res.faults = append(res.faults, f.Op)
		}
		return res
	}
	full, fullBurst := run(false, false), run(true, false)
	require.Equal(t, full, fullBurst)
	require.Equal(t, 6, full.accepted, "seven good frames for six descriptors: the ring fills up")
	require.NotZero(t, full.cnt.RxMissed)
	require.Empty(t, full.faults)

	one, burst := run(false, true), run(true, true)
	require.Equal(t, one, burst)
	require.NotEmpty(t, one.faults, "the unmapped buffer faults in both")
	for _, op := range one.faults {
		require.Equal(t, "rx-buffer", op)
	}
	require.NotZero(t, one.cnt.RxMissed, "frames missed")
	require.NotZero(t, one.cnt.RxFrames)
}
