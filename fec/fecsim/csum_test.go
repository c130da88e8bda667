package fecsim

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// ipRef builds an Ethernet (optionally 802.1Q) / IPv4-or-IPv6 / TCP-or-UDP
// frame to dst with gopacket (nictest.BuildL4), whose checksum code is the
// reference: the frame comes back with the checksums gopacket computed, and
// with the offsets of the IPv4 header checksum (0 for IPv6) and of the L4
// checksum.
func ipRef(t testing.TB, dst net.HardwareAddr, v6, tcp, vlan bool, payload []byte) (f []byte, ipSum, l4Sum int) {
	t.Helper()
	r := nictest.BuildL4(t, nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, VLANID: 42, Priority: 3,
		Src: net.HardwareAddr{2, 0xAA, 0, 0, 0, 1}, Dst: dst, SrcPort: 4321, Seq: 99, Window: 1024, Payload: payload})
	return r.Bytes, r.IPSum, r.Sum
}

func randPayload(r *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// TestChecksumInsertionMatchesGopacket: PINS (and IINS on IPv4) over random
// IPv4/IPv6 x TCP/UDP frames, tagged or not, with the fields cleared as the
// RM asks: the wire carries exactly gopacket's checksums (frames padded to 60
// bytes by the MAC compare on their IP length).
func TestChecksumInsertionMatchesGopacket(t *testing.T) {
	b := newBed(t, bedOpts{ext: true, n: 8})
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 160; i++ {
		v6, tcp, vlan, iins := r.IntN(2) == 1, r.IntN(2) == 1, r.IntN(4) == 0, r.IntN(2) == 1
		want, ipSum, l4Sum := ipRef(t, b.m.MAC(), v6, tcp, vlan, randPayload(r, r.IntN(1200)))
		f := append([]byte(nil), want...)
		f[l4Sum], f[l4Sum+1] = 0, 0
		esc := txeINT | txePINS
		if iins && ipSum != 0 {
			f[ipSum], f[ipSum+1] = 0, 0
			esc |= txeIINS
		}
		slot := i % b.n
		b.queueTX(0, slot, f, txR|txL|txTC, esc)
		b.r.Write32(regTDAR, darActive)
		require.Len(t, b.sent, i+1)
		got := b.sent[i]
		require.GreaterOrEqual(t, len(got), len(want))
		require.Equal(t, want, got[:len(want)], "frame %d (v6 %v tcp %v vlan %v iins %v): wire checksums differ from gopacket's", i, v6, tcp, vlan, iins)
	}
	b.noFaults()
}

// TestChecksumUntouchedWithoutRequest: frames whose BDs ask for nothing leave
// byte-identical, wrong checksums and all.
func TestChecksumUntouchedWithoutRequest(t *testing.T) {
	for _, ext := range []bool{true, false} {
		b := newBed(t, bedOpts{ext: ext})
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 16; i++ {
			f, ipSum, l4Sum := ipRef(t, b.m.MAC(), i&1 == 1, i&2 == 2, false, randPayload(r, 100+r.IntN(400)))
			f[l4Sum] ^= 0x5A
			if ipSum != 0 {
				f[ipSum] ^= 0xA5
			}
			b.queueTX(0, i%b.n, f, txR|txL|txTC, txeINT)
			b.r.Write32(regTDAR, darActive)
			require.Equal(t, f, b.sent[i], "ext %v frame %d changed on the wire", ext, i)
		}
		b.noFaults()
	}
}

// TestChecksumTACCGlobal: TACC.PROCHK/IPCHK insert into every IP frame, even
// with legacy BDs, and leave other frames alone without a fault.
func TestChecksumTACCGlobal(t *testing.T) {
	b := newBed(t, bedOpts{})
	b.r.Write32(regTACC, taccPROCHK|taccIPCHK)
	want, ipSum, l4Sum := ipRef(t, b.m.MAC(), false, true, false, []byte("global insertion"))
	f := append([]byte(nil), want...)
	f[ipSum], f[ipSum+1], f[l4Sum], f[l4Sum+1] = 0, 0, 0, 0
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	arp := testFrame(b.m, 60, 9)
	arp[12], arp[13] = 0x08, 0x06
	b.queueTX(0, 1, arp, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 2)
	require.Equal(t, want, b.sent[0])
	require.Equal(t, arp, b.sent[1], "a non-IP frame changed")
	b.noFaults()
}

// TestChecksumFaults: what the accelerator does wrong or not at all when the
// driver asks wrongly is a fault, and the wire shows what the hardware sends.
func TestChecksumFaults(t *testing.T) {
	dst := net.HardwareAddr{2, 0, 0, 0, 0, 1} // the model's default MAC
	good, _, l4Sum := ipRef(t, dst, false, false, false, []byte("not cleared"))
	cases := []struct {
		name  string
		frame func() []byte
		sc    uint16
		tacc  uint32
		fault string
		check func(t *testing.T, wire []byte)
	}{
		{"field not cleared", func() []byte { return append([]byte(nil), good...) }, txTC, 0, "not cleared",
			func(t *testing.T, wire []byte) {
				require.NotEqual(t, good[l4Sum:l4Sum+2], wire[l4Sum:l4Sum+2], "the old field counted in the sum")
			}},
		{"field not cleared, TACC", func() []byte { return append([]byte(nil), good...) }, txTC, taccPROCHK, "not cleared", nil},
		{"not IP", func() []byte {
			f := append([]byte(nil), good...)
			f[12], f[13] = 0x88, 0xB5
			return f
		}, txTC, 0, "not IP", func(t *testing.T, wire []byte) {
			require.Equal(t, byte(0x88), wire[12])
			require.Equal(t, good[14:], wire[14:len(good)], "a frame the engine cannot parse changed")
		}},
		{"IPv4 fragment", func() []byte {
			f := append([]byte(nil), good...)
			f[20] |= 0x20 // MF
			f[l4Sum], f[l4Sum+1] = 0, 0
			return f
		}, txTC, 0, "fragment", func(t *testing.T, wire []byte) {
			require.Zero(t, binary.BigEndian.Uint16(wire[l4Sum:]), "a fragment got a checksum")
		}},
		{"GRE", func() []byte {
			f := append([]byte(nil), good...)
			f[23] = 47
			return f
		}, txTC, 0, "not TCP, UDP or (IPv4) ICMP", nil},
		{"IP length beyond the frame", func() []byte {
			f := append([]byte(nil), good...)
			binary.BigEndian.PutUint16(f[16:], 1400)
			f[l4Sum], f[l4Sum+1] = 0, 0
			return f
		}, txTC, 0, "does not fit", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBed(t, bedOpts{ext: true})
			b.r.Write32(regTACC, c.tacc)
			esc := txeINT | txePINS
			if c.tacc != 0 {
				esc = txeINT
			}
			b.queueTX(0, 0, c.frame(), txR|txL|c.sc, esc)
			b.r.Write32(regTDAR, darActive)
			require.Error(t, b.m.Err())
			require.Contains(t, b.m.Err().Error(), c.fault)
			if c.check != nil {
				require.Len(t, b.sent, 1)
				c.check(t, b.sent[0])
			}
		})
	}
}

