package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// TX metadata, as AF_XDP has it (linux/if_xdp.h): an application that wants
// the NIC to checksum, timestamp or hold a frame describes the request in a
// struct xsk_tx_metadata, and the completion of a timestamped frame carries
// its TX timestamp. TxMetadata is that struct with the same fields and flag
// values; Apply hands it to the driver through the dma.Buf, and
// MarshalBinary/UnmarshalBinary give the kernel's 24-byte layout for code
// that builds it in the frame's headroom as AF_XDP programs do.

// The flags of struct xsk_tx_metadata.
const (
	XDP_TXMD_FLAGS_TIMESTAMP   = uint64(dma.TxFlagTimestamp)
	XDP_TXMD_FLAGS_CHECKSUM    = uint64(dma.TxFlagChecksum)
	XDP_TXMD_FLAGS_LAUNCH_TIME = uint64(dma.TxFlagLaunchTime)
)

// TxMetadataLen is sizeof(struct xsk_tx_metadata): the tx_metadata_len an
// AF_XDP socket is set up with to carry it.
const TxMetadataLen = 24

// TxMetadata is struct xsk_tx_metadata's request side. The completion side
// (completion.tx_timestamp) comes back through XSK.TxCompletions.
type TxMetadata struct {
	Flags      uint64 // XDP_TXMD_FLAGS_*
	CsumStart  uint16 // XDP_TXMD_FLAGS_CHECKSUM: where the sum starts, from the frame's first byte
	CsumOffset uint16 // XDP_TXMD_FLAGS_CHECKSUM: where the checksum goes, from CsumStart
	LaunchTime uint64 // XDP_TXMD_FLAGS_LAUNCH_TIME: device-clock ns
}

// MarshalBinary returns the struct in the kernel's layout (host byte order,
// little-endian on every platform xnic runs on).
func (m TxMetadata) MarshalBinary() ([]byte, error) {
	b := make([]byte, TxMetadataLen)
	le := binary.LittleEndian
	le.PutUint64(b[0:], m.Flags)
	le.PutUint16(b[8:], m.CsumStart)
	le.PutUint16(b[10:], m.CsumOffset)
	le.PutUint64(b[16:], m.LaunchTime)
	return b, nil
}

// UnmarshalBinary reads the kernel's layout.
func (m *TxMetadata) UnmarshalBinary(b []byte) error {
	if len(b) < TxMetadataLen {
		return fmt.Errorf("%w: struct xsk_tx_metadata is %d bytes, got %d", ErrConfig, TxMetadataLen, len(b))
	}
	le := binary.LittleEndian
	*m = TxMetadata{Flags: le.Uint64(b[0:]), CsumStart: le.Uint16(b[8:]), CsumOffset: le.Uint16(b[10:]), LaunchTime: le.Uint64(b[16:])}
	return nil
}

// Apply puts the request on b for the driver. Flags beyond the three known
// ones are refused, as the kernel refuses them.
func (m TxMetadata) Apply(b *dma.Buf) error {
	const known = XDP_TXMD_FLAGS_TIMESTAMP | XDP_TXMD_FLAGS_CHECKSUM | XDP_TXMD_FLAGS_LAUNCH_TIME
	if m.Flags&^known != 0 {
		return fmt.Errorf("%w: unknown xsk_tx_metadata flags %#x", nic.ErrTxMeta, m.Flags&^known)
	}
	b.TxFlags = uint8(m.Flags)
	b.CsumStart, b.CsumOffset, b.LaunchTime = m.CsumStart, m.CsumOffset, m.LaunchTime
	return nil
}

// TxCompletion is one completed frame that asked for a TX timestamp: Addr
// is its DataIOVA when sent (the AF_XDP completion ring's address), and
// TxTimestamp the device-clock ns at which it left, when HasTimestamp.
type TxCompletion struct {
	Addr         uint64
	TxTimestamp  uint64
	HasTimestamp bool // false: the device took none (e.g. another was pending)
}

// TxMeta is what the bound TX queue can do with TX metadata.
func (x *XSK) TxMeta() nic.TxMetaCaps {
	if q, ok := x.txq().q.(nic.TxMetaQueue); ok {
		return q.TxMeta()
	}
	return 0
}

// CheckTxMeta reports why the bound TX queue cannot carry out what b asks,
// or nil; frames that ask nothing always pass.
func (x *XSK) CheckTxMeta(b *dma.Buf) error {
	if b.TxFlags == 0 {
		return nil
	}
	q, ok := x.txq().q.(nic.TxMetaQueue)
	if !ok {
		return fmt.Errorf("%w: port %s's driver does no TX metadata", nic.ErrTxMeta, x.port.p.Name())
	}
	return q.CheckTxMeta(b)
}

// SendMeta is Send for frames that carry TX metadata (Apply): the driver
// takes frames up to the first whose request the queue cannot do, and
// SendMeta then says why, naming that frame. It returns how many the ring
// took; a short count without an error is a full ring or a link down.
func (x *XSK) SendMeta(bufs []*dma.Buf) (int, error) {
	n := x.Send(bufs)
	if n < len(bufs) {
		if err := x.CheckTxMeta(bufs[n]); err != nil {
			return n, fmt.Errorf("dataplane: XSK %s[%d] frame %d: %w", x.mapName, x.key, n, err)
		}
	}
	return n, nil
}

// TxCompletions reclaims the bound TX queue and moves up to len(out)
// completions of timestamped frames into out, oldest first. With several
// senders on one queue (XSKs bound to the same queue, XDP_TX), completions
// go to whoever asks first: only frames that asked for a timestamp have one.
func (x *XSK) TxCompletions(out []TxCompletion) int {
	t := x.txq()
	q, ok := t.q.(nic.TxMetaQueue)
	if !ok || len(out) == 0 {
		return 0
	}
	stamps := x.stamps[:]
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reclaim()
	n := 0
	for n < len(out) {
		k := q.TxStamps(stamps[:min(len(stamps), len(out)-n)])
		for _, s := range stamps[:k] {
			out[n] = TxCompletion{Addr: s.Addr, TxTimestamp: s.Time, HasTimestamp: s.OK}
			n++
		}
		if k < len(stamps) {
			break
		}
	}
	return n
}

// txq is the TX queue the XSK sends on.
func (x *XSK) txq() *txq { return x.port.txqs[x.queue%len(x.port.txqs)] }
