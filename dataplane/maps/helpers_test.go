package maps

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
)

func mustNew(t testing.TB, s Spec) Map {
	t.Helper()
	m, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return m
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func wantErrno(t testing.TB, what string, err error, want syscall.Errno) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Fatalf("%s: got error %v, want success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v (%d)", what, err, want, int(want))
	}
}
