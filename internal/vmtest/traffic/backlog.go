package traffic

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
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
