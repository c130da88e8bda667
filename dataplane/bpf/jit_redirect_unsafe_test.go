//go:build linux && (amd64 || arm64)

package bpf

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestJITRedirectLayout: the record native helpers write is laid out as
// rdTag and the rdOff words say (kind, flags and map number in the first
// word, little-endian), its size is a power of two (the burst loop adds
// it per frame) and a multiple of 8 from an 8-byte aligned start (Go
// reads each as two words), and every flag bpf_redirect_map takes fits in a byte.
func TestJITRedirectLayout(t *testing.T) {
	var rd jitRedirect
	offs := map[string][2]uintptr{
		"kind":    {unsafe.Offsetof(rd.kind), rdOffTag},
		"flags":   {unsafe.Offsetof(rd.flags), rdOffTag + 1},
		"mapNum":  {unsafe.Offsetof(rd.mapNum), rdOffTag + 2},
		"ifindex": {unsafe.Offsetof(rd.ifindex), rdOffIfindex},
		"key":     {unsafe.Offsetof(rd.key), rdOffKey},
	}
	for name, o := range offs {
		if o[0] != o[1] {
			t.Errorf("jitRedirect.%s at %d, helpers write it at %d", name, o[0], o[1])
		}
	}
	if n := unsafe.Sizeof(rd); n&(n-1) != 0 {
		t.Errorf("jitRedirect is %d bytes, not a power of two", n)
	}
	if off := unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.rds); off%8 != 0 || unsafe.Sizeof(rd)%8 != 0 {
		t.Errorf("records at Runner+%d, %d bytes each: not 8-byte aligned (words)", off, unsafe.Sizeof(rd))
	}
	if rdFlagsMax > 0xff {
		t.Errorf("flags %#x do not fit jitRedirect.flags", rdFlagsMax)
	}
	tag := rdTag(RedirectCPUMap, flagsActionMask, rdMaps)
	b := (*[4]byte)(unsafe.Pointer(&rd))
	binary.LittleEndian.PutUint32(b[:], tag)
	if rd.kind != rdSet|uint8(RedirectCPUMap) || rd.flags != flagsActionMask || rd.mapNum != rdMaps {
		t.Errorf("rdTag %#x reads as kind %#x flags %#x map %d", tag, rd.kind, rd.flags, rd.mapNum)
	}
}
