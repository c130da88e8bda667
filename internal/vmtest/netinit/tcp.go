package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// tcpStreamChunk is what one write hands the socket: large, so the stack
// builds super frames for a driver with TSO to hand the device.
const tcpStreamChunk = 64 << 10

// tcpStream sends p.tcpBytes bytes (guestproto.NetTCPByte) over TCP to the
// host peer's sink, half-closes and waits for the sink's FIN: the host checks
// what arrived, segment by segment.
func tcpStream(c *check, p *plan) {
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
