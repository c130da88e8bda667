package dwmacsim

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// The TX requests as the descriptors carry them: the checksum engine (CIC),
// TX timestamps (TTSE/TTSS) and launch times (enhanced descriptors), driven
// with the test's own transcription of the fields.
const (
	tCICShift = 16
	tTTSE     = 1 << 30 // TDES2
	tTTSS     = 1 << 17 // TDES3 write-back
	tIHE      = 1 << 0
	tPCE      = 1 << 12
)

// refFrame builds an Ethernet (optionally 802.1Q tagged) / IPv4 or IPv6 /
// TCP or UDP frame with gopacket (nictest.BuildL4), whose checksums are the
// reference.
func refFrame(t testing.TB, v6, tcp, vlan bool, payload []byte) []byte {
	t.Helper()
	return nictest.BuildL4(t, nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, VLANID: 42,
		Dst: net.HardwareAddr(peerMAC), Seq: 7, Payload: payload}).Bytes
}

// offsets returns where a refFrame's IP header, L4 header and L4 checksum
// field lie.
func offsets(v6, tcp, vlan bool) (l3, l4, field int) {
	l3 = 14
	if vlan {
		l3 = 18
	}
	l4 = l3 + 20
	if v6 {
		l4 = l3 + 40
	}
	field = l4 + 6
	if tcp {
		field = l4 + 16
	}
	return
}

func TestTxChecksumEngine(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 120; i++ {
		v6, tcp, vlan := i&1 != 0, i&2 != 0, i&4 != 0
		p := make([]byte, rng.IntN(1200))
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		want := refFrame(t, v6, tcp, vlan, p)
		l3, l4, field := offsets(v6, tcp, vlan)
		f := append([]byte(nil), want...)
		cic := uint32(3)
		if !v6 {
			binary.BigEndian.PutUint16(f[l3+10:], uint16(rng.Uint32())) // the engine inserts the IPv4 header checksum too
		}
		proto := byte(17)
		if tcp {
			proto = 6
		}
		switch i % 3 {
		case 0: // CIC 3 ignores whatever the field holds
			binary.BigEndian.PutUint16(f[field:], uint16(rng.Uint32()))
		case 1: // CIC 3 with a CHECKSUM_PARTIAL field: the same wire bytes
			binary.BigEndian.PutUint16(f[field:], nictest.PseudoSum(f, v6, l3, l4, proto))
		case 2: // CIC 2 adds the field's pseudo-header sum
			cic = 2
			binary.BigEndian.PutUint16(f[field:], nictest.PseudoSum(f, v6, l3, l4, proto))
		}
		if !tcp && binary.BigEndian.Uint16(want[field:]) == 0xffff && cic == 2 {
			continue // CIC 2 does not know UDP's zero rule
		}
		idx := tx.queue(f, false)
		tx.put(idx, len(f), 0, tOWN|tFD|tLD|cic<<tCICShift, len(f))
		tx.kick()
		require.Len(t, cap.frames, 1, "frame %d", i)
		got := cap.frames[0]
		cap.frames = nil
		require.Equal(t, want, got[:len(want)], "frame %d (v6 %v tcp %v vlan %v CIC %d): wire bytes differ from gopacket's", i, v6, tcp, vlan, cic)
		require.Equal(t, f, tx.bufs.CPU[idx*bufSize:idx*bufSize+len(f)], "frame %d: the engine wrote into the buffer in memory", i)
		require.Zero(t, tx.des3(idx)&(tES|tIHE|tPCE), "frame %d: write-back errors", i)
	}

	// CIC 0: byte for byte as in memory, wrong checksums included.
	f := refFrame(t, false, true, false, []byte("payload"))
	f[50] ^= 0xff
	tx.queue(f, false)
	tx.kick()
	require.Equal(t, [][]byte{f}, cap.frames)
	cap.frames = nil

	// CIC 1: the IPv4 header checksum alone.
	want := refFrame(t, false, false, false, []byte("udp payload"))
	f = append([]byte(nil), want...)
	f[24], f[25] = 0, 0
	f[40], f[41] = 0x12, 0x34
	want[40], want[41] = 0x12, 0x34
	idx := tx.queue(f, false)
	tx.put(idx, len(f), 0, tOWN|tFD|tLD|1<<tCICShift, len(f))
	tx.kick()
	require.Equal(t, [][]byte{want}, cap.frames)
	require.NoError(t, r.m.Err())
}

