package bpf

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

func loadTestdata(t testing.TB, name string, opts *Options) *Collection {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.NumCPU == 0 {
		opts.NumCPU = 2
	}
	c, err := LoadFile(filepath.Join("testdata", name), opts)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testHeadroom and testBufSize are what BPF_PROG_TEST_RUN gives a small
// frame: XDP_PACKET_HEADROOM and a 4 KiB buffer.
const (
	testHeadroom = 256
	testBufSize  = 4096
)

func newFrame(pkt []byte) *Frame {
	buf := make([]byte, testBufSize)
	copy(buf[testHeadroom:], pkt)
	return &Frame{Buf: buf, DataMeta: testHeadroom, Data: testHeadroom, DataEnd: testHeadroom + len(pkt), IngressIfindex: 1}
}

func resetFrame(f *Frame, pkt []byte) {
	copy(f.Buf[testHeadroom:], pkt)
	f.DataMeta, f.Data, f.DataEnd = testHeadroom, testHeadroom, testHeadroom+len(pkt)
}

// udpFrame builds a 64-byte Ethernet/IPv4/UDP frame to dport.
func udpFrame(dport uint16) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 50)
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 1234)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 30)
	return f
}

func u32key(i uint32) []byte { return binary.LittleEndian.AppendUint32(nil, i) }

func mapU64(t *testing.T, m maps.Map, k uint32) uint64 {
	t.Helper()
	v := m.Lookup(u32key(k), 0)
	if len(v) < 8 {
		t.Fatalf("map %s key %d: value %x", m.Spec().Name, k, v)
	}
	return binary.LittleEndian.Uint64(v)
}
