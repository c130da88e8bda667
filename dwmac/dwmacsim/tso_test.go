package dwmacsim

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/stretchr/testify/require"
)

// The TSO tests write descriptors as stmmac_tso_xmit does (databook TSO
// descriptor fields, transcribed here): a context descriptor with the MSS
// when it changes, the headers alone in the first descriptor's buffer 1 (HL),
// the payload in the following descriptors.
const (
	tTSE      = 1 << 18 // TDES3, first descriptor
	tTHLShift = 19      // TDES3 22:19: TCP header length in words
	tTCMSSV   = 1 << 26 // context TDES3
	tCDE      = 1 << 23 // context write-back: descriptor error
	tTxTSE    = 1 << 12 // DMA_CH_Tx_Control
	tTSOEN    = 1 << 18 // HW_FEATURE1
)

// tsoSuper is a TCP "super frame" as a stack hands it to a TSO driver: one
// header, the whole payload; its checksums and IP length are left wrong, the
// engine must compute them.
func tsoSuper(t *testing.T, v6 bool, flags byte, payload []byte) (f []byte, hl, thl int) {
	return tsoSuperOpts(t, v6, flags, payload, true)
}

// tsoSuperOpts is tsoSuper with or without TCP options (timestamps).
func tsoSuperOpts(t *testing.T, v6 bool, flags byte, payload []byte, opts bool) (f []byte, hl, thl int) {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(factoryMAC), DstMAC: net.HardwareAddr(peerMAC), EthernetType: layers.EthernetTypeIPv4}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 5201, Seq: 0xfffff000, Ack: 99, ACK: true, Window: 512,
		Options: []layers.TCPOption{{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: make([]byte, 8)},
			{OptionType: layers.TCPOptionKindNop}, {OptionType: layers.TCPOptionKindNop}}}
	tcp.FIN, tcp.PSH, tcp.CWR = flags&tcpFIN != 0, flags&tcpPSH != 0, flags&tcpCWR != 0
	if !opts {
		tcp.Options = nil
	}
	var ip gopacket.SerializableLayer
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		l := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
		require.NoError(t, tcp.SetNetworkLayerForChecksum(l))
		ip = l
	} else {
		l := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 0xfffe, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 0, 2, 15}, DstIP: net.IP{10, 0, 2, 2}}
		require.NoError(t, tcp.SetNetworkLayerForChecksum(l))
		ip = l
	}
	buf := gopacket.NewSerializeBuffer()
	require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, tcp, gopacket.Payload(payload)))
	f = append([]byte(nil), buf.Bytes()...)
	l4 := 34
	if v6 {
		l4 = 54
	}
	thl = int(f[l4+12]>>4) * 4
	hl = l4 + thl
	binary.BigEndian.PutUint16(f[l4+16:], 0xdead) // as a stack leaves it
	if !v6 {
		binary.BigEndian.PutUint16(f[24:], 0)
		binary.BigEndian.PutUint16(f[16:], 0) // a length the engine must not trust
	}
	return f, hl, thl
}

// tsoPut writes a context descriptor with mss (if mss > 0), then super frame
// f as a TSO frame (headers in the first descriptor, the payload in chunks of
// chunk bytes), from the ring's tail, and moves the tail.
func (x *txRing) tsoPut(f []byte, hl, thl, mss, chunk int, hlDesc, tpl int) {
	if mss > 0 {
		d := x.ring.CPU[x.tail*16 : x.tail*16+16]
		clear(d)
		binary.LittleEndian.PutUint32(d[8:], uint32(mss))
		binary.LittleEndian.PutUint32(d[12:], tOWN|tCTXT|tTCMSSV)
		x.tail = (x.tail + 1) % x.n
	}
	first := x.tail
	copy(x.bufs.CPU[first*bufSize:], f[:hl])
	x.tail = (x.tail + 1) % x.n
	payload := f[hl:]
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		i := x.tail
		copy(x.bufs.CPU[i*bufSize:], payload[off:end])
		var d3 uint32 = tOWN
		if end == len(payload) {
			d3 |= tLD
		}
		x.put(i, end-off, 0, d3, 0)
		x.tail = (x.tail + 1) % x.n
	}
	x.put(first, hlDesc, 0, tOWN|tFD|tTSE|uint32(thl/4)<<tTHLShift, tpl)
	x.kick()
}

