package fecsim

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xnic-dev/xnic/sim"
)

// The transmit accelerator's checksum insertion (i.MX 6/8 RM, ENET "IP
// accelerator function" and the enhanced TxBD's PINS/IINS bits; TACC
// PROCHK/IPCHK; Linux fec_main.c fec_enet_txq_submit_skb and
// fec_enet_clear_csum; QEMU hw/net/imx_fec.c imx_enet_do_tx).
//
// Two ways ask for it: per frame, the last enhanced BD's esc.PINS (protocol
// checksum) and esc.IINS (IPv4 header checksum); for every frame, TACC.PROCHK
// and TACC.IPCHK. Linux never writes TACC and relies on the BD bits alone, so
// the BD bits do not need TACC. The engine parses the frame itself: Ethernet
// with at most one VLAN tag, IPv4 (not a fragment) or IPv6 without extension
// headers, then TCP or UDP, or ICMP over IPv4 (whose checksum covers the ICMP
// message alone, no pseudo header). It finds the fields on its own and
// cannot be told where they are. Per the RM the fields must be cleared first: the engine adds
// whatever the field holds into its sum, so a field the driver left non-zero
// leaves with a wrong checksum. IPv6 has no header checksum: IINS is ignored
// there. Insertion needs the whole frame in the FIFO (TFWR.STRFWD).
//
// The model records a fault, and sends the frame as the hardware would, for:
//   - PINS or IINS on a frame the engine cannot parse (not IP, an IPv4
//     fragment, another protocol, lengths that do not fit): it leaves without
//     the checksum (an IPv4 header still gets its own where IINS asks);
//   - a checksum field that is not zero: it leaves with a wrong checksum;
//   - insertion into a frame whose FCS the driver supplied (TC clear): that
//     FCS no longer matches.
//
// TACC's global insertion leaves frames it cannot parse alone without a fault
// (the RM: other frames are not modified), but a field left non-zero is a
// fault there too.

// ipFrame is where a frame's IP and L4 headers are, as the engine finds them.
type ipFrame struct {
	l3, l4 int  // offsets of the IP and the L4 header
	v4     bool // IPv4 (else IPv6)
	proto  byte
	field  int // offset of the L4 checksum from the frame's start; 0: none
}

var errParse = errors.New("the accelerator cannot parse the frame")

// parseIP finds the headers the way the engine does.
func parseIP(f []byte) (ipFrame, error) {
	var p ipFrame
	if len(f) < 14 {
		return p, fmt.Errorf("%w: %d bytes", errParse, len(f))
	}
	et, l3 := binary.BigEndian.Uint16(f[12:]), 14
	if et == 0x8100 || et == 0x88A8 {
		if len(f) < 18 {
			return p, fmt.Errorf("%w: truncated VLAN tag", errParse)
		}
		et, l3 = binary.BigEndian.Uint16(f[16:]), 18
	}
	p.l3 = l3
	ip := f[l3:]
	switch et {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&0xF < 5 || len(ip) < int(ip[0]&0xF)*4 {
			return p, fmt.Errorf("%w: malformed IPv4 header", errParse)
		}
		p.v4, p.proto, p.l4 = true, ip[9], l3+int(ip[0]&0xF)*4
		if binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0 {
			return p, fmt.Errorf("%w: an IPv4 fragment (its header checksum alone can be inserted)", errParse)
		}
	case 0x86DD:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return p, fmt.Errorf("%w: malformed IPv6 header", errParse)
		}
		p.proto, p.l4 = ip[6], l3+40
	default:
		return p, fmt.Errorf("%w: ethertype %#04x is not IP", errParse, et)
	}
	off := 0
	switch {
	case p.proto == 6:
		off = 16
	case p.proto == 17:
		off = 6
	case p.proto == 1 && p.v4:
		off = 2
	}
	if off != 0 && p.l4+off+2 <= len(f) {
		p.field = p.l4 + off
	}
	return p, nil
}

// checksumLocked inserts what ip (IPv4 header) and l4 (protocol) ask into
// the frame in the FIFO. perFrame: the BD asked (PINS/IINS), not TACC. at
// names the frame's BD in faults.
func (m *Model) checksumLocked(f []byte, ip, l4, perFrame bool, at uint32) {
	p, err := parseIP(f)
	ip = ip && p.v4 // IPv6 has no header checksum; a sound IPv4 header gets one
	if err == nil && l4 && p.field == 0 {
		err = fmt.Errorf("%w: IP protocol %d is not TCP, UDP or (IPv4) ICMP", errParse, p.proto)
	}
	if err != nil && (l4 || !ip) {
		if perFrame {
			m.faults.Add("tx", "TxBD", uint64(at), "checksum insertion (esc PINS/IINS): %v; the frame leaves without the checksum", err)
		}
		l4 = false
	}
	var oldIP, oldL4 uint16
	if ip {
		oldIP = binary.BigEndian.Uint16(f[p.l3+10:])
	}
	if l4 {
		oldL4 = binary.BigEndian.Uint16(f[p.field:])
	}
	if oldIP != 0 || oldL4 != 0 {
		m.faults.Add("tx", "TxBD", uint64(at), "checksum insertion with the fields not cleared (IPv4 header %#04x, L4 %#04x): the accelerator adds them into its sums (the RM: the checksum field must be cleared; Linux fec_enet_clear_csum), so the frame leaves with a wrong checksum", oldIP, oldL4)
	}
	if l4 {
		if err := insertL4(f, p); err != nil {
			m.faults.Add("tx", "TxBD", uint64(at), "checksum insertion: %v; the frame leaves without the checksum", err)
		} else {
			addInto(f[p.field:], oldL4)
		}
	}
	if ip {
		insertIPv4(f[p.l3:p.l4])
		addInto(f[p.l3+10:], oldIP)
	}
}

// insertL4 computes the protocol checksum: TCP and UDP with their pseudo
// header (sim.InsertFull), ICMP over the ICMP message alone (the RM's
// checksum calculation: no pseudo header for ICMP).
func insertL4(f []byte, p ipFrame) error {
	if p.proto != 1 {
		return sim.InsertFull(f, false)
	}
	tot := int(binary.BigEndian.Uint16(f[p.l3+2:]))
	end := p.l3 + tot
	if end > len(f) || end < p.l4+4 {
		return fmt.Errorf("%w: IPv4 total length %d does not fit the frame", sim.ErrCsum, tot)
	}
	msg := f[p.l4:end]
	binary.BigEndian.PutUint16(msg[2:], 0)
	binary.BigEndian.PutUint16(msg[2:], ^sim.Fold(sim.OnesSum(0, msg)))
	return nil
}

// insertIPv4 computes an IPv4 header's checksum into it.
func insertIPv4(h []byte) {
	binary.BigEndian.PutUint16(h[10:], 0)
	binary.BigEndian.PutUint16(h[10:], ^sim.Fold(sim.OnesSum(0, h)))
}

// addInto makes the checksum at c what the engine stores when the field held
// old before it summed: old counts in the sum (nothing changes for 0).
func addInto(c []byte, old uint16) {
	if old == 0 {
		return
	}
	s := uint32(^binary.BigEndian.Uint16(c)) + uint32(old)
	binary.BigEndian.PutUint16(c, ^sim.Fold(s))
}
