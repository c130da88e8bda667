package nic

import (
	"errors"
	"fmt"

	"github.com/xnic-dev/xnic/dma"
)

// TxMetaCaps says which per-frame TX requests (dma.Buf.TxFlags) a TX queue
// carries out: what the kernel's xsk_tx_metadata_ops give AF_XDP.
type TxMetaCaps uint8

// The requests a driver may carry out; the bits equal dma.TxFlag*.
const (
	TxMetaTimestamp  = TxMetaCaps(dma.TxFlagTimestamp)  // TX timestamp in the completion
	TxMetaChecksum   = TxMetaCaps(dma.TxFlagChecksum)   // L4 checksum insertion
	TxMetaLaunchTime = TxMetaCaps(dma.TxFlagLaunchTime) // held until a launch time
)

// String names the capabilities as the kernel's xsk-flags do ("tx-timestamp
// tx-checksum tx-launch-time"), or "none".
func (c TxMetaCaps) String() string {
	s := ""
	for _, f := range []struct {
		bit  TxMetaCaps
		name string
	}{{TxMetaTimestamp, "tx-timestamp"}, {TxMetaChecksum, "tx-checksum"}, {TxMetaLaunchTime, "tx-launch-time"}} {
		if c&f.bit != 0 {
			if s != "" {
				s += " "
			}
			s += f.name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// TxStamp is the completion of a frame that asked for a TX timestamp.
type TxStamp struct {
	Addr uint64 // the frame's Buf.DataIOVA when it was sent: which frame this is
	Time uint64 // device-clock ns at which the frame left, when OK
	OK   bool   // false: the device took no timestamp (e.g. one was still pending)
}

// TxMetaQueue is a TxQueue that carries out per-frame TX requests.
//
// Send takes a frame with requests only if CheckTxMeta accepts it; it stops at
// the first one it does not (that frame and the rest stay with the caller),
// so a sender that wants the reason calls CheckTxMeta first. Frames with
// TxFlags zero cost nothing extra.
type TxMetaQueue interface {
	TxQueue
	// TxMeta is what this queue can do.
	TxMeta() TxMetaCaps
	// CheckTxMeta reports why the queue cannot do what b asks (an error wrapping
	// ErrTxMeta), or nil.
	CheckTxMeta(b *dma.Buf) error
	// TxStamps moves up to len(out) completions of frames that asked for a
	// timestamp into out, oldest first, and returns the count. Completions
	// the caller does not collect are kept up to StampRingSize, then dropped
	// (counted in the port's tx_hwtstamp_dropped).
	TxStamps(out []TxStamp) int
}

// ErrTxMeta is wrapped by refusals of TX requests.
var ErrTxMeta = errors.New("TX request refused")

// CheckTxRequest is the part of CheckTxMeta every driver shares: the flags are
// known and within caps, and a checksum's start and offset lie in the frame
// with room for the 16-bit checksum. Drivers add their hardware's own limits.
func CheckTxRequest(caps TxMetaCaps, b *dma.Buf) error {
	const known = dma.TxFlagTimestamp | dma.TxFlagChecksum | dma.TxFlagLaunchTime
	if b.TxFlags&^known != 0 {
		return fmt.Errorf("%w: unknown flags %#x", ErrTxMeta, b.TxFlags&^known)
	}
	if miss := TxMetaCaps(b.TxFlags) &^ caps; miss != 0 {
		return fmt.Errorf("%w: this queue cannot do %s", ErrTxMeta, miss)
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 {
		end := int(b.CsumStart) + int(b.CsumOffset) + 2
		if end > b.Len {
			return fmt.Errorf("%w: checksum at %d+%d lies beyond the %d-byte frame",
				ErrTxMeta, b.CsumStart, b.CsumOffset, b.Len)
		}
	}
	return nil
}

// L4Checksum describes a frame's L4 checksum as hardware that parses the
// frame itself finds it (dwmac's checksum engine, fec's PINS, igb's context
// descriptor): the L3 and L4 headers' offsets and the checksum field's offset
// from the L4 header.
type L4Checksum struct {
	L3Off, L4Off int  // from the frame's first byte
	IPv6         bool // an IPv6 header without extension headers
	Proto        uint8
	FieldOff     int // the checksum field, from L4Off (16 TCP, 6 UDP)
}

// ParseL4 finds a frame's TCP or UDP checksum the way a NIC does: Ethernet
// (one optional 802.1Q/802.1ad tag), IPv4 without fragmentation, or IPv6 with
// no extension header, then TCP or UDP. It reports false for anything else.
func ParseL4(f []byte) (L4Checksum, bool) {
	var c L4Checksum
	if len(f) < 14 {
		return c, false
	}
	off, et := 12, uint16(f[12])<<8|uint16(f[13])
	if et == 0x8100 || et == 0x88a8 {
		if len(f) < 18 {
			return c, false
		}
		off, et = 16, uint16(f[16])<<8|uint16(f[17])
	}
	c.L3Off = off + 2
	ip := f[c.L3Off:]
	switch et {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&15 < 5 || len(ip) < int(ip[0]&15)*4 {
			return c, false
		}
		if (uint16(ip[6])<<8|uint16(ip[7]))&0x3fff != 0 { // MF or a fragment offset
			return c, false
		}
		c.Proto, c.L4Off = ip[9], c.L3Off+int(ip[0]&15)*4
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return c, false
		}
		c.IPv6, c.Proto, c.L4Off = true, ip[6], c.L3Off+40
	default:
		return c, false
	}
	switch c.Proto {
	case 6:
		c.FieldOff = 16
	case 17:
		c.FieldOff = 6
	default:
		return c, false
	}
	if c.L4Off+c.FieldOff+2 > len(f) {
		return c, false
	}
	return c, true
}

// StampRingSize is how many TX timestamp completions a queue keeps.
const StampRingSize = 256

// StampRing is a TX queue's completions of timestamped frames: the driver
// pushes as it reclaims, TxStamps pops. It does not allocate; like its queue
// it belongs to one goroutine at a time. The zero value is ready.
type StampRing struct {
	buf        [StampRingSize]TxStamp
	head, tail uint32
	Dropped    uint64 // completions lost because the ring was full
}

// Push records a completion, dropping it when the ring is full.
func (r *StampRing) Push(s TxStamp) {
	if r.tail-r.head == StampRingSize {
		r.Dropped++
		return
	}
	r.buf[r.tail%StampRingSize] = s
	r.tail++
}

// Pop moves up to len(out) completions into out, oldest first.
func (r *StampRing) Pop(out []TxStamp) int {
	n := 0
	for n < len(out) && r.head != r.tail {
		out[n] = r.buf[r.head%StampRingSize]
		r.head++
		n++
	}
	return n
}

// Len is how many completions wait.
func (r *StampRing) Len() int { return int(r.tail - r.head) }