// tsoRig is a model with TSO on TX channel 0.
func tsoRig(t *testing.T) (*rig, *txRing, *capture) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 64)
	r.Wr(tCh(0)+tTxCtrl, tST|tTxTSE)
	return r, tx, &cap
}

// checkSegments decodes the segments of super frame f (its payload sent with
// mss) with gopacket and checks what the engine must have done: sizes,
// lengths, IDs, sequence numbers, flags, checksums (each segment
// re-serialised by gopacket with its own checksums must come out equal).
func checkSegments(t *testing.T, segs [][]byte, f []byte, hl, mss int, v6 bool) {
	t.Helper()
	payload := f[hl:]
	require.Len(t, segs, (len(payload)+mss-1)/mss, "segments")
	orig := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	otcp := orig.Layer(layers.LayerTypeTCP).(*layers.TCP)
	var got []byte
	for i, s := range segs {
		last := i == len(segs)-1
		p := gopacket.NewPacket(s, layers.LayerTypeEthernet, gopacket.Default)
		require.Nil(t, p.ErrorLayer(), "segment %d decodes", i)
		tcp := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		data := tcp.Payload
		want := min(mss, len(payload)-i*mss)
		var nl gopacket.NetworkLayer
		if v6 {
			ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			require.Equal(t, int(ip.Length), hl-54+want, "segment %d IPv6 payload length", i)
			nl = ip
		} else {
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			require.Equal(t, int(ip.Length), hl-14+want, "segment %d IPv4 total length", i)
			require.Equal(t, uint16(0xfffe+i), ip.Id, "segment %d IPv4 id", i)
			require.Equal(t, layers.IPv4DontFragment, ip.Flags)
			nl = ip
			data = data[:min(len(data), want)] // the MAC's padding beyond the IP length
		}
		require.Len(t, data, want, "segment %d payload", i)
		require.Equal(t, otcp.Seq+uint32(i*mss), tcp.Seq, "segment %d sequence", i)
		require.Equal(t, otcp.Ack, tcp.Ack)
		require.Equal(t, last && otcp.FIN, tcp.FIN, "segment %d FIN", i)
		require.Equal(t, last && otcp.PSH, tcp.PSH, "segment %d PSH", i)
		require.Equal(t, i == 0 && otcp.CWR, tcp.CWR, "segment %d CWR", i)
		require.True(t, tcp.ACK)
		require.Equal(t, otcp.Options, tcp.Options)
		require.GreaterOrEqual(t, len(s), 60, "padded to 60")
		// gopacket's own checksums for the decoded segment.
		require.NoError(t, tcp.SetNetworkLayerForChecksum(nl))
		buf := gopacket.NewSerializeBuffer()
		require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true},
			nl.(gopacket.SerializableLayer), tcp, gopacket.Payload(data)))
		l3 := 14
		require.Equal(t, buf.Bytes(), s[l3:l3+len(buf.Bytes())], "segment %d checksums", i)
		got = append(got, data...)
	}
	require.True(t, bytes.Equal(payload, got), "the payload, in order")
}

