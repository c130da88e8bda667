package examples

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// xdp_hw_meta has no kernel differential (the kernel runs the metadata
// kfuncs in device-bound programs only, which BPF_PROG_TEST_RUN refuses).
// Instead it is checked against a Go model of what it does, in both engines,
// on the random frames of the other examples with random metadata.

const hwMetaDefaultPort = 9091 // the object's meta_port

// hwMetaWant is what xdp_hw_meta should do to frame f with metadata m: the
// 32 bytes of struct hw_meta it puts in front, or nil when the frame is not
// UDP to meta_port (then it passes untouched).
func hwMetaWant(f []byte, m *bpf.RxMeta) []byte {
	if dportOf(f) != hwMetaDefaultPort {
		return nil
	}
	out := make([]byte, 32)
	le := binary.LittleEndian
	answer := func(bit bpf.RxMetaCaps) int32 {
		switch {
		case m == nil || m.Caps&bit == 0:
			return -95 // EOPNOTSUPP
		case m.Have&bit == 0:
			return -61 // ENODATA
		}
		return 0
	}
	if e := answer(bpf.RxMetaTimestamp); e != 0 {
		le.PutUint32(out[8:], uint32(e))
	} else {
		le.PutUint64(out[0:], m.Timestamp)
	}
	if e := answer(bpf.RxMetaHash); e != 0 {
		le.PutUint32(out[20:], uint32(e))
	} else {
		le.PutUint32(out[12:], m.Hash)
		le.PutUint32(out[16:], m.HashType)
	}
	if e := answer(bpf.RxMetaVLAN); e != 0 {
		le.PutUint32(out[28:], uint32(e))
	} else {
		binary.BigEndian.PutUint16(out[24:], m.VLANProto)
		le.PutUint16(out[26:], m.VLANTCI)
	}
	return out
}

// dportOf is the UDP destination port of an IPv4 or IPv6 frame behind at
// most two VLAN tags, as the example parses it; 0 when there is none.
func dportOf(f []byte) uint16 {
	be := binary.BigEndian
	if len(f) < 14 {
		return 0
	}
	off, proto := 14, be.Uint16(f[12:])
	for range 2 {
		if proto != ethVLAN && proto != ethQinQ {
			break
		}
		if len(f) < off+4 {
			return 0
		}
		proto = be.Uint16(f[off+2:])
		off += 4
	}
	switch proto {
	case ethIPv4:
		if len(f) < off+20 || f[off+9] != protoUDP || f[off]&0xf < 5 {
			return 0
		}
		off += int(f[off]&0xf) * 4
	case ethIPv6:
		if len(f) < off+40 || f[off+6] != protoUDP {
			return 0
		}
		off += 40
	default:
		return 0
	}
	if len(f) < off+8 {
		return 0
	}
	return be.Uint16(f[off+2:])
}

// hwMetaFrame is a frame for the test: often UDP to meta_port (IPv4 with
// options, IPv6, tagged), else any of the shared generator's frames.
func (g *frameGen) hwMetaFrame() []byte {
	tags := g.tags()
	switch g.r.IntN(4) {
	case 0:
		return g.ipv4(g.size(42), tags, protoUDP, 5+g.r.IntN(3), hwMetaDefaultPort)
	case 1:
		f := g.ipv6(g.size(62), tags, protoUDP)
		binary.BigEndian.PutUint16(f[14+4*len(tags)+40+2:], hwMetaDefaultPort)
		return f
	}
	return g.next()
}

func (g *frameGen) rxMeta() *bpf.RxMeta {
	if g.r.IntN(6) == 0 {
		return nil
	}
	return &bpf.RxMeta{
		Caps: bpf.RxMetaCaps(g.r.IntN(8)), Have: bpf.RxMetaCaps(g.r.IntN(8)),
		Timestamp: g.r.Uint64(), Hash: g.r.Uint32(), HashType: g.r.Uint32() & 0x1ff,
		VLANProto: []uint16{ethVLAN, ethQinQ}[g.r.IntN(2)], VLANTCI: uint16(g.r.Uint32()),
	}
}

func TestHWMetaModel(t *testing.T) {
	engines := []bpf.Engine{bpf.EngineInterp}
	if bpf.JITAvailable() {
		engines = append(engines, bpf.EngineJIT)
	}
	for _, eng := range engines {
		c, err := bpf.LoadFile(objPath("xdp_hw_meta"), &bpf.Options{NumCPU: 1, Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := c.Program("xdp_hw_meta")
		if err != nil {
			t.Fatal(err)
		}
		if p.Engine() != eng || !p.UsesRxMeta() {
			t.Fatalf("%v: engine %v, UsesRxMeta %v", eng, p.Engine(), p.UsesRxMeta())
		}
		r := bpf.NewRunner(0)
		g := newFrameGen(10)
		buf := make([]byte, bufSize)
		hits := 0
		for i := range 3000 {
			in := g.hwMetaFrame()
			m := g.rxMeta()
			clear(buf)
			copy(buf[headroom:], in)
			f := bpf.Frame{Buf: buf, DataMeta: headroom, Data: headroom, DataEnd: headroom + len(in), IngressIfindex: ingressIfindex, Meta: m}
			act := r.Run(p, &f)
			want := hwMetaWant(in, m)
			// No socket is bound: the redirect falls back to XDP_PASS.
			if act != bpf.ActionPass {
				t.Fatalf("%v frame %d: verdict %v (fault %v)", eng, i, act, r.Fault())
			}
			if !bytes.Equal(buf[f.Data:f.DataEnd], in) {
				t.Fatalf("%v frame %d: the frame changed", eng, i)
			}
			got := buf[f.DataMeta:f.Data]
			if want == nil {
				if len(got) != 0 {
					t.Fatalf("%v frame %d (dport %d): %d bytes of metadata, want none", eng, i, dportOf(in), len(got))
				}
				continue
			}
			hits++
			if !bytes.Equal(got, want) {
				t.Fatalf("%v frame %d meta %+v:\n got % x\nwant % x", eng, i, m, got, want)
			}
		}
		if hits < 1000 {
			t.Fatalf("%v: only %d of 3000 frames to meta_port", eng, hits)
		}
	}
}
