package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

// ifreqCall opens a datagram socket for an interface ioctl.
func ifreqCall(ifname string, req uint, set func(*unix.Ifreq) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	if set != nil {
		if err := set(ifr); err != nil {
			return err
		}
	}
	return unix.IoctlIfreq(fd, req, ifr)
}

// setAddr sets the interface's IPv4 address and netmask (SIOCSIFADDR,
// SIOCSIFNETMASK; netdevice(7)).
func setAddr(ifname string, addr [4]byte, prefix int) error {
	err := ifreqCall(ifname, unix.SIOCSIFADDR, func(r *unix.Ifreq) error { return r.SetInet4Addr(addr[:]) })
	if err != nil {
		return fmt.Errorf("SIOCSIFADDR %s: %w", ifname, err)
	}
	mask := net.CIDRMask(prefix, 32)
	err = ifreqCall(ifname, unix.SIOCSIFNETMASK, func(r *unix.Ifreq) error { return r.SetInet4Addr(mask) })
	if err != nil {
		return fmt.Errorf("SIOCSIFNETMASK %s: %w", ifname, err)
	}
	return nil
}

// setUp sets or clears IFF_UP, keeping the other flags; the counters are read
// before and after (book.go).
func setUp(ifname string, up bool) error {
	checkpoint(ifname, fmt.Sprintf("before IFF_UP=%v", up))
	defer checkpoint(ifname, fmt.Sprintf("IFF_UP=%v", up))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS %s: %w", ifname, err)
	}
	flags := ifr.Uint16()
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS %s up=%v: %w", ifname, up, err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetSock is an AF_PACKET raw socket bound to one interface: what the
// traffic.Client sends and receives through in the guest.
type packetSock struct {
	fd  int
	buf []byte
}

func openPacket(ifname string) (*packetSock, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("socket AF_PACKET: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET to %s: %w", ifname, err)
	}
	// Straight to the driver (packet(7) PACKET_QDISC_BYPASS): a full ring is
	// an error the client retries, in order. Through the qdisc, a frame the
	// driver refused with NETDEV_TX_BUSY is requeued and one sent after it
	// can overtake it: seen once in 10,000 with igb.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("PACKET_QDISC_BYPASS on %s: %w", ifname, err)
	}
	// Room for a window of frames while the client checks the previous one.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
	return &packetSock{fd: fd, buf: make([]byte, 2048)}, nil
}

func (s *packetSock) close() { unix.Close(s.fd) }

func (s *packetSock) send(f []byte) error {
	_, err := unix.Write(s.fd, f)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOBUFS) {
		return fmt.Errorf("%w: %v", traffic.ErrFull, err)
	}
	return err
}

// recv returns the next frame the interface received (not the ones it sent),
// waiting at most a millisecond for one.
func (s *packetSock) recv() ([]byte, bool) {
	for tries := 0; tries < 2; tries++ {
		n, from, err := unix.Recvfrom(s.fd, s.buf, 0)
		if err == nil {
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				tries--
				continue
			}
			return s.buf[:n], true
		}
		if !errors.Is(err, unix.EAGAIN) {
			return nil, false
		}
		if tries == 0 {
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}, 1)
		}
	}
	return nil, false
}

// ping sends n ICMP echo requests to the peer (raw socket, one at a time) and
// wants every reply, with its identifier, sequence number and payload.
func ping(c *check, p *plan, n int) { pingSize(c, p, n, 56) }

// pingSize is ping with size bytes of echo payload, never fragmented
// (IP_PMTUDISC_DO: a payload over the MTU is an error, not fragments): the
// frames each way are 14+20+8+size bytes.
func pingSize(c *check, p *plan, n, size int) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		c.errorf("raw ICMP socket: %v", err)
		return
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		c.errorf("IP_MTU_DISCOVER: %v", err)
		return
	}
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	id := uint16(os.Getpid())
	to := &unix.SockaddrInet4{Addr: p.peerIP}
	buf := make([]byte, 65536)
	got := 0
	for seq := 1; seq <= n; seq++ {
		req := echoRequest(id, uint16(seq), size)
		sent := time.Now()
		if err := unix.Sendto(fd, req, 0, to); err != nil {
			c.errorf("sendto %v: %v", p.peerIP, err)
			return
		}
		deadline := sent.Add(5 * time.Second)
		for time.Now().Before(deadline) {
			k, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // timeout: look at the deadline
			}
			if isEchoReply(buf[:k], p.peerIP, id, uint16(seq), req[8:]) {
				got++
				c.logf("reply %d (%d-byte frames) from %d.%d.%d.%d in %v", seq, 42+size, p.peerIP[0], p.peerIP[1], p.peerIP[2], p.peerIP[3],
					time.Since(sent).Round(time.Microsecond))
				break
			}
		}
	}
	if got != n {
		c.errorf("%d of %d echo requests answered", got, n)
	}
}

// echoRequest is an ICMP echo request (RFC 792) with an n-byte payload.
func echoRequest(id, seq uint16, n int) []byte {
	b := make([]byte, 8+n)
	b[0] = 8
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(i + int(seq))
	}
	binary.BigEndian.PutUint16(b[2:], inetChecksum(b))
	return b
}

// isEchoReply checks an IPv4 packet as a raw ICMP socket returns it.
func isEchoReply(pkt []byte, from [4]byte, id, seq uint16, payload []byte) bool {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return false
	}
	ihl := int(pkt[0]&0xf) * 4
	if len(pkt) < ihl+8 || [4]byte(pkt[12:16]) != from {
		return false
	}
	icmp := pkt[ihl:]
	return icmp[0] == 0 && binary.BigEndian.Uint16(icmp[4:]) == id && binary.BigEndian.Uint16(icmp[6:]) == seq &&
		string(icmp[8:]) == string(payload) && inetChecksum(icmp) == 0
}

// inetChecksum is the Internet checksum (RFC 1071).
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