func TestTSOSegments(t *testing.T) {
	cases := []struct {
		name       string
		v6         bool
		flags      byte
		n, mss, ch int
	}{
		{"IPv4 3 segments and a short one", false, tcpPSH, 5000, 1448, 2048},
		{"IPv4 FIN PSH CWR", false, tcpFIN | tcpPSH | tcpCWR, 4000, 1000, 1500},
		{"IPv6", true, tcpPSH | tcpCWR, 9000, 1428, 2000},
		{"IPv4 one segment", false, tcpPSH, 700, 1448, 2048},
		{"IPv4 padded segments", false, 0, 13, 4, 2048}, // no options: 54+4 and 54+1 bytes, padded
		{"IPv6 jumbo MSS", true, 0, 20000, 8900, 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, tx, cap := tsoRig(t)
			require.NotZero(t, r.Rd(tHWF1)&tTSOEN, "HW_FEATURE1.TSOEN")
			payload := make([]byte, tc.n)
			for i := range payload {
				payload[i] = byte(i*7 + i>>8)
			}
			f, hl, thl := tsoSuperOpts(t, tc.v6, tc.flags, payload, tc.n != 13)
			if tc.mss > 1500 {
				r.Wr(tMACConfig, tRE|tTE|tDM|1<<20) // JE: jumbo frames
			}
			tx.tsoPut(f, hl, thl, tc.mss, tc.ch, hl, tc.n)
			require.NoError(t, r.m.Err())
			checkSegments(t, cap.frames, f, hl, tc.mss, tc.v6)
			// Write-back: the context descriptor with CTXT, the frame's
			// first with FD, its last with LD, every OWN clear, no error.
			require.Equal(t, uint32(tCTXT), tx.des3(0))
			require.Equal(t, uint32(tFD), tx.des3(1)&(tOWN|tFD|tLD|tES))
			last := (tx.tail + tx.n - 1) % tx.n
			require.Equal(t, uint32(tLD), tx.des3(last)&(tOWN|tLD|tES|tDE))
			c := r.m.Counters()
			require.Equal(t, uint64(len(cap.frames)), c.TxFrames)
			require.Equal(t, uint64(1), c.TxTSOFrames)
			require.Equal(t, uint64(len(cap.frames)), c.TxTSOSegments)
			var wire uint64
			for _, s := range cap.frames {
				wire += uint64(len(s))
			}
			require.Equal(t, wire, c.TxBytes)
			require.Equal(t, uint64(len(f)), c.TxBytes-c.TxTSOAdded-c.TxPadding, "the frame as the driver gave it")
			if tc.n == 13 {
				require.Equal(t, uint64(3*(60-(hl+4))+60-(hl+1)), c.TxPadding, "every segment padded")
			}
			// The MSS stays: a second frame without a context descriptor.
			cap.frames = nil
			tx.tsoPut(f, hl, thl, 0, tc.ch, hl, tc.n)
			require.NoError(t, r.m.Err())
			checkSegments(t, cap.frames, f, hl, tc.mss, tc.v6)
		})
	}
}

// TestTSOFaults: what the engine would reject or send corrupt is a fault; the
// frame is written back with DE and ES, nothing is sent, the ring moves on.
func TestTSOFaults(t *testing.T) {
	payload := make([]byte, 3000)
	cases := []struct {
		name string
		prep func(r *rig, tx *txRing, f []byte, hl, thl int) // queues the bad frame
		want string
	}{
		{"no MSS", func(r *rig, tx *txRing, f []byte, hl, thl int) { tx.tsoPut(f, hl, thl, 0, 2048, hl, len(f)-hl) }, "no MSS"},
		{"HL not the headers", func(r *rig, tx *txRing, f []byte, hl, thl int) {
			tx.tsoPut(f, hl, thl, 1448, 2048, hl-4, len(f)-hl+4)
		}, "exactly the Ethernet, IP and L4 headers"},
		{"THL wrong", func(r *rig, tx *txRing, f []byte, hl, thl int) { tx.tsoPut(f, hl, thl-4, 1448, 2048, hl, len(f)-hl) }, "data offset"},
		{"TPL wrong", func(r *rig, tx *txRing, f []byte, hl, thl int) { tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl-1) }, "TPL"},
		{"channel without TSE", func(r *rig, tx *txRing, f []byte, hl, thl int) {
			r.Wr(tCh(0)+tTxCtrl, tST)
			tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl)
		}, "DMA_CH_Tx_Control.TSE"},
		{"ICMP", func(r *rig, tx *txRing, f []byte, hl, thl int) {
			f[23] = 1
			tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl)
		}, "neither TCP nor UDP"},
		{"UDP with a TCP header length", func(r *rig, tx *txRing, f []byte, hl, thl int) {
			f[23] = 17
			tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl)
		}, "8-byte UDP header"},
		{"segment beyond the largest frame", func(r *rig, tx *txRing, f []byte, hl, thl int) {
			tx.tsoPut(f, hl, thl, 9500, 2048, hl, len(f)-hl)
		}, "largest frame"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, tx, cap := tsoRig(t)
			f, hl, thl := tsoSuper(t, false, tcpPSH, payload)
			tc.prep(r, tx, f, hl, thl)
			require.Empty(t, cap.frames)
			r.expectFault(tc.want)
			last := (tx.tail + tx.n - 1) % tx.n // the status is in the frame's last descriptor
			require.Equal(t, uint32(tDE|tES), tx.des3(last)&(tOWN|tDE|tES))
			r.Wr(tCh(0)+tTxCtrl, tST|tTxTSE)
			tx.queue(frame(peerMAC, 60), false)
			tx.kick()
			require.Len(t, cap.frames, 1, "the ring moves on")
			require.NoError(t, r.m.Err())
		})
	}
}

