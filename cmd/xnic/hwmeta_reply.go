package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// hwmeta's answer, as the selftest tool's ping-pong: each frame is answered
// by a UDP frame back to its sender that asks the NIC for its checksum
// (XDP_TXMD_FLAGS_CHECKSUM, with the pseudo-header's sum in the field as
// CHECKSUM_PARTIAL senders leave it) and for a TX timestamp
// (XDP_TXMD_FLAGS_TIMESTAMP), each where the TX queue offers it; a checksum
// the queue cannot insert is computed in software instead, and said so.

// completionWait is how long hwmeta waits for a timestamped reply's
// completion.
const completionWait = 200 * time.Millisecond

// hwMetaReply is what the answer to one frame did.
type hwMetaReply struct {
	Checksum        string  `json:"tx_checksum"`         // "offload", "software" or why none was sent
	TimestampResult string  `json:"tx_timestamp_result"` // "ok", "none" (the device took none), "-EOPNOTSUPP", "timeout"
	Timestamp       uint64  `json:"tx_timestamp_ns,omitempty"`
	RxToTxNs        *int64  `json:"rx_to_tx_ns,omitempty"`   // TX timestamp less RX timestamp
	WireChecksum    *string `json:"wire_checksum,omitempty"` // --sim: the partner's check of the frame it got
}

// buildReply writes into out the answer to the Ethernet/IPv4/UDP frame in,
// addresses and ports swapped, with the UDP checksum field holding the
// pseudo-header's sum (sw false) or the full checksum (sw true). It returns
// the UDP header's offset, or false when in is not such a frame.
func buildReply(out, in []byte, sw bool) (int, bool) {
	l3, l4, ok := udpHeaders(in)
	if !ok || len(out) < len(in) {
		return 0, false
	}
	copy(out, in)
	copy(out[0:6], in[6:12])
	copy(out[6:12], in[0:6])
	copy(out[l3+12:l3+16], in[l3+16:l3+20])
	copy(out[l3+16:l3+20], in[l3+12:l3+16])
	copy(out[l4:l4+2], in[l4+2:l4+4])
	copy(out[l4+2:l4+4], in[l4:l4+2])
	ulen := int(binary.BigEndian.Uint16(in[l4+4:]))
	if ulen < 8 || l4+ulen > len(in) {
		return 0, false
	}
	s := sim.OnesSum(0, out[l3+12:l3+20]) + 17 + uint32(ulen)
	binary.BigEndian.PutUint16(out[l4+6:], 0)
	if sw {
		c := ^sim.Fold(sim.OnesSum(s, out[l4:l4+ulen]))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(out[l4+6:], c)
	} else {
		binary.BigEndian.PutUint16(out[l4+6:], sim.Fold(s))
	}
	return l4, true
}

// udpHeaders finds the IPv4 and UDP headers of an Ethernet frame (at most
// one VLAN tag), as a NIC's checksum engine does (nic.ParseL4).
func udpHeaders(f []byte) (l3, l4 int, ok bool) {
	c, ok := nic.ParseL4(f)
	if !ok || c.IPv6 || c.Proto != 17 {
		return 0, 0, false
	}
	return c.L3Off, c.L4Off, true
}

// udpChecksumValid checks an Ethernet/IPv4/UDP frame's UDP checksum (0: none,
// valid by RFC 768).
func udpChecksumValid(f []byte) bool {
	l3, l4, ok := udpHeaders(f)
	if !ok {
		return false
	}
	ulen := int(binary.BigEndian.Uint16(f[l4+4:]))
	if ulen < 8 || l4+ulen > len(f) {
		return false
	}
	if binary.BigEndian.Uint16(f[l4+6:]) == 0 {
		return true
	}
	s := sim.OnesSum(0, f[l3+12:l3+20]) + 17 + uint32(ulen)
	return sim.Fold(sim.OnesSum(s, f[l4:l4+ulen])) == 0xffff
}

// answer sends the reply to in on x and waits for its completion when it
// asked for a timestamp. rxTS is the frame's RX timestamp (0: none).
func answer(x *dataplane.XSK, in []byte, rxTS uint64, wire <-chan []byte) (hwMetaReply, error) {
	caps := x.TxMeta()
	b := x.Alloc()
	if b == nil {
		return hwMetaReply{Checksum: "none: no free buffer", TimestampResult: "-"}, nil
	}
	md := dataplane.TxMetadata{}
	offload := caps&nic.TxMetaChecksum != 0
	l4, ok := buildReply(b.Mem[b.Off:], in, false)
	if !ok {
		x.Release(b)
		return hwMetaReply{Checksum: "none: not an IPv4/UDP frame", TimestampResult: "-"}, nil
	}
	b.Len = len(in)
	rep := hwMetaReply{Checksum: "offload", TimestampResult: "-EOPNOTSUPP"}
	if offload {
		md = dataplane.TxMetadata{Flags: dataplane.XDP_TXMD_FLAGS_CHECKSUM, CsumStart: uint16(l4), CsumOffset: 6}
		if err := md.Apply(b); err == nil {
			if x.CheckTxMeta(b) != nil {
				offload = false
			}
		}
	}
	if !offload {
		buildReply(b.Mem[b.Off:], in, true)
		md, rep.Checksum = dataplane.TxMetadata{}, "software"
	}
	if caps&nic.TxMetaTimestamp != 0 {
		md.Flags |= dataplane.XDP_TXMD_FLAGS_TIMESTAMP
	}
	if err := md.Apply(b); err != nil {
		x.Release(b)
		return rep, err
	}
	addr := b.DataIOVA()
	n, err := x.SendMeta([]*dma.Buf{b})
	if n == 0 {
		x.Release(b)
		if err == nil {
			err = errors.New("the TX ring took no frame (link down or ring full)")
		}
		return rep, fmt.Errorf("answering: %w", err)
	}
	if md.Flags&dataplane.XDP_TXMD_FLAGS_TIMESTAMP != 0 {
		rep.TimestampResult = "timeout"
		waitCompletion(x, addr, rxTS, &rep)
	}
	if wire != nil {
		select {
		case f := <-wire:
			s := "ok"
			if !udpChecksumValid(f) {
				s = "bad"
			}
			rep.WireChecksum = &s
		case <-time.After(completionWait):
			s := "not seen"
			rep.WireChecksum = &s
		}
	}
	return rep, nil
}

// waitCompletion polls x's completions for the frame sent at addr.
func waitCompletion(x *dataplane.XSK, addr, rxTS uint64, rep *hwMetaReply) {
	var out [8]dataplane.TxCompletion
	deadline := time.Now().Add(completionWait)
	for time.Now().Before(deadline) {
		n := x.TxCompletions(out[:])
		for _, c := range out[:n] {
			if c.Addr != addr {
				continue
			}
			if !c.HasTimestamp {
				rep.TimestampResult = "none"
				return
			}
			rep.TimestampResult, rep.Timestamp = "ok", c.TxTimestamp
			if rxTS != 0 {
				d := int64(c.TxTimestamp - rxTS)
				rep.RxToTxNs = &d
			}
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}
