package vmtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// IPPeer is the host end of a served model's wire in the Linux-driver tier: a
// sim.Link the model is attached to. It answers ARP requests and ICMP echo
// requests for its own IPv4 address itself, pings the guest (once the guest's
// ARP request has told it the guest's addresses), and forwards every other
// frame both ways to a traffic.Peer over UDP (one frame per datagram), so the
// guest's frame streams reach the same peer as in the igb tier.
type IPPeer struct {
	mac   net.HardwareAddr // immutable
	ip    [4]byte          // immutable
	pings int              // immutable: echo requests to send the guest
	conn  *net.UDPConn     // immutable: to and from the traffic peer

	recv  sim.Receiver // guarded by mu
	mu    sync.Mutex
	rep   IPPeerReport
	guest struct {
		mac net.HardwareAddr
		ip  [4]byte
	} // guarded by mu
	pinging bool    // guarded by mu
	sink    tcpSink // guarded by mu

	out    chan []byte // frames for the model, delivered by deliverLoop
	done   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// IPPeerReport is what the IPPeer saw and did.
type IPPeerReport struct {
	FromModel, ToModel uint64 // frames each way (all kinds)
	ARPAnswered        int    // ARP requests for the peer's address answered
	EchoAnswered       int    // ICMP echo requests from the guest answered
	PingsSent          int    // echo requests sent to the guest
	PingsAnswered      int    // and the guest's replies that matched
	Forwarded          int    // frames from the model passed to the traffic peer
	// ARPFromModel counts ARP frames from the guest: 42 bytes of ARP that the
	// MAC pads to the 60-byte minimum (18 bytes the guest's tx_bytes do not
	// count but the wire, and the model, do).
	ARPFromModel int
	TCP          TCPReport // the TCP sink's (netpeer_tcp.go)
	UDP          UDPReport // the UDP sink's (netpeer_udp.go)
	Errors       []string
}

// NewIPPeer returns a peer with address ip and mac that forwards other frames
// to the traffic peer at trafficAddr, and sends pings echo requests to the
// guest after it first hears from it.
func NewIPPeer(mac net.HardwareAddr, ip netip.Addr, trafficAddr *net.UDPAddr, pings int) (*IPPeer, error) {
	if len(mac) != 6 || !ip.Is4() {
		return nil, fmt.Errorf("vmtest: IPPeer wants a 6-byte MAC and an IPv4 address, got %v %v", mac, ip)
	}
	conn, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, trafficAddr)
	if err != nil {
		return nil, fmt.Errorf("vmtest: IPPeer socket to the traffic peer: %w", err)
	}
	_ = conn.SetReadBuffer(8 << 20)
	p := &IPPeer{mac: append(net.HardwareAddr(nil), mac...), ip: ip.As4(), pings: pings, conn: conn,
		out: make(chan []byte, 4096), done: make(chan struct{})}
	p.wg.Add(2)
	go p.readLoop()
	go p.deliverLoop()
	return p, nil
}

// Send implements sim.Link: a frame the model put on the wire.
func (p *IPPeer) Send(frame []byte) error {
	select {
	case <-p.done:
		return sim.ErrLinkClosed
	default:
	}
	p.mu.Lock()
	p.rep.FromModel++
	p.mu.Unlock()
	if len(frame) < 14 {
		return nil
	}
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0806:
		p.mu.Lock()
		p.rep.ARPFromModel++
		p.mu.Unlock()
		if len(frame) != 60 {
			p.problem("ARP frame of %d bytes from the model: want 42 padded to 60", len(frame))
		}
		if p.arp(frame) {
			return nil
		}
	case 0x0800:
		if p.tcp(frame) || p.udp(frame) || p.ipv4(frame) { // netpeer_tcp.go, netpeer_udp.go: the sinks
			return nil
		}
	}
	p.mu.Lock()
	p.rep.Forwarded++
	p.mu.Unlock()
	if _, err := p.conn.Write(frame); err != nil {
		p.problem("forward to the traffic peer: %v", err)
	}
	return nil
}