// TestTSONotAdvertised: a core without TSOEN (the i.MX8MP configuration, or
// no checksum engine) refuses TSE in the channel and in descriptors, and
// context descriptors are refused with CDE.
func TestTSONotAdvertised(t *testing.T) {
	for _, cfg := range []Config{{Variant: IMX8MP}, {NoTxCOE: true}} {
		base := testCfg()
		base.Variant, base.NoTxCOE = cfg.Variant, cfg.NoTxCOE
		r := newRig(t, base)
		require.Zero(t, r.Rd(tHWF1)&tTSOEN, "TSOEN")
		r.bringUp()
		r.Wr(tCh(0)+tTxCtrl, tTxTSE)
		r.expectFault("TSOEN")
		var cap capture
		r.m.SetTransmit(cap.fn)
		tx := r.setupTx(0, 16)
		f, hl, thl := tsoSuper(t, false, 0, make([]byte, 2000))
		tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl)
		require.Empty(t, cap.frames)
		r.expectFault("TSOEN")
		require.Equal(t, uint32(tCTXT|tCDE), tx.des3(0))
		require.Equal(t, uint32(tDE|tES), tx.des3((tx.tail+tx.n-1)%tx.n)&(tOWN|tDE|tES))
	}
}

// TestTSOMSSFromChannelControl: DMA_CH_Control.MSS is the MSS until a
// context descriptor sets one.
func TestTSOMSSFromChannelControl(t *testing.T) {
	r, tx, cap := tsoRig(t)
	r.Wr(tCh(0)+tChCtrl, 1000)
	f, hl, thl := tsoSuper(t, false, tcpPSH, make([]byte, 2500))
	tx.tsoPut(f, hl, thl, 0, 2048, hl, len(f)-hl)
	require.NoError(t, r.m.Err())
	checkSegments(t, cap.frames, f, hl, 1000, false)
}

// TestTSONoAllocs: segmenting a frame allocates nothing once the batch
// buffers have grown.
func TestTSONoAllocs(t *testing.T) {
	r, tx, _ := tsoRig(t)
	n := 0
	r.m.SetTransmit(func([]byte) { n++ })
	f, hl, thl := tsoSuper(t, false, tcpPSH, make([]byte, 30000))
	tx.tsoPut(f, hl, thl, 1448, 2048, hl, len(f)-hl)
	allocs := testing.AllocsPerRun(50, func() { tx.tsoPut(f, hl, thl, 0, 2048, hl, len(f)-hl) })
	require.NoError(t, r.m.Err())
	require.Equal(t, (1+1+50)*21, n, "segments sent (AllocsPerRun runs once more to warm up)")
	require.Zero(t, allocs, "allocations per TSO frame")
}

// TestUSOSegments: a UDP super frame (stmmac_tso_xmit with SKB_GSO_UDP_L4:
// THL 2) leaves as datagrams of MSS bytes, each with its own lengths, IPv4
// id and checksums.
func TestUSOSegments(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		r, tx, cap := tsoRig(t)
		payload := make([]byte, 4000)
		for i := range payload {
			payload[i] = byte(i * 13)
		}
		f := refFrame(t, v6, false, false, payload)
		l4 := 34
		if v6 {
			l4 = 54
		}
		hl, mss := l4+8, 1200
		binary.BigEndian.PutUint16(f[l4+6:], 0xbeef) // the engine computes it
		tx.tsoPut(f, hl, 8, mss, 1500, hl, len(payload))
		require.NoError(t, r.m.Err())
		require.Len(t, cap.frames, 4)
		var got []byte
		for i, s := range cap.frames {
			p := gopacket.NewPacket(s, layers.LayerTypeEthernet, gopacket.Default)
			udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			want := min(mss, len(payload)-i*mss)
			require.Equal(t, 8+want, int(udp.Length), "v6 %v segment %d UDP length", v6, i)
			nl := p.NetworkLayer()
			if ip, ok := nl.(*layers.IPv4); ok {
				require.Equal(t, uint16(i), ip.Id-binary.BigEndian.Uint16(f[18:]), "IPv4 id + %d", i)
			}
			data := udp.Payload[:want]
			require.NoError(t, udp.SetNetworkLayerForChecksum(nl))
			buf := gopacket.NewSerializeBuffer()
			require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true},
				nl.(gopacket.SerializableLayer), udp, gopacket.Payload(data)))
			require.Equal(t, buf.Bytes(), s[14:14+len(buf.Bytes())], "v6 %v segment %d checksums", v6, i)
			got = append(got, data...)
		}
		require.Equal(t, payload, got)
	}
}