// TestTxChecksumRefusals: what the engine cannot do is a fault, and the
// write-back says so where the databook has a status bit; the frame leaves
// without the checksum.
func TestTxChecksumRefusals(t *testing.T) {
	good := refFrame(t, false, true, false, make([]byte, 400))
	v6hbh := refFrame(t, true, true, false, make([]byte, 400))
	v6hbh[20] = 0 // next header: hop-by-hop options
	same := func(f []byte) []byte { return f }
	const sf = tTXQEN | tTSF | tTQS4K
	cases := []struct {
		name   string
		mangle func(f []byte) []byte
		txOp   uint32 // MTL_TxQ0_Operation_Mode
		status uint32
		fault  string
	}{
		{"IPv6 hop-by-hop", func(f []byte) []byte { return v6hbh }, sf, 0, "extension header 0"},
		{"IHL 4", func(f []byte) []byte { f[14] = 0x44; return f }, sf, tIHE | tES, "malformed IP header"},
		{"IP length beyond the frame", func(f []byte) []byte { binary.BigEndian.PutUint16(f[16:], 1000); return f }, sf, tPCE | tES, "beyond the"},
		{"threshold mode", same, tTXQEN | tTQS4K, tPCE | tES, "store-and-forward"},
		{"frame beyond the queue's FIFO", same, tTXQEN | tTSF, tPCE | tES, "256-byte FIFO"},
		{"queue without the engine", same, 0, 0, "no checksum engine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			if tc.txOp == 0 {
				cfg.NoTxCOEQueues, tc.txOp = 1, sf
			}
			r := newRig(t, cfg)
			r.bringUp()
			r.Wr(tMTLTxOp0, tc.txOp)
			var cap capture
			r.m.SetTransmit(cap.fn)
			tx := r.setupTx(0, 4)
			f := tc.mangle(append([]byte(nil), good...))
			f[50] ^= 0x55 // a checksum the engine would have to fix
			idx := tx.queue(f, false)
			tx.put(idx, len(f), 0, tOWN|tFD|tLD|3<<tCICShift, len(f))
			tx.kick()
			r.expectFault(tc.fault)
			require.Len(t, cap.frames, 1, "the frame still leaves")
			require.Equal(t, f[34:], cap.frames[0][34:len(f)], "no L4 checksum inserted")
			require.Equal(t, tc.status, tx.des3(idx)&(tES|tIHE|tPCE|tDE))
		})
	}
}

// ptpOn starts the system time as stmmac does, at sec seconds.
func (r *rig) ptpOn(sec uint32) {
	r.startClock(0)
	r.Wr(tSTSUR, sec)
	r.Wr(tSTNSU, 0)
	r.Wr(tTCR, r.Rd(tTCR)|tTSINIT)
}

func TestTxTimestampWriteback(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)

	// Without TSENA no timestamp is taken.
	idx := tx.queue(frame(peerMAC, 100), false)
	tx.put(idx, 100, tTTSE, tOWN|tFD|tLD, 100)
	tx.kick()
	require.Zero(t, tx.des3(idx)&tTTSS, "TTSS without TSENA")

	r.ptpOn(1_700_000_000)
	var prev int64
	for i := 0; i < 6; i++ {
		ttse := uint32(0)
		if i != 3 {
			ttse = tTTSE
		}
		idx := tx.queue(frame(peerMAC, 100+i), false)
		tx.put(idx, 100+i, ttse, tOWN|tFD|tLD, 100+i)
		before := r.m.Clock()
		tx.kick()
		after := r.m.Clock()
		r.A.Sync(tx.ring, idx*16, 16, dma.ForCPU)
		d := tx.ring.CPU[idx*16:]
		d3 := binary.LittleEndian.Uint32(d[12:])
		if ttse == 0 {
			require.Zero(t, d3&tTTSS, "frame %d did not ask", i)
			require.Equal(t, uint32(tx.bufAddr(idx)), binary.LittleEndian.Uint32(d[0:]), "DES0 kept without a timestamp")
			continue
		}
		require.NotZero(t, d3&tTTSS, "frame %d: no TTSS", i)
		ts := int64(binary.LittleEndian.Uint32(d[4:]))*1e9 + int64(binary.LittleEndian.Uint32(d[0:]))
		require.True(t, ts >= before && ts <= after && ts > prev, "frame %d: timestamp %d outside [%d, %d] or not after %d", i, ts, before, after, prev)
		prev = ts
	}
	require.Len(t, cap.frames, 7)
	require.NoError(t, r.m.Err())
}

