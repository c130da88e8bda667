package maps

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf"
)

// TestUpdateSkipsSpinLock: an update leaves the value's bpf_spin_lock word
// as it is (held or free), as the kernel's copy_map_value; a new or
// replacing hash entry starts with it free whatever the value says.
func TestUpdateSkipsSpinLock(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.Hash} {
		m, err := New(Spec{Name: "l", Type: typ, KeySize: 4, ValueSize: 16, MaxEntries: 2, SpinLock: true, SpinLockOff: 4})
		if err != nil {
			t.Fatal(err)
		}
		key := []byte{1, 0, 0, 0}
		val := bytes.Repeat([]byte{0xff}, 16)
		if err := m.Update(key, val, UpdateAny, 0); err != nil {
			t.Fatal(err)
		}
		want := append(bytes.Repeat([]byte{0xff}, 4), 0, 0, 0, 0)
		want = append(want, bytes.Repeat([]byte{0xff}, 8)...)
		if got := m.Lookup(key, 0); !bytes.Equal(got, want) {
			t.Fatalf("%v: value %x after an update, want %x (the lock word free)", typ, got, want)
		}
		m.Lookup(key, 0)[4] = 1 // held by a program
		val[0] = 7
		if err := m.Update(key, val, UpdateAny, 0); err != nil {
			t.Fatal(err)
		}
		got := m.Lookup(key, 0)
		wantLock := byte(1) // an array's update writes in place, around the held lock
		if typ == ebpf.Hash {
			wantLock = 0 // a replacing entry's lock is its own, free
		}
		if got[0] != 7 || got[4] != wantLock {
			t.Fatalf("%v: value %x after a second update: want byte 0 = 7, lock %d", typ, got, wantLock)
		}
	}
}