// SetReceiver implements sim.Link.
func (p *IPPeer) SetReceiver(r sim.Receiver) {
	p.mu.Lock()
	p.recv = r
	p.mu.Unlock()
}

// Close implements sim.Link.
func (p *IPPeer) Close() error {
	p.closed.Do(func() {
		close(p.done)
		p.conn.Close()
	})
	p.wg.Wait()
	return nil
}

// Report returns what the peer has seen so far.
func (p *IPPeer) Report() IPPeerReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rep
	r.Errors = append([]string(nil), r.Errors...)
	return r
}

func (p *IPPeer) problem(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rep.Errors) < 20 {
		p.rep.Errors = append(p.rep.Errors, fmt.Sprintf(format, args...))
	}
}

// toModel queues a frame for the model (delivered from deliverLoop, never from
// inside the model's own Send).
func (p *IPPeer) toModel(f []byte) {
	select {
	case p.out <- f:
	case <-p.done:
	}
}

func (p *IPPeer) deliverLoop() {
	defer p.wg.Done()
	for {
		select {
		case f := <-p.out:
			p.mu.Lock()
			r := p.recv
			p.rep.ToModel++
			p.mu.Unlock()
			if r != nil {
				r(f)
			}
		case <-p.done:
			return
		}
	}
}

func (p *IPPeer) readLoop() {
	defer p.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := p.conn.Read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.problem("read from the traffic peer: %v", err)
			}
			return
		}
		p.toModel(append([]byte(nil), buf[:n]...))
	}
}

// arp answers an Ethernet/IPv4 ARP request for the peer's address (RFC 826)
// and learns the guest's addresses from it.
func (p *IPPeer) arp(f []byte) bool {
	a := f[14:]
	if len(a) < 28 || binary.BigEndian.Uint16(a[0:]) != 1 || binary.BigEndian.Uint16(a[2:]) != 0x0800 || a[4] != 6 || a[5] != 4 {
		return false
	}
	op := binary.BigEndian.Uint16(a[6:])
	sha, spa, tpa := a[8:14], [4]byte(a[14:18]), [4]byte(a[24:28])
	if op == 2 && tpa == p.ip {
		return true // the guest answering our own (unused) request
	}
	if op != 1 || tpa != p.ip {
		return false
	}
	p.learn(sha, spa)
	r := make([]byte, 60) // 42 bytes of ARP, padded to the 60-byte minimum frame
	copy(r[0:], sha)
	copy(r[6:], p.mac)
	binary.BigEndian.PutUint16(r[12:], 0x0806)
	binary.BigEndian.PutUint16(r[14:], 1)
	binary.BigEndian.PutUint16(r[16:], 0x0800)
	r[18], r[19] = 6, 4
	binary.BigEndian.PutUint16(r[20:], 2)
	copy(r[22:], p.mac)
	copy(r[28:], p.ip[:])
	copy(r[32:], sha)
	copy(r[38:], spa[:])
	p.mu.Lock()
	p.rep.ARPAnswered++
	p.mu.Unlock()
	p.toModel(r)
	return true
}

// learn records the guest's addresses and starts pinging it once.
func (p *IPPeer) learn(mac []byte, ip [4]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.guest.mac = append(net.HardwareAddr(nil), mac...)
	p.guest.ip = ip
	if !p.pinging && p.pings > 0 {
		p.pinging = true
		p.wg.Add(1)
		go p.pingLoop()
	}
}

const icmpPingID = 0x584e // "XN"

