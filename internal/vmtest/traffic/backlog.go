package traffic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// QEMU reads its -netdev dgram socket only while the guest's receive ring has
// room, and the socket holds about 200 KiB of datagrams by default
// (net.core.rmem_default, counted with the kernel's per-packet overhead: some
// 90 full-size frames). A peer that sends a burst larger than that loses
// frames in QEMU's socket before the NIC model sees them. When QEMU's socket
// is on this host, the peer therefore watches that socket's receive queue in
// /proc/net/udp and holds back while it is more than half full; it also reads
// the socket's drop counter, so a loss there is reported as such.

// udpSocketStat is one line of /proc/net/udp.
type udpSocketStat struct {
	rxQueue int // bytes queued for reading (with per-packet overhead)
	drops   int // datagrams the socket dropped
}

// procNetUDP is where the kernel lists IPv4 UDP sockets (a variable for tests).
var procNetUDP = "/proc/net/udp"

// parseProcNetUDP finds the socket bound to addr (IPv4) in the text of
// /proc/net/udp.
func parseProcNetUDP(text []byte, addr netip.AddrPort) (udpSocketStat, bool) {
	a := addr.Addr().Unmap()
	if !a.Is4() {
		return udpSocketStat{}, false
	}
	ip4 := a.As4()
	// The kernel prints the address as the hex of its in-memory (network
	// order) u32 read as a host integer: little-endian on x86 and arm64.
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip4[3], ip4[2], ip4[1], ip4[0], addr.Port())
	wantAny := fmt.Sprintf("00000000:%04X", addr.Port())
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
		if len(f) < 13 || (f[1] != want && f[1] != wantAny) {
			continue
		}
		_, rx, ok := strings.Cut(f[4], ":")
		if !ok {
			continue
		}
		q, err1 := strconv.ParseUint(rx, 16, 32)
		d, err2 := strconv.ParseUint(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		return udpSocketStat{rxQueue: int(q), drops: int(d)}, true
	}
	return udpSocketStat{}, false
}

// remoteSocketStat reads the receive queue and drop count of the local UDP
// socket bound to addr; false when it is not on this host or unreadable.
func remoteSocketStat(addr netip.AddrPort) (udpSocketStat, bool) {
	if !addr.IsValid() || !addr.Addr().Unmap().IsLoopback() {
		return udpSocketStat{}, false
	}
	b, err := os.ReadFile(procNetUDP)
	if err != nil {
		return udpSocketStat{}, false
	}
	return parseProcNetUDP(b, addr)
}

// DefaultMaxBacklog is the bytes a sender lets wait in QEMU's socket before
// it holds back: half of net.core.rmem_default's usual 208 KiB.
const DefaultMaxBacklog = 96 << 10

// waitBacklog waits while the local UDP socket bound to addr holds more than
// max bytes, polling every 200 µs, and passes each reading to seen. It
// returns whether it waited, and an error after timeout or when done closes.
// A socket it cannot find (not on this host, closed) does not hold it back.
func waitBacklog(addr netip.AddrPort, max int, timeout time.Duration, done <-chan struct{}, seen func(udpSocketStat)) (bool, error) {
	deadline := time.Now().Add(timeout)
	for waited := false; ; waited = true {
		st, ok := remoteSocketStat(addr)
		if ok && seen != nil {
			seen(st)
		}
		if !ok || st.rxQueue <= max {
			return waited, nil
		}
		if time.Now().After(deadline) {
			return waited, fmt.Errorf("QEMU's socket still holds %d bytes after %v: the guest stopped taking frames", st.rxQueue, timeout)
		}
		select {
		case <-done:
			return waited, errClosedWaiting
		case <-time.After(200 * time.Microsecond):
		}
	}
}

var errClosedWaiting = errors.New("closed while QEMU's socket drained")

// Backlog holds back a forwarder that writes frames into QEMU's -netdev dgram
// socket at addr (a bridge between a peer and QEMU, which the peer's own
// throttle cannot see past): Wait returns once the socket holds at most
// DefaultMaxBacklog bytes, checking every 8th call. It is safe for
// concurrent use.
type Backlog struct {
	addr    netip.AddrPort
	timeout time.Duration
	calls   atomic.Uint64
	drops0  int // the socket's drop count at NewBacklog (-1: unknown)
	mu      sync.Mutex
	drops   int // at the last reading
	waits   int
}

// NewBacklog watches QEMU's socket at addr; a Wait gives up after timeout.
func NewBacklog(addr netip.AddrPort, timeout time.Duration) *Backlog {
	b := &Backlog{addr: addr, timeout: timeout, drops0: -1, drops: -1}
	if st, ok := remoteSocketStat(addr); ok {
		b.drops0, b.drops = st.drops, st.drops
	}
	return b
}

// Wait holds the caller while QEMU's socket is more than DefaultMaxBacklog
// full; it returns an error when the socket does not drain within the
// timeout.
func (b *Backlog) Wait() error {
	if b.calls.Add(1)%8 != 1 {
		return nil
	}
	waited, err := waitBacklog(b.addr, DefaultMaxBacklog, b.timeout, nil, b.seen)
	if waited {
		b.mu.Lock()
		b.waits++
		b.mu.Unlock()
	}
	return err
}

func (b *Backlog) seen(st udpSocketStat) {
	b.mu.Lock()
	if b.drops0 < 0 {
		b.drops0 = st.drops
	}
	b.drops = st.drops
	b.mu.Unlock()
}

// Stats returns how many datagrams the socket dropped since NewBacklog (or
// since it was first found; -1 if never), read now or, once the socket is
// gone, at the last reading; and how many Waits held the caller back.
func (b *Backlog) Stats() (drops, waits int) {
	if st, ok := remoteSocketStat(b.addr); ok {
		b.seen(st)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drops0 < 0 {
		return -1, b.waits
	}
	return b.drops - b.drops0, b.waits
}