// enhRing is an enhanced (EDSE) TX ring: 32-byte slots, ETDES4-7 first.
type enhRing struct {
	r          *rig
	c          int
	ring, bufs *dma.Region
	n, tail    int
}

func (r *rig) setupEnhTx(c, n int) *enhRing {
	r.T.Helper()
	ring, err := r.A.Alloc(n*tEnhDesc, 0)
	require.NoError(r.T, err)
	bufs, err := r.A.Alloc(n*bufSize, 0)
	require.NoError(r.T, err)
	b := tCh(c)
	r.Wr(b+tTxBaseHi, uint32(ring.IOVA>>32))
	r.Wr(b+tTxBaseLo, uint32(ring.IOVA))
	r.Wr(b+tTxLen, uint32(n-1))
	r.Wr(b+tTxTail, uint32(ring.IOVA))
	r.Wr(b+tTxCtrl, tEDSE)
	r.Wr(b+tTxCtrl, tEDSE|tST)
	return &enhRing{r: r, c: c, ring: ring, bufs: bufs, n: n}
}

// queue writes the next slot for f with ETDES4/5 d4, d5 and returns it.
func (x *enhRing) queue(f []byte, d4, d5 uint32) int {
	i := x.tail
	d := x.ring.CPU[i*tEnhDesc : (i+1)*tEnhDesc]
	clear(d)
	binary.LittleEndian.PutUint32(d[0:], d4)
	binary.LittleEndian.PutUint32(d[4:], d5)
	a := x.bufs.IOVA + uint64(i*bufSize)
	copy(x.bufs.CPU[i*bufSize:], f)
	binary.LittleEndian.PutUint32(d[16:], uint32(a))
	binary.LittleEndian.PutUint32(d[20:], uint32(a>>32))
	binary.LittleEndian.PutUint32(d[24:], uint32(len(f))|tTTSE)
	binary.LittleEndian.PutUint32(d[28:], tOWN|tFD|tLD|uint32(len(f)))
	x.r.A.Sync(x.bufs, i*bufSize, len(f), dma.ForDevice)
	x.r.A.Sync(x.ring, i*tEnhDesc, tEnhDesc, dma.ForDevice)
	x.tail = (x.tail + 1) % x.n
	return i
}

func (x *enhRing) kick() {
	x.r.WrRaw(tCh(x.c)+tTxTail, uint32(x.ring.IOVA)+uint32(x.tail*tEnhDesc))
}

// wb returns slot i's write-back TDES3 and timestamp.
func (x *enhRing) wb(i int) (uint32, int64) {
	x.r.A.Sync(x.ring, i*tEnhDesc, tEnhDesc, dma.ForCPU)
	d := x.ring.CPU[i*tEnhDesc+16:]
	d3 := loadDES3(d) // atomic: the device may be writing it back now
	if d3&tOWN != 0 {
		return d3, 0 // DES0/DES1 are the device's until OWN clears
	}
	return d3, int64(binary.LittleEndian.Uint32(d[4:]))*1e9 + int64(binary.LittleEndian.Uint32(d[0:]))
}

func launchFields(ns int64) (uint32, uint32) {
	return tLTV | uint32(ns/1e9)&0xff, uint32(ns%1e9) &^ 0xff
}

