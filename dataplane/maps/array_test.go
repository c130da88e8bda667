package maps

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
)

func TestArrayKernelSemantics(t *testing.T) {
	m := mustNew(t, Spec{Name: "a", Type: ebpf.Array, KeySize: 4, ValueSize: 6, MaxEntries: 4})
	if v := m.Lookup(u32(2), 0); !bytes.Equal(v, make([]byte, 6)) {
		t.Fatalf("fresh slot = %x, want 6 zero bytes", v)
	}
	if v := m.Lookup(u32(4), 0); v != nil {
		t.Fatalf("lookup past max_entries = %x, want nil", v)
	}
	val := []byte{1, 2, 3, 4, 5, 6}
	wantErrno(t, "update ANY", m.Update(u32(1), val, UpdateAny, 0), 0)
	wantErrno(t, "update EXIST", m.Update(u32(1), val, UpdateExist, 0), 0)
	wantErrno(t, "update NOEXIST", m.Update(u32(1), val, UpdateNoExist, 0), syscall.EEXIST)
	wantErrno(t, "update out of range", m.Update(u32(4), val, UpdateAny, 0), syscall.E2BIG)
	wantErrno(t, "update bad flags", m.Update(u32(1), val, 3, 0), syscall.EINVAL)
	wantErrno(t, "update F_LOCK", m.Update(u32(1), val, UpdateLock, 0), syscall.EINVAL)
	wantErrno(t, "delete", m.Delete(u32(1)), syscall.EINVAL)
	got := m.Lookup(u32(1), 0)
	if !bytes.Equal(got, val) {
		t.Fatalf("lookup = %x, want %x", got, val)
	}
	// Writes through the returned slice are the map's storage (programs do that).
	got[0] = 0xEE
	if m.Lookup(u32(1), 0)[0] != 0xEE {
		t.Fatal("write through Lookup slice not visible")
	}
	if cap(got) != 6 {
		t.Fatalf("cap of value slice = %d, want 6 (no reach into the next slot)", cap(got))
	}
	// NextKey: nil -> 0, 0 -> 1, last -> ENOENT, out of range -> 0.
	next := make([]byte, 4)
	var seen []uint32
	var key []byte
	for {
		err := m.NextKey(key, next)
		if err != nil {
			wantErrno(t, "NextKey end", err, syscall.ENOENT)
			break
		}
		i, _ := keyIndex(next)
		seen = append(seen, i)
		key = append([]byte(nil), next...)
	}
	if len(seen) != 4 || seen[0] != 0 || seen[3] != 3 {
		t.Fatalf("NextKey order = %v, want [0 1 2 3]", seen)
	}
	wantErrno(t, "NextKey out of range", m.NextKey(u32(99), next), 0)
	if i, _ := keyIndex(next); i != 0 {
		t.Fatalf("NextKey(99) = %d, want 0", i)
	}
}

func TestArrayCreateErrors(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want syscall.Errno
	}{
		{Spec{Type: ebpf.Array, KeySize: 8, ValueSize: 4, MaxEntries: 1}, syscall.EINVAL},
		{Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 0, MaxEntries: 1}, syscall.EINVAL},
		{Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 0}, syscall.EINVAL},
		{Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, syscall.EINVAL},
		{Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonly | FlagWronly}, syscall.EINVAL},
		{Spec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable}, syscall.EINVAL},
		{Spec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 40000, MaxEntries: 1}, syscall.E2BIG},
		{Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 1 << 20, MaxEntries: 1 << 20}, syscall.ENOMEM},
	} {
		_, err := New(c.s)
		wantErrno(t, "New", err, c.want)
	}
	m, err := New(Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable | FlagRdonlyProg})
	if err != nil || m == nil {
		t.Fatalf("New mmapable rdonly_prog array: %v", err)
	}
}

func TestPerCPUArray(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 2, NumCPU: 3})
	if got := m.Spec().NumCPU; got != 3 {
		t.Fatalf("NumCPU = %d", got)
	}
	wantErrno(t, "update cpu 1", m.Update(u32(0), u32(7), UpdateAny, 1), 0)
	if v := m.Lookup(u32(0), 0); !bytes.Equal(v, u32(0)) {
		t.Fatalf("cpu 0 slot = %x, want untouched zero", v)
	}
	if v := m.Lookup(u32(0), 1); !bytes.Equal(v, u32(7)) {
		t.Fatalf("cpu 1 slot = %x, want 07000000", v)
	}
	if v := m.Lookup(u32(0), 3); v != nil {
		t.Fatalf("cpu 3 of 3 = %x, want nil", v)
	}
	// All-CPU update: three values each rounded up to 8 bytes.
	all := make([]byte, 24)
	for c := range 3 {
		copy(all[c*8:], u32(uint32(100+c)))
	}
	wantErrno(t, "update all", m.Update(u32(1), all, UpdateAny, -1), 0)
	wantErrno(t, "update all short", m.Update(u32(1), all[:12], UpdateAny, -1), syscall.EINVAL)
	for c := range 3 {
		if v := m.Lookup(u32(1), c); !bytes.Equal(v, u32(uint32(100+c))) {
			t.Fatalf("cpu %d = %x", c, v)
		}
	}
	slots, err := LookupPerCPU(m, u32(1))
	if err != nil || len(slots) != 3 || !bytes.Equal(slots[2], u32(102)) {
		t.Fatalf("LookupPerCPU = %x, %v", slots, err)
	}
}

func TestArrayLookupAllocs(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 16})
	k := u32(5)
	var sink []byte
	if n := testing.AllocsPerRun(1000, func() { sink = m.Lookup(k, 0) }); n != 0 {
		t.Fatalf("array Lookup allocates %v per run", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = m.Update(k, sink, UpdateAny, 0) }); n != 0 {
		t.Fatalf("array Update allocates %v per run", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = m.Update(k, sink, UpdateNoExist, 0) }); n != 0 {
		t.Fatalf("array failing Update allocates %v per run", n)
	}
}