func (p *IPPeer) pingLoop() {
	defer p.wg.Done()
	p.mu.Lock()
	gmac, gip := p.guest.mac, p.guest.ip
	p.mu.Unlock()
	for seq := 1; seq <= p.pings; seq++ {
		select {
		case <-p.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		f := ipv4Frame(gmac, p.mac, p.ip, gip, icmpEcho(8, icmpPingID, uint16(seq), 48))
		p.mu.Lock()
		p.rep.PingsSent++
		p.mu.Unlock()
		p.toModel(f)
	}
}

// ipv4 handles ICMP for the peer's address: echo requests are answered, echo
// replies to the peer's own pings counted.
func (p *IPPeer) ipv4(f []byte) bool {
	ip, ihl, total, ok := p.forPeer(f, 1)
	if !ok {
		return false
	}
	if ihl < 20 || total < ihl+8 || total > len(ip) || inetChecksum(ip[:ihl]) != 0 {
		p.problem("malformed IPv4/ICMP frame from the guest (%d bytes)", len(f))
		return true
	}
	icmp := ip[ihl:total]
	if inetChecksum(icmp) != 0 {
		p.problem("ICMP checksum wrong in a frame from the guest")
		return true
	}
	src := [4]byte(ip[12:16])
	switch icmp[0] {
	case 8:
		reply := append([]byte(nil), icmp...)
		reply[0] = 0
		reply[2], reply[3] = 0, 0
		binary.BigEndian.PutUint16(reply[2:], inetChecksum(reply))
		p.mu.Lock()
		p.rep.EchoAnswered++
		p.mu.Unlock()
		p.toModel(ipv4Frame(f[6:12], p.mac, p.ip, src, reply))
	case 0:
		want := icmpEcho(0, icmpPingID, binary.BigEndian.Uint16(icmp[6:]), 48)
		p.mu.Lock()
		if binary.BigEndian.Uint16(icmp[4:]) == icmpPingID && string(icmp) == string(want) && src == p.guest.ip {
			p.rep.PingsAnswered++
		} else {
			p.rep.Errors = append(p.rep.Errors, fmt.Sprintf("unexpected echo reply from %v id %#x", src, binary.BigEndian.Uint16(icmp[4:])))
		}
		p.mu.Unlock()
	}
	return true
}

// forPeer reports whether f is an IPv4 packet of protocol proto for the
// peer's address; ip is its IP header and what follows, ihl and total its
// header and total lengths as it gives them (for the caller to check).
func (p *IPPeer) forPeer(f []byte, proto byte) (ip []byte, ihl, total int, ok bool) {
	ip = f[14:]
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != proto || [4]byte(ip[16:20]) != p.ip {
		return nil, 0, 0, false
	}
	return ip, int(ip[0]&0xf) * 4, int(binary.BigEndian.Uint16(ip[2:])), true
}

// icmpEcho is an ICMP echo message of the given type with n payload bytes.
func icmpEcho(typ uint8, id, seq uint16, n int) []byte {
	b := make([]byte, 8+n)
	b[0] = typ
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	binary.BigEndian.PutUint16(b[2:], inetChecksum(b))
	return b
}

// ipv4Frame wraps payload (ICMP) in IPv4 (RFC 791, TTL 64, no options) and
// Ethernet headers.
func ipv4Frame(dst, src net.HardwareAddr, from, to [4]byte, payload []byte) []byte {
	return ipv4FrameProto(dst, src, from, to, 1, payload)
}

// ipv4FrameProto is ipv4Frame for IP protocol proto, padded to the 60-byte
// minimum frame (a TCP ACK has 54 bytes).
func ipv4FrameProto(dst, src net.HardwareAddr, from, to [4]byte, proto byte, payload []byte) []byte {
	f := make([]byte, max(60, 14+20+len(payload)))
	copy(f[0:], dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(payload)))
	ip[8], ip[9] = 64, proto
	copy(ip[12:], from[:])
	copy(ip[16:], to[:])
	binary.BigEndian.PutUint16(ip[10:], inetChecksum(ip[:20]))
	copy(ip[20:], payload)
	return f
}

// inetChecksum is the Internet checksum (RFC 1071); 0 over a valid message.
func inetChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