func TestTxLaunchTime(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.ptpOn(1_700_000_100)
	at := make(chan int64, 16)
	r.m.SetTransmit(func(f []byte) { at <- r.m.Clock() }) // the model's time as the frame reaches the wire
	x := r.setupEnhTx(1, 8)
	for _, delay := range []time.Duration{15 * time.Millisecond, 3 * time.Millisecond} {
		lt := r.m.Clock() + int64(delay)
		d4, d5 := launchFields(lt)
		i := x.queue(frame(peerMAC, 80), d4, d5)
		j := x.queue(frame(peerMAC, 90), 0, 0) // no launch time, but behind one
		x.kick()
		r.m.Settle()
		select {
		case v := <-at:
			t.Fatalf("a frame left at %d, before its launch time %d", v, lt)
		default:
		}
		var sent [2]int64
		for k := range sent {
			select {
			case sent[k] = <-at:
			case <-time.After(2 * time.Second):
				t.Fatalf("delay %v: frame %d never left", delay, k)
			}
		}
		require.GreaterOrEqual(t, sent[0], lt&^0xff, "delay %v: launched before its time", delay)
		// Late only by how long the machine takes to schedule the model (a
		// loaded machine or qemu-user: hundreds of milliseconds).
		require.Less(t, sent[0], lt+int64(time.Second), "delay %v: launched far too late", delay)
		require.GreaterOrEqual(t, sent[1], sent[0], "the frame behind it waited")
		r.WaitFor("write-back", func() bool { d3, _ := x.wb(j); return d3&tOWN == 0 })
		d3, ts := x.wb(i)
		require.NotZero(t, d3&tTTSS)
		require.GreaterOrEqual(t, ts, lt&^0xff, "its timestamp is after the launch time")
	}

	// A launch time that has passed goes at once.
	d4, d5 := launchFields(r.m.Clock() - int64(time.Second))
	x.queue(frame(peerMAC, 70), d4, d5)
	x.kick()
	r.m.Settle()
	select {
	case <-at:
	case <-time.After(time.Second):
		t.Fatal("a passed launch time held the frame")
	}
	require.NoError(t, r.m.Err())
}

// TestTxLaunchTimeFaults: launch times the model refuses; each frame is
// written back with DE|ES and not sent.
func TestTxLaunchTimeFaults(t *testing.T) {
	cases := []struct {
		name   string
		ptp    bool
		mangle func(d4, d5 uint32) (uint32, uint32)
		fault  string
	}{
		{"nanoseconds", true, func(d4, d5 uint32) (uint32, uint32) { return d4, 1_000_000_000 }, "10^9"},
		{"GSN", true, func(d4, d5 uint32) (uint32, uint32) { return d4 | 3<<8, d5 }, "GSN"},
		{"reserved", true, func(d4, d5 uint32) (uint32, uint32) { return d4, d5 | 0x7f }, "reserved"},
		{"clock stopped", false, func(d4, d5 uint32) (uint32, uint32) { return d4, d5 }, "TSENA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, testCfg())
			r.bringUp()
			if tc.ptp {
				r.ptpOn(5)
			}
			var cap capture
			r.m.SetTransmit(cap.fn)
			x := r.setupEnhTx(2, 4)
			d4, d5 := tc.mangle(launchFields(5_000_000_000))
			i := x.queue(frame(peerMAC, 64), d4, d5)
			x.kick()
			r.m.Settle()
			r.expectFault(tc.fault)
			require.Empty(t, cap.frames)
			d3, _ := x.wb(i)
			require.Equal(t, uint32(tDE|tES), d3&(tDE|tES|tOWN))
		})
	}
}

// TestTxMetaVariants: the i.MX8MP model has the checksum engine but no TBS;
// NoTxCOE removes the engine.
func TestTxMetaVariants(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	r := newRig(t, cfg)
	require.NotZero(t, r.Rd(tHWF0)&(1<<14), "i.MX8MP: TXCOESEL")
	require.Zero(t, r.Rd(tHWF3)&tTBSSEL, "i.MX8MP: no TBS")
	cfg = testCfg()
	cfg.NoTxCOE = true
	r = newRig(t, cfg)
	require.Zero(t, r.Rd(tHWF0)&(1<<14))
}