// TestChecksumNeedsTCAndStoreAndForward: insertion into a frame carrying the
// driver's own FCS, and insertion without TFWR.STRFWD, are faults and the
// frame is not delivered.
func TestChecksumNeedsTCAndStoreAndForward(t *testing.T) {
	dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	f, _, l4Sum := ipRef(t, dst, true, true, false, []byte("with fcs"))
	f[l4Sum], f[l4Sum+1] = 0, 0
	b := newBed(t, bedOpts{ext: true})
	withFCS := binary.LittleEndian.AppendUint32(append([]byte(nil), f...), crc32.ChecksumIEEE(f))
	b.queueTX(0, 0, withFCS, txR|txL, txeINT|txePINS)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	require.ErrorContains(t, b.m.Err(), "TC clear")

	b = newBed(t, bedOpts{ext: true})
	b.r.Write32(regTFWR, 0)
	b.queueTX(0, 0, f, txR|txL|txTC, txeINT|txePINS)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	require.ErrorContains(t, b.m.Err(), "STRFWD")
}

// TestTxTimestampFromTimer: esc.TS writes the 1588 counter at transmission
// into the BD's ts word and ATSTMP; without TS the word keeps what the driver
// wrote.
func TestTxTimestampFromTimer(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	b.r.Write32(regATINC, 10)
	b.r.Write32(regATCR, atcrEN|atcrPEREN)
	b.r.Write32(regATPER, 1<<31)
	var prev uint32
	for i := 0; i < 6; i++ {
		before := b.m.Timer()
		esc := txeINT
		if i != 3 {
			esc |= txeTS
		}
		b.queueTX(0, i, testFrame(b.m, 64, byte(i)), txR|txL|txTC, esc)
		b.r.Write32(regTDAR, darActive)
		after := b.m.Timer()
		_, sc, d := b.txBD(0, i)
		require.Zero(t, sc&txR)
		require.NotZero(t, b.g32(d[bdBDU:])&bduDone)
		ts := b.g32(d[bdTS:])
		if i == 3 {
			require.Zero(t, ts, "timestamp without TS")
			continue
		}
		require.True(t, ts >= before && ts <= after && ts > prev, "frame %d: ts %d outside [%d, %d] or not after %d", i, ts, before, after, prev)
		require.Equal(t, ts, b.r.Read32(regATSTMP))
		prev = ts
	}
	b.noFaults()
}

// TestChecksumICMPv4: the accelerator also knows ICMP over IPv4 (the RM's
// checksum calculation: over the ICMP message, no pseudo header); the wire
// carries gopacket's ICMP and IPv4 header checksums.
func TestChecksumICMPv4(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 7, Seq: 9}
	buf := gopacket.NewSerializeBuffer()
	require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0xAA, 0, 0, 0, 1}, DstMAC: b.m.MAC(), EthernetType: layers.EthernetTypeIPv4},
		ip, icmp, gopacket.Payload(randPayload(rand.New(rand.NewPCG(5, 5)), 101))))
	want := buf.Bytes()
	f := append([]byte(nil), want...)
	f[24], f[25], f[36], f[37] = 0, 0, 0, 0
	b.queueTX(0, 0, f, txR|txL|txTC, txeINT|txePINS|txeIINS)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	require.Equal(t, want, b.sent[0])
	b.noFaults()
}
