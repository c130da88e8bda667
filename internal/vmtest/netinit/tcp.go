package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"golang.org/x/sys/unix"
)

// tcpStreamChunk is what one write hands the socket: large, so the stack
// builds super frames for a driver with TSO to hand the device.
const tcpStreamChunk = 64 << 10

// tcpStream sends p.tcpBytes bytes (guestproto.NetTCPByte) over TCP to the
// host peer's sink, half-closes and waits for the sink's FIN: the host checks
// what arrived, segment by segment. With p.tso the driver must offer TSO
// (ethtool -k: tcp-segmentation-offload on) before the stream.
func tcpStream(c *check, p *plan, ifname string) {
	if p.tso && !tsoOn(c, p, ifname) {
		return
	}
	addr := fmt.Sprintf("%d.%d.%d.%d:%d", p.peerIP[0], p.peerIP[1], p.peerIP[2], p.peerIP[3], guestproto.NetTCPPort)
	begin := time.Now()
	conn, err := net.DialTimeout("tcp4", addr, 30*time.Second)
	if err != nil {
		c.errorf("connect to the peer's sink %s: %v", addr, err)
		return
	}
	defer conn.Close()
	tc := conn.(*net.TCPConn)
	_ = tc.SetDeadline(time.Now().Add(120 * time.Second))
	buf := make([]byte, tcpStreamChunk)
	for off := 0; off < p.tcpBytes; off += len(buf) {
		n := min(len(buf), p.tcpBytes-off)
		for i := range buf[:n] {
			buf[i] = guestproto.NetTCPByte(uint64(off + i))
		}
		if _, err := tc.Write(buf[:n]); err != nil {
			c.errorf("write at byte %d of %d: %v", off, p.tcpBytes, err)
			return
		}
	}
	if err := tc.CloseWrite(); err != nil {
		c.errorf("half-close: %v", err)
		return
	}
	n, err := tc.Read(buf[:1])
	if n != 0 || !errors.Is(err, io.EOF) {
		c.errorf("after the stream the sink sent %d bytes (%v), want its FIN", n, err)
		return
	}
	c.logf("%d bytes to %s in %.2fs, the sink closed", p.tcpBytes, addr, time.Since(begin).Seconds())
}

// tsoOn reports whether ethtool -k shows TSO on for the interface (true
// without an ethtool: nothing to ask).
func tsoOn(c *check, p *plan, ifname string) bool {
	if p.ethtool == "" {
		return true
	}
	out, err := exec.Command(p.ethtool, "-k", ifname).CombinedOutput()
	if err != nil {
		c.errorf("ethtool -k %s: %v\n%s", ifname, err, out)
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp-segmentation-offload:"); ok {
			c.logf("ethtool -k %s: tcp-segmentation-offload:%s", ifname, v)
			if !strings.HasPrefix(strings.TrimSpace(v), "on") {
				c.errorf("the driver does not offer TSO on %s", ifname)
				return false
			}
			return true
		}
	}
	c.errorf("ethtool -k %s: no tcp-segmentation-offload line", ifname)
	return false
}

// udpGSO sends guestproto.NetUDPGSOBytes to the host peer's UDP sink with
// UDP_SEGMENT (the stack's UDP GSO): writes of several datagrams at once,
// which a driver with USO hands the device as one frame to cut. Each
// datagram starts with its offset in the stream (8 bytes, big-endian), the
// rest is NetTCPByte at its offsets: the sink checks each on its own.
func udpGSO(c *check, p *plan) {
	addr := &net.UDPAddr{IP: net.IPv4(p.peerIP[0], p.peerIP[1], p.peerIP[2], p.peerIP[3]), Port: guestproto.NetUDPPort}
	conn, err := net.DialUDP("udp4", nil, addr)
	if err != nil {
		c.errorf("UDP socket to %v: %v", addr, err)
		return
	}
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err == nil {
		ctlErr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, guestproto.NetUDPSegment)
		})
		if err == nil {
			err = ctlErr
		}
	}
	if err != nil {
		c.errorf("UDP_SEGMENT %d: %v", guestproto.NetUDPSegment, err)
		return
	}
	const perWrite = 10 * guestproto.NetUDPSegment
	buf := make([]byte, perWrite)
	for off := 0; off < guestproto.NetUDPGSOBytes; off += perWrite {
		for i := range buf {
			buf[i] = guestproto.NetTCPByte(uint64(off + i))
		}
		for d := 0; d < perWrite; d += guestproto.NetUDPSegment {
			binary.BigEndian.PutUint64(buf[d:], uint64(off+d))
		}
		if _, err := conn.Write(buf); err != nil {
			c.errorf("write at byte %d: %v", off, err)
			return
		}
		time.Sleep(10 * time.Millisecond) // a datagram lost to a full ring would not come back
	}
	c.logf("%d bytes in datagrams of %d to %v", guestproto.NetUDPGSOBytes, guestproto.NetUDPSegment, addr)
}
