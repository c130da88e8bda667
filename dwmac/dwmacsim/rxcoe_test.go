package dwmacsim

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// ipFrame is an Ethernet frame to the factory address with an IPv4 (v6
// false) or IPv6 header, protocol proto and an n-byte L4 segment, every
// checksum right.
func ipFrame(v6 bool, proto byte, n int) []byte {
	l3 := 14
	hl := 20
	if v6 {
		hl = 40
	}
	f := make([]byte, l3+hl+n)
	copy(f, factoryMAC)
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 9})
	h := f[l3:]
	if v6 {
		binary.BigEndian.PutUint16(f[12:], 0x86dd)
		h[0] = 0x60
		binary.BigEndian.PutUint16(h[4:], uint16(n))
		h[6], h[7] = proto, 64
		h[23], h[39] = 1, 2
	} else {
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(hl+n))
		h[8], h[9] = 64, proto
		copy(h[12:], []byte{10, 0, 2, 2, 10, 0, 2, 15})
	}
	for i := l3 + hl; i < len(f); i++ {
		f[i] = byte(i * 13)
	}
	if proto == 17 {
		binary.BigEndian.PutUint16(f[l3+hl+4:], uint16(n))
	}
	if proto != 6 && proto != 17 {
		if proto == 1 {
			seg := f[l3+hl:]
			seg[2], seg[3] = 0, 0
			binary.BigEndian.PutUint16(seg[2:], ^sim.Fold(sim.OnesSum(0, seg)))
		}
		if !v6 {
			binary.BigEndian.PutUint16(h[10:], ^sim.Fold(sim.OnesSum(0, h[:20])))
		}
		return f
	}
	if err := sim.InsertFull(f, !v6); err != nil {
		panic(err)
	}
	return f
}

// TestRxChecksumOffload: with MAC_Configuration.IPC the engine reports the
// payload type and checksum results in RDES1 (RS1V set); the MTL drops frames
// with checksum errors unless the queue's DIS_TCP_EF keeps them; frames that
// are not IP carry no RDES1 status.
func TestRxChecksumOffload(t *testing.T) {
	r := newRig(t, testCfg())
	require.NotZero(t, r.Rd(tHWF0)&(1<<16), "RXCOESEL advertised")
	r.bringUp()
	rx := r.setupRx(0, 16, 1536)
	rdes1 := func(i int) uint32 { return binary.LittleEndian.Uint32(rx.ring.CPU[i*16+4:]) }
	const rs1v = 1 << 26

	// IPC off: no status.
	require.True(t, r.m.Inject(ipFrame(false, 6, 40)))
	require.Zero(t, rx.des3(0)&rs1v)
	require.Zero(t, rdes1(0))

	r.Wr(tMACConfig, r.Rd(tMACConfig)|1<<27)
	require.NotZero(t, r.Rd(tMACConfig)&(1<<27), "IPC reads back")
	i := 1
	for _, c := range []struct {
		name  string
		f     []byte
		rdes1 uint32
	}{
		{"IPv4/TCP", ipFrame(false, 6, 40), rd1IPV4 | rd1PTTCP},
		{"IPv4/UDP", ipFrame(false, 17, 30), rd1IPV4 | rd1PTUDP},
		{"IPv4/ICMP", ipFrame(false, 1, 64), rd1IPV4 | rd1PTICMP},
		{"IPv6/UDP", ipFrame(true, 17, 30), rd1IPV6 | rd1PTUDP},
		{"IPv6/TCP", ipFrame(true, 6, 1000), rd1IPV6 | rd1PTTCP},
		{"IPv4/GRE", ipFrame(false, 47, 30), rd1IPV4 | rd1IPCB},
	} {
		require.True(t, r.m.Inject(c.f), c.name)
		require.NotZero(t, rx.des3(i)&rs1v, "%s: RS1V", c.name)
		require.Equal(t, c.rdes1, rdes1(i), c.name)
		i++
	}
	// A UDP checksum of 0 over IPv4: none sent, nothing to check.
	f := ipFrame(false, 17, 30)
	binary.BigEndian.PutUint16(f[14+20+6:], 0)
	require.True(t, r.m.Inject(f))
	require.Equal(t, rd1IPV4|rd1PTUDP, rdes1(i))
	i++
	// ARP: not IP.
	arp := frame(factoryMAC, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	require.True(t, r.m.Inject(arp))
	require.Zero(t, rx.des3(i)&rs1v, "ARP: no RDES1 status")
	i++

	// Checksum errors: dropped by the MTL...
	badL4 := ipFrame(false, 6, 40)
	badL4[len(badL4)-1] ^= 0xff
	badIP := ipFrame(false, 17, 30)
	badIP[14+8]-- // TTL: the header checksum no longer verifies
	errs := r.m.Counters().RxErrors
	require.False(t, r.m.Inject(badL4))
	require.False(t, r.m.Inject(badIP))
	require.Equal(t, errs+2, r.m.Counters().RxErrors)
	// ...or kept with DIS_TCP_EF, flagged.
	r.Wr(tMTLRxOp0, r.Rd(tMTLRxOp0)|1<<6)
	require.True(t, r.m.Inject(badL4))
	require.Equal(t, rd1IPV4|rd1PTTCP|rd1IPCE, rdes1(i))
	i++
	require.True(t, r.m.Inject(badIP))
	require.Equal(t, rd1IPV4|rd1IPHE, rdes1(i))
	i++
	frag := ipFrame(false, 17, 30)
	frag[14+6] = 0x20 // MF
	binary.BigEndian.PutUint16(frag[14+10:], 0)
	binary.BigEndian.PutUint16(frag[14+10:], ^sim.Fold(sim.OnesSum(0, frag[14:34])))
	require.True(t, r.m.Inject(frag))
	require.Equal(t, rd1IPV4|rd1IPCB, rdes1(i), "a fragment: payload not checked")
	require.NoError(t, r.m.Err())

	// A core without the engine: IPC stays 0.
	cfg := testCfg()
	cfg.NoRxCOE = true
	q := newRig(t, cfg)
	require.Zero(t, q.Rd(tHWF0)&(1<<16))
	q.Wr(tMACConfig, 1<<27)
	require.Zero(t, q.Rd(tMACConfig)&(1<<27))
}