// TestTxHoleBeforeTail: descriptors handed over by the tail with one lacking
// OWN before an owned one are a fault; here the wrong driver wrote 32-byte
// enhanced descriptors on a channel without EDSE.
func TestTxHoleBeforeTail(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	ring, err := r.A.Alloc(8*tEnhDesc, 0)
	require.NoError(t, err)
	bufs, err := r.A.Alloc(bufSize, 0)
	require.NoError(t, err)
	b := tCh(1)
	r.Wr(b+tTxBaseHi, uint32(ring.IOVA>>32))
	r.Wr(b+tTxBaseLo, uint32(ring.IOVA))
	r.Wr(b+tTxLen, 8-1)
	r.Wr(b+tTxTail, uint32(ring.IOVA))
	r.Wr(b+tTxCtrl, tST) // EDSE forgotten: 16-byte descriptors
	x := &enhRing{r: r, c: 1, ring: ring, bufs: bufs, n: 8}
	x.queue(frame(peerMAC, 60), 0, 0)
	x.kick()
	r.m.Settle()
	r.expectFault("without OWN before descriptor 1 with OWN")
	require.Empty(t, cap.frames, "the DMA stopped at the hole")
	require.NotZero(t, r.Rd(b+tStatus)&tTBU)

	// The same slots on a channel with EDSE are fine.
	r2 := newRig(t, testCfg())
	r2.bringUp()
	r2.m.SetTransmit(cap.fn)
	x2 := r2.setupEnhTx(1, 8)
	x2.queue(frame(peerMAC, 60), 0, 0)
	x2.kick()
	r2.m.Settle()
	require.Len(t, cap.frames, 1)
	require.NoError(t, r2.m.Err())
}

// TestTxChecksumPassesOthers: CIC on frames the engine does not parse (not
// IP, or an IP protocol without a checksum it knows) leaves them unchanged
// and is no error: Linux's XDP transmit path sets CIC on every frame. ICMP
// (v4 without, v6 with the pseudo-header) gets its checksum.
func TestTxChecksumPassesOthers(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	send := func(f []byte) []byte {
		idx := tx.queue(f, false)
		tx.put(idx, len(f), 0, tOWN|tFD|tLD|3<<tCICShift, len(f))
		tx.kick()
		require.Len(t, cap.frames, 1)
		require.Zero(t, tx.des3(idx)&(tES|tIHE|tPCE))
		got := cap.frames[0]
		cap.frames = nil
		return got[:len(f)]
	}
	arp := frame(bcast, 60)
	arp[12], arp[13] = 0x08, 0x06
	require.Equal(t, arp, send(arp), "ARP")
	gre := refFrame(t, false, false, false, []byte("whatever"))
	gre[23] = 47 // GRE: no L4 checksum the engine knows
	binary.BigEndian.PutUint16(gre[24:], 0)
	binary.BigEndian.PutUint16(gre[24:], ^sim.Fold(sim.OnesSum(0, gre[14:34])))
	require.Equal(t, gre, send(gre), "IPv4/GRE")

	for _, v6 := range []bool{false, true} {
		want := icmpFrame(t, v6, []byte("ping payload 0123456789"))
		f := append([]byte(nil), want...)
		ck := 34 + 2
		if v6 {
			ck = 54 + 2
		}
		f[ck] ^= 0xa5
		require.Equal(t, want, send(f), "ICMP v6=%v", v6)
	}
	require.NoError(t, r.m.Err())
}

// icmpFrame is an ICMPv4 or ICMPv6 echo request with gopacket's checksum.
func icmpFrame(t *testing.T, v6 bool, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr(peerMAC), EthernetType: layers.EthernetTypeIPv4}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	var err error
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
		require.NoError(t, icmp.SetNetworkLayerForChecksum(ip))
		err = gopacket.SerializeLayers(buf, opts, eth, ip, icmp, gopacket.Payload(payload))
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 1, Seq: 2}
		err = gopacket.SerializeLayers(buf, opts, eth, ip, icmp, gopacket.Payload(payload))
	}
	require.NoError(t, err)
	return append([]byte(nil), buf.Bytes()...)
}
