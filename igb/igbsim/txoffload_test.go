package igbsim

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test's own transcription of the offload fields (82576/I210 datasheet
// 7.2.2.2-7.2.2.3), not the model's constants.
const (
	tTxTSTAMP               = 1 << 19 // data cmd_type_len: MAC.TSTAMP
	tPoptsIXSM, tPoptsTXSM  = 1 << 8, 1 << 9
	tTucmdIPv4, tTucmdL4TCP = 1 << 10, 1 << 11
	tTucmdSCTP              = 2 << 11
	tTSYNCTXCTL, tTXSTMPL   = 0xB614, 0xB618
	tTXSTMPH                = 0xB61C
	tTsyncTxEN, tTsyncTxVal = 1 << 4, 1 << 0
	tTQAVCTRL, tTQAVCC0     = 0x3570, 0x3004
	tQavMode, tQavTIM       = 1 << 0, 1 << 9
	tQueueModeSR            = 1 << 31
)

// csumFrame is an IPv4 or IPv6, TCP or UDP frame with a pseudo-header sum in
// its checksum field (CHECKSUM_PARTIAL), and where its L4 header starts.
func csumFrame(v6, tcp bool, payload int) (f []byte, start, field int) {
	l4 := 8
	proto := byte(17)
	field = 6
	if tcp {
		l4, proto, field = 20, 6, 16
	}
	ip := 20
	if v6 {
		ip = 40
	}
	f = make([]byte, 14+ip+l4+payload)
	copy(f, factoryMAC[:])
	f[6] = 0x02
	start = 14 + ip
	seg := len(f) - start
	var pseudo uint32
	if v6 {
		f[12], f[13] = 0x86, 0xDD
		f[14] = 0x60
		binary.BigEndian.PutUint16(f[18:], uint16(seg))
		f[20], f[21] = proto, 64
		for i := 22; i < 54; i++ {
			f[i] = byte(i * 7)
		}
		pseudo = sum(f[22:54])
	} else {
		f[12], f[13] = 0x08, 0x00
		f[14] = 0x45
		binary.BigEndian.PutUint16(f[16:], uint16(ip+seg))
		f[22], f[23] = 64, proto
		copy(f[26:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		pseudo = sum(f[26:34])
	}
	for i := start + field + 2; i < len(f); i++ {
		f[i] = byte(i*13 + 5)
	}
	if tcp {
		f[start+12] = 5 << 4
	} else {
		binary.BigEndian.PutUint16(f[start+4:], uint16(seg))
	}
	binary.BigEndian.PutUint16(f[start+field:], fold16(pseudo+uint32(proto)+uint32(seg)))
	return f, start, field
}

func sum(b []byte) uint32 {
	var s uint32
	for i := 0; i < len(b); i += 2 {
		s += uint32(b[i]) << 8
		if i+1 < len(b) {
			s += uint32(b[i+1])
		}
	}
	return s
}

func fold16(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// l4Valid checks a frame's L4 checksum the way a receiver does: pseudo-header
// plus segment sum to 0xffff.
func l4Valid(f []byte, v6 bool, proto byte, start int) bool {
	p := sum(f[26:34])
	if v6 {
		p = sum(f[22:54])
	}
	seg := f[start:]
	return fold16(p+uint32(proto)+uint32(len(seg))+sum(seg)) == 0xffff
}

// ctxDesc writes a context descriptor at ring index i.
func (tx *txRing) ctxDesc(i int, mac, ip int, launch, tucmd, idx uint32) {
	d := tx.ring.CPU[i*16:]
	le.PutUint32(d[0:], uint32(mac)<<9|uint32(ip))
	le.PutUint32(d[4:], launch)
	le.PutUint32(d[8:], tTxDtypCtxt|tTxDEXT|tucmd)
	le.PutUint32(d[12:], idx<<4)
}

// putCtx puts a context descriptor at the tail and moves it.
func (tx *txRing) putCtx(mac, ip int, launch, tucmd, idx uint32) {
	tx.ctxDesc(tx.tail, mac, ip, launch, tucmd, idx)
	tx.tail = (tx.tail + 1) % tx.n
}

// putOff puts frame as one data descriptor with extra cmd and olinfo bits.
func (tx *txRing) putOff(frame []byte, cmd, olinfo uint32) int {
	i := tx.put(frame)
	d := tx.ring.CPU[i*16:]
	le.PutUint32(d[8:], le.Uint32(d[8:])|cmd)
	le.PutUint32(d[12:], le.Uint32(d[12:])|olinfo)
	return i
}

func (r *rig) kick(tx *txRing) { r.Wr(tTDBAL(tx.q)+0x18, uint32(tx.tail)) }

func TestTxChecksumAtContextOffsets(t *testing.T) {
	r, tx, c := txRig(t)
	udp4, s4, _ := csumFrame(false, false, 101)
	tcp6, s6, _ := csumFrame(true, true, 300)
	tx.putCtx(14, s4-14, 0, tTucmdIPv4, 0)
	i := tx.putOff(udp4, 0, tPoptsTXSM)
	tx.putCtx(14, s6-14, 0, tTucmdL4TCP, 1)
	tx.putOff(tcp6, 0, tPoptsTXSM|1<<4)
	tx.putOff(udp4, 0, tPoptsTXSM) // slot 0 still holds the UDP context
	r.kick(tx)
	got := c.got()
	require.Len(t, got, 3)
	require.True(t, l4Valid(got[0], false, 17, s4), "UDP/IPv4 checksum")
	require.True(t, l4Valid(got[1], true, 6, s6), "TCP/IPv6 checksum")
	require.Equal(t, got[0], got[2], "the slot kept its context")
	require.False(t, l4Valid(udp4, false, 17, s4), "the request itself is unfinished")
	require.Equal(t, udp4, tx.bufs.CPU[i*txBufSize:i*txBufSize+len(udp4)], "the buffer is not written")
	for k := range got[0] {
		if k != s4+6 && k != s4+7 {
			require.Equal(t, udp4[k], got[0][k], "only the checksum field changes (byte %d)", k)
		}
	}
	// Without TXSM the frame leaves as it is, context or not.
	tx.putCtx(14, s4-14, 0, 0, 0)
	tx.put(udp4)
	r.kick(tx)
	require.Equal(t, udp4, c.got()[3])
	require.NoError(t, r.m.Err())
}

// TestTxTimestampLatch: MAC.TSTAMP latches the departure time in
// TXSTMPL/H, in the I210's format and in the I350's (ptp_82580.go).
func TestTxTimestampLatch(t *testing.T) {
	for _, v := range []struct {
		dev    uint16
		systim func(r *rig) int64
		decode func(hi, lo uint32) int64
	}{
		{0x1533, (*rig).systim, func(hi, lo uint32) int64 { return int64(hi)*1e9 + int64(lo) }},
		{0x1521, (*rig).systim40, func(hi, lo uint32) int64 { return int64(hi)<<32 | int64(lo) }},
	} {
		cfg := testCfg()
		cfg.DeviceID = v.dev
		r, tx, c := txRigCfg(t, cfg)
		r.Wr(tTSYNCTXCTL, tTsyncTxEN)
		f := frame(factoryMAC, 80)
		before := v.systim(r)
		tx.putOff(f, tTxTSTAMP, 0)
		r.kick(tx)
		after := v.systim(r)
		require.Len(t, c.got(), 1)
		require.NotZero(t, r.Rd(tTSYNCTXCTL)&tTsyncTxVal, "VALID after a timestamped frame")
		stamp := func() int64 { // low half first; reading the high half frees the latch
			lo := r.Rd(tTXSTMPL)
			return v.decode(r.Rd(tTXSTMPH), lo)
		}
		// A second frame while the latch holds the first stamp leaves unstamped.
		tx.putOff(f, tTxTSTAMP, 0)
		r.kick(tx)
		s := stamp()
		require.True(t, s >= before && s <= after, "%04x: stamp %d outside [%d, %d]", v.dev, s, before, after)
		require.Zero(t, r.Rd(tTSYNCTXCTL)&tTsyncTxVal, "reading TXSTMPH freed the latch")
		tx.putOff(f, tTxTSTAMP, 0)
		r.kick(tx)
		require.Greater(t, stamp(), after, "a new stamp once the latch is free")
		require.Len(t, c.got(), 3)
		require.NoError(t, r.m.Err())
	}
}

func TestTxLaunchTimeHolds(t *testing.T) {
	cfg := testCfg()
	cfg.DeviceID = 0x1533
	r, tx, c := txRigCfg(t, cfg)
	r.Wr(tTQAVCTRL, tQavMode|tQavTIM)
	r.Wr(tTQAVCC0, tQueueModeSR)
	now := r.systim()
	at := now + int64(30*time.Millisecond)
	f := frame(factoryMAC, 90)
	tx.putCtx(0, 0, uint32((at%1e9+31)/32), 0, 0)
	tx.put(f)
	tx.putCtx(0, 0, uint32((now+1e9-int64(time.Second/4))%1e9/32), 0, 0) // expired: 0.25 s behind
	tx.put(f)
	r.kick(tx)
	// Sound on a slow machine: a frame seen before a clock read that is still
	// short of the launch time left early.
	r.WaitFor("the timed frames", func() bool {
		n := len(c.got())
		if clk := r.systim(); n > 0 && clk < at {
			t.Fatalf("%d frames left at clock %d, before the launch time %d", n, clk, at)
		}
		return n == 2
	})
	require.True(t, tx.dd(1) && tx.dd(3))
	require.NoError(t, r.m.Err())
}

// TestTxOffloadFaults: every rule of the offloads catches a driver that
// breaks it; the frame is not sent and the ring still moves.
func TestTxOffloadFaults(t *testing.T) {
	udp4, s4, _ := csumFrame(false, false, 50)
	i210 := func(cfg Config) Config { cfg.DeviceID = 0x1533; return cfg }
	for _, c := range []struct {
		name string
		cfg  func(Config) Config
		prep func(r *rig, tx *txRing)
		want string
		sent int // frames on the wire: a refused context leaves the frame after it alone
	}{
		{"TXSM without a context", nil, func(r *rig, tx *txRing) {
			tx.putOff(udp4, 0, tPoptsTXSM)
		}, "no context descriptor loaded", 0},
		{"TXSM with the other slot", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, s4-14, 0, 0, 0)
			tx.putOff(udp4, 0, tPoptsTXSM|1<<4)
		}, "no context descriptor loaded", 0},
		{"field beyond the frame", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, len(udp4)-14-7, 0, 0, 0) // field 6+2 bytes past a start 7 before the end
			tx.putOff(udp4, 0, tPoptsTXSM)
		}, "outside the frame", 0},
		{"MACLEN below 14", nil, func(r *rig, tx *txRing) {
			tx.putCtx(10, s4-10, 0, 0, 0)
			tx.putOff(udp4, 0, tPoptsTXSM)
		}, "at least 14 and 20", 0},
		{"context IDX 2", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, 0, 2)
			tx.put(udp4)
		}, "2 context slots", 1},
		{"data IDX 2", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, 0, 0)
			tx.putOff(udp4, 0, tPoptsTXSM|2<<4)
		}, "2 context slots", 0},
		{"context with RS", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, tTxRS, 0)
			tx.put(udp4)
		}, "reserved command bits", 1},
		{"context L4T 11b", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, 3<<11, 0)
			tx.put(udp4)
		}, "L4T 11b", 1},
		{"SCTP", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, tTucmdSCTP, 0)
			tx.putOff(udp4, 0, tPoptsTXSM)
		}, "SCTP", 0},
		{"IXSM", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 0, tTucmdIPv4, 0)
			tx.putOff(udp4, 0, tPoptsIXSM)
		}, "IXSM", 0},
		{"TSTAMP on the 82576", nil, func(r *rig, tx *txRing) {
			tx.putOff(udp4, tTxTSTAMP, 0)
		}, "clock is not modelled", 0},
		{"TSTAMP with TSYNCTXCTL.EN clear", i210, func(r *rig, tx *txRing) {
			tx.putOff(udp4, tTxTSTAMP, 0)
		}, "TSYNCTXCTL.EN clear", 0},
		{"LaunchTime on a queue not set up", i210, func(r *rig, tx *txRing) {
			tx.putCtx(14, 20, 1000, 0, 0)
			tx.put(udp4)
		}, "not an SR queue with launch time", 1},
		{"LaunchTime on the SR queue without DataTranTIM", i210, func(r *rig, tx *txRing) {
			r.Wr(tTQAVCTRL, tQavMode)
			r.Wr(tTQAVCC0, tQueueModeSR)
			tx.putCtx(14, 20, 1000, 0, 0)
			tx.put(udp4)
		}, "not an SR queue with launch time", 1},
		{"timed frame without a context", i210, func(r *rig, tx *txRing) {
			r.Wr(tTQAVCTRL, tQavMode|tQavTIM)
			r.Wr(tTQAVCC0, tQueueModeSR)
			tx.put(udp4)
		}, "without a context descriptor ahead", 0},
		{"context lost when the queue is enabled again", nil, func(r *rig, tx *txRing) {
			tx.putCtx(14, s4-14, 0, 0, 0)
			r.kick(tx)
			b := tTDBAL(0)
			r.Wr(b+0x28, 0)
			r.Wr(b+0x28, tDctlEnable)
			tx.putOff(udp4, 0, tPoptsTXSM)
		}, "no context descriptor loaded", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testCfg()
			if c.cfg != nil {
				cfg = c.cfg(cfg)
			}
			r, tx, cp := txRigCfg(t, cfg)
			c.prep(r, tx)
			r.kick(tx)
			fs := r.m.Faults()
			require.NotEmpty(t, fs, "no fault")
			found := false
			for _, f := range fs {
				found = found || strings.Contains(f.Detail, c.want)
			}
			require.True(t, found, "faults %v, want one saying %q", fs, c.want)
			require.Len(t, cp.got(), c.sent, "frames on the wire")
			require.Equal(t, uint32(tx.tail), r.Rd(tTDBAL(0)+0x10), "the ring still moves")
		})
	}
}
