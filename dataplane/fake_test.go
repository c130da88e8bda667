package dataplane

import (
	"encoding/binary"
	"errors"
	"sync"
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// scriptProg is a test program: the verdict is byte 14 of the frame (just after
// the Ethernet header), byte 15 picks the redirect kind and byte 16 its target.
// XDP_TX swaps the MAC addresses as the MAC-swap example does; a verdict of 0xEE
// faults.
type scriptProg struct {
	devmap maps.Map
	cpumap maps.Map
	xskmap maps.Map
}

const (
	rdIfindex = 1
	rdDevMap  = 2
	rdCPUMap  = 3
	rdXSKMap  = 4
)

var errTestFault = errors.New("test fault: r1 out of bounds")

func (s *scriptProg) NewRunner(cpu int) Runner { return &scriptRunner{s: s} }

type scriptRunner struct {
	s     *scriptProg
	rd    bpf.Redirect
	fault error
	key   [4]byte
}

func (r *scriptRunner) Run(f *bpf.Frame) bpf.Action {
	r.fault = nil
	d := f.Buf[f.Data:f.DataEnd]
	if len(d) < 17 {
		return bpf.ActionAborted
	}
	act := bpf.Action(d[14])
	switch act {
	case bpf.ActionTX:
		var tmp [6]byte
		copy(tmp[:], d[0:6])
		copy(d[0:6], d[6:12])
		copy(d[6:12], tmp[:])
	case bpf.ActionRedirect:
		r.rd = bpf.Redirect{}
		switch d[15] {
		case rdIfindex:
			r.rd = bpf.Redirect{Kind: bpf.RedirectIfindex, Ifindex: uint32(d[16])}
		case rdDevMap:
			binary.LittleEndian.PutUint32(r.key[:], uint32(d[16]))
			v := r.s.devmap.Lookup(r.key[:], 0)
			if v == nil {
				return bpf.ActionAborted
			}
			r.rd = bpf.Redirect{Kind: bpf.RedirectDevMap, Map: r.s.devmap, Key: uint32(d[16]), Ifindex: binary.LittleEndian.Uint32(v)}
		case rdCPUMap:
			r.rd = bpf.Redirect{Kind: bpf.RedirectCPUMap, Map: r.s.cpumap, Key: uint32(d[16])}
		case rdXSKMap:
			r.rd = bpf.Redirect{Kind: bpf.RedirectXSKMap, Map: r.s.xskmap, Key: uint32(d[16])}
		}
	case 0xEE:
		r.fault = errTestFault
		return bpf.ActionAborted
	}
	return act
}

func (r *scriptRunner) Redirect() bpf.Redirect { return r.rd }
func (r *scriptRunner) Fault() error           { return r.fault }

// arrayMap is a minimal array map for tests.
type arrayMap struct {
	spec maps.Spec
	vals [][]byte
}

func newArrayMap(name string, n int, vsize uint32) *arrayMap {
	m := &arrayMap{spec: maps.Spec{Name: name, KeySize: 4, ValueSize: vsize, MaxEntries: uint32(n)}}
	m.vals = make([][]byte, n)
	return m
}

func (m *arrayMap) Spec() maps.Spec { return m.spec }
func (m *arrayMap) Lookup(key []byte, cpu int) []byte {
	k := binary.LittleEndian.Uint32(key)
	if int(k) >= len(m.vals) {
		return nil
	}
	return m.vals[k]
}
func (m *arrayMap) Update(key, value []byte, flags uint64, cpu int) error {
	k := binary.LittleEndian.Uint32(key)
	if int(k) >= len(m.vals) {
		return syscall.E2BIG
	}
	m.vals[k] = append([]byte(nil), value...)
	return nil
}
func (m *arrayMap) Delete(key []byte) error { return syscall.EINVAL }
func (m *arrayMap) NextKey(key, next []byte) error {
	return syscall.ENOENT
}

// frame builds a 64-byte test frame: dst, src, ethertype 0x88B5 (local
// experimental), then verdict, redirect kind and target, then a sequence number.
func frame(act bpf.Action, kind, target byte, seq uint32, size int) []byte {
	if size < 64 {
		size = 64
	}
	f := make([]byte, size)
	copy(f[0:6], []byte{0x02, 0xdd, 0xdd, 0xdd, 0xdd, 0x01})
	copy(f[6:12], []byte{0x02, 0x55, 0x55, 0x55, 0x55, 0x02})
	f[12], f[13] = 0x88, 0xb5
	f[14], f[15], f[16] = byte(act), kind, target
	binary.BigEndian.PutUint32(f[20:], seq)
	for i := 24; i < size; i++ {
		f[i] = byte(i)
	}
	return f
}

// fakeStack records what XDP_PASS delivers.
type fakeStack struct {
	mu     sync.Mutex
	frames [][]byte
	fail   bool
}

func (s *fakeStack) Deliver(frame []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return syscall.EIO
	}
	s.frames = append(s.frames, append([]byte(nil), frame...))
	return nil
}

func (s *fakeStack) got() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.frames...)
}
