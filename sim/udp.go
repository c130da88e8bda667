package sim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest frame a UDP link carries (a 9728-byte jumbo frame
// fits; QEMU's dgram netdev uses 69632-byte buffers, IPv4 UDP allows 65507).
const maxDatagram = 65507

// UDPLink is a wire made of UDP datagrams, one Ethernet frame per datagram, as
// QEMU's `-netdev dgram,local.type=inet,...,remote.type=inet,...`: frames sent go
// to Remote, frames arriving on Local from anywhere go to the receiver. A
// goroutine started by NewUDPLink reads the socket until Close; the receiver runs
// on it. Safe for concurrent use.
type UDPLink struct {
	conn   *net.UDPConn   // immutable
	remote netip.AddrPort // immutable
	recv   receiverSlot
	cnt    linkCounters
	closed atomic.Bool
	done   chan struct{} // closed when the reader goroutine has returned

	errMu   sync.Mutex
	readErr error // the error that stopped the reader, if not Close; guarded by errMu
}

// NewUDPLink binds local ("127.0.0.1:0" picks a free port; see LocalAddr) and
// sends to remote.
func NewUDPLink(local, remote string) (*UDPLink, error) {
	la, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		return nil, fmt.Errorf("sim: UDP link local address %q: %w", local, err)
	}
	ra, err := netip.ParseAddrPort(remote)
	if err != nil {
		return nil, fmt.Errorf("sim: UDP link remote address %q (want ip:port): %w", remote, err)
	}
	conn, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, fmt.Errorf("sim: UDP link: bind %s: %w", local, err)
	}
	return newUDPLink(conn, ra), nil
}

func newUDPLink(conn *net.UDPConn, remote netip.AddrPort) *UDPLink {
	l := &UDPLink{conn: conn, remote: netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()), done: make(chan struct{})}
	go l.readLoop()
	return l
}

// NewUDPPair returns two UDP links on 127.0.0.1 with ephemeral ports, each
// sending to the other (for tests).
func NewUDPPair() (*UDPLink, *UDPLink, error) {
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	ca, err := net.ListenUDP("udp", lo)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: UDP pair: %w", err)
	}
	cb, err := net.ListenUDP("udp", lo)
	if err != nil {
		ca.Close()
		return nil, nil, fmt.Errorf("sim: UDP pair: %w", err)
	}
	a := newUDPLink(ca, cb.LocalAddr().(*net.UDPAddr).AddrPort())
	b := newUDPLink(cb, ca.LocalAddr().(*net.UDPAddr).AddrPort())
	return a, b, nil
}

// LocalAddr is the bound address (with the port chosen for ":0").
func (l *UDPLink) LocalAddr() netip.AddrPort {
	return l.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Send implements Link: one datagram to the remote address.
func (l *UDPLink) Send(frame []byte) error {
	if l.closed.Load() {
		return fmt.Errorf("sim: UDP link send: %w", ErrLinkClosed)
	}
	if len(frame) > maxDatagram {
		return fmt.Errorf("sim: UDP link send of a %d-byte frame: larger than a datagram (%d)", len(frame), maxDatagram)
	}
	if _, err := l.conn.WriteToUDPAddrPort(frame, l.remote); err != nil {
		return fmt.Errorf("sim: UDP link send to %s: %w", l.remote, err)
	}
	l.cnt.sent.Add(1)
	l.cnt.sendBytes.Add(uint64(len(frame)))
	return nil
}

// SetReceiver implements Link.
func (l *UDPLink) SetReceiver(r Receiver) { l.recv.set(r) }

func (l *UDPLink) readLoop() {
	defer close(l.done)
	buf := make([]byte, maxDatagram)
	for {
		n, _, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if l.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// ICMP port unreachable from an earlier send surfaces here on Linux
			// as ECONNREFUSED: the peer is not up yet. Keep reading.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if isConnRefused(err) {
				continue
			}
			l.errMu.Lock()
			l.readErr = err
			l.errMu.Unlock()
			return
		}
		l.recv.deliver(&l.cnt, buf[:n])
	}
}

// Err is the error that stopped the reader early, if any.
func (l *UDPLink) Err() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.readErr
}

// Close implements Link: it closes the socket and waits (at most 5 s) for the
// reader goroutine to return.
func (l *UDPLink) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	err := l.conn.Close()
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("sim: UDP link close: reader did not stop within 5s")
	}
	return err
}

// Stats returns the link's counters.
func (l *UDPLink) Stats() LinkStats { return l.cnt.snapshot() }

var _ Link = (*UDPLink)(nil)
