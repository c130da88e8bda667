package igbsim

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// Microsoft's RSS verification suite ("Verifying the RSS Hash Calculation",
// NDIS documentation): the key and the expected hashes of five IPv4 and three
// IPv6 tuples, with and without the TCP ports.
var msKey = []byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

var msVectors = []struct {
	dst, src        string
	dport, sport    uint16
	ipHash, tcpHash uint32
}{
	{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
	{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
	{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
	{"209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f},
	{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2},
	{"3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794, 0x2cc18cd5, 0x40207d3d},
	{"ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230, 0x0f0c461c, 0xdde51bbf},
	{"fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 38024, 44251, 0x4b61e985, 0x02d1feef},
}

func tupleInput(src, dst netip.Addr, sport, dport uint16, ports bool) []byte {
	in := append(src.AsSlice(), dst.AsSlice()...)
	if ports {
		in = binary.BigEndian.AppendUint16(in, sport)
		in = binary.BigEndian.AppendUint16(in, dport)
	}
	return in
}

func TestToeplitzMicrosoftVectors(t *testing.T) {
	var key [rssKeyLen]byte
	copy(key[:], msKey)
	var tab toeplitzTable
	tab.build(&key)
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		ip := tupleInput(src, dst, v.sport, v.dport, false)
		tcp := tupleInput(src, dst, v.sport, v.dport, true)
		require.Equal(t, v.ipHash, Toeplitz(msKey, ip), "reference, %s -> %s", v.src, v.dst)
		require.Equal(t, v.tcpHash, Toeplitz(msKey, tcp), "reference with ports, %s -> %s", v.src, v.dst)
		require.Equal(t, v.ipHash, tab.hash(ip), "table, %s -> %s", v.src, v.dst)
		require.Equal(t, v.tcpHash, tab.hash(tcp), "table with ports, %s -> %s", v.src, v.dst)
	}
	require.Zero(t, Toeplitz(msKey[:8], make([]byte, 12)), "a key too short for the input gives 0")
}

// l4Frame builds an Ethernet/IPv4 or IPv6/TCP or UDP frame to dst.
func l4Frame(dst [6]byte, src, dstIP netip.Addr, proto byte, sport, dport uint16) []byte {
	f := make([]byte, 0, 128)
	f = append(f, dst[:]...)
	f = append(f, 0x02, 0xAA, 0, 0, 0, 1)
	l4 := make([]byte, 20)
	binary.BigEndian.PutUint16(l4[0:], sport)
	binary.BigEndian.PutUint16(l4[2:], dport)
	if src.Is4() {
		f = append(f, 0x08, 0x00)
		ip := make([]byte, 20)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
		ip[8], ip[9] = 64, proto
		copy(ip[12:], src.AsSlice())
		copy(ip[16:], dstIP.AsSlice())
		f = append(f, ip...)
	} else {
		f = append(f, 0x86, 0xDD)
		ip := make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(len(l4)))
		ip[6], ip[7] = proto, 64
		copy(ip[8:], src.AsSlice())
		copy(ip[24:], dstIP.AsSlice())
		f = append(f, ip...)
	}
	f = append(f, l4...)
	for len(f) < 60 {
		f = append(f, 0)
	}
	return f
}

func TestRSSQueueSelection(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	var rings [4]*rxRing
	for q := range rings {
		rings[q] = r.setupRx(q, 16, 2)
		r.Wr(tRDBAL(q)+0x18, 15)
	}
	r.enableRx(0)
	for i := 0; i < 10; i++ {
		r.Wr(tRSSRK+4*uint32(i), binary.LittleEndian.Uint32(msKey[4*i:]))
	}
	var reta [128]byte
	for i := range reta {
		reta[i] = byte(i/8) % 4
	}
	for i := 0; i < 32; i++ {
		r.Wr(tRETA+4*uint32(i), binary.LittleEndian.Uint32(reta[4*i:]))
	}
	const fields = 1<<16 | 1<<17 | 1<<20 | 1<<21 | 1<<22 | 1<<23 // TCP4 IP4 IP6 TCP6 UDP4 UDP6
	r.Wr(tMRQC, 2|fields)
	r.Wr(tRXCSUM, 1<<13) // PCSD: the hash goes into the write-back

	next := [4]int{}
	used := map[int]bool{}
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		for _, proto := range []byte{6, 17} {
			want := v.tcpHash
			wantType := uint16(1) // TCP/IPv4
			switch {
			case proto == 17 && src.Is4():
				wantType = 7
			case proto == 6 && !src.Is4():
				wantType = 3
			case proto == 17:
				wantType = 8
			}
			q := int(reta[want&0x7F])
			used[q] = true
			require.True(t, r.m.Inject(l4Frame(factoryMAC, src, dst, proto, v.sport, v.dport)))
			status, _, pktInfo, hash := rings[q].desc(next[q])
			require.Equal(t, uint32(3), status&3, "frame to %s landed on queue %d", v.dst, q)
			require.Equal(t, want, hash, "write-back hash, %s proto %d", v.dst, proto)
			require.Equal(t, wantType, pktInfo&0xF, "RSS type")
			l3 := uint16(0x10)
			if !src.Is4() {
				l3 = 0x40
			}
			l4 := uint16(0x100)
			if proto == 17 {
				l4 = 0x200
			}
			require.Equal(t, l3|l4, pktInfo&0xFFF0, "packet type")
			next[q]++
		}
	}
	require.GreaterOrEqual(t, len(used), 3, "the vectors spread over several queues")

	// An IPv4 frame of another protocol hashes the addresses only.
	src, dst := netip.MustParseAddr(msVectors[0].src), netip.MustParseAddr(msVectors[0].dst)
	q := int(reta[msVectors[0].ipHash&0x7F])
	require.True(t, r.m.Inject(l4Frame(factoryMAC, src, dst, 47, 0, 0)))
	_, _, pktInfo, hash := rings[q].desc(next[q])
	require.Equal(t, msVectors[0].ipHash, hash)
	require.Equal(t, uint16(2), pktInfo&0xF)

	// Without PCSD the hardware reports no hash and RSS does not steer.
	r.Wr(tRXCSUM, 0)
	before := r.Rd(tRDBAL(0) + 0x10)
	require.True(t, r.m.Inject(l4Frame(factoryMAC, src, dst, 6, msVectors[0].sport, msVectors[0].dport)))
	_, _, pktInfo, hash = rings[0].desc(int(before))
	require.Zero(t, hash)
	require.Zero(t, pktInfo&0xF)
	require.NoError(t, r.m.Err())
}
