package maps

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
)

func TestParseKV(t *testing.T) {
	hash := Spec{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 8}
	lpm4 := Spec{Name: "l", Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 1}
	lpm6 := Spec{Name: "l6", Type: ebpf.LPMTrie, KeySize: 20, ValueSize: 2}
	pc := Spec{Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, NumCPU: 2}
	big := Spec{Name: "b", Type: ebpf.Hash, KeySize: 2, ValueSize: 12}
	for _, c := range []struct {
		spec     Spec
		in       string
		key, val string // hex; empty key means an error is expected
	}{
		{hash, "1=2", "01000000", "0200000000000000"},
		{hash, "0x10=0xdeadbeef", "10000000", "efbeadde00000000"},
		{hash, "4294967295=-1", "ffffffff", "ffffffffffffffff"},
		{hash, "10.0.0.1=hex:0102030405060708", "0a000001", "0102030405060708"},
		{hash, " 7 = hex:01:02:03:04:05:06:07:08 ", "07000000", "0102030405060708"},
		{lpm4, "10.0.0.0/8=1", "080000000a000000", "01"},
		{lpm4, "0.0.0.0/0=0xff", "0000000000000000", "ff"},
		{lpm6, "2001:db8::/32=513", "2000000020010db8000000000000000000000000", "0102"},
		{pc, "3=5", "03000000", "05000000000000000500000000000000"},
		{big, "1=-2", "0100", "feffffffffffffffffffffff"},
		{hash, "4294967296=1", "", ""},
		{hash, "1=hex:0102", "", ""},
		{hash, "1", "", ""},
		{hash, "x=1", "", ""},
		{lpm4, "2001:db8::/32=1", "", ""},
		{Spec{Type: ebpf.Hash, KeySize: 1, ValueSize: 1}, "1=-129", "", ""},
		{Spec{Type: ebpf.Hash, KeySize: 1, ValueSize: 1}, "1=-128", "01", "80"},
	} {
		k, v, err := ParseKV(c.spec, c.in)
		if c.key == "" {
			if err == nil {
				t.Errorf("ParseKV(%q) = %x, %x; want an error", c.in, k, v)
			} else if Errno(err) != -int64(syscall.EINVAL) {
				t.Errorf("ParseKV(%q) error %v is not EINVAL", c.in, err)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%x", k) != c.key || fmt.Sprintf("%x", v) != c.val {
			t.Errorf("ParseKV(%q) = %x, %x, %v; want %s, %s", c.in, k, v, err, c.key, c.val)
		}
	}
	name, kv, err := SplitMapArg("flows:2001:db8::/32=1")
	if err != nil || name != "flows" || kv != "2001:db8::/32=1" {
		t.Fatalf("SplitMapArg = %q %q %v", name, kv, err)
	}
	if _, _, err := SplitMapArg("flows"); err == nil {
		t.Fatal("SplitMapArg without KEY=VALUE succeeded")
	}
}

// TestParseKVUpdate goes from a CLI string to the map and back.
func TestParseKVUpdate(t *testing.T) {
	m := mustNew(t, Spec{Name: "pc", Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4, NumCPU: 3})
	k, v, err := ParseKV(m.Spec(), "9=0x1234")
	if err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "update", m.Update(k, v, UpdateAny, -1), 0)
	got, err := LookupValuePerCPU[uint32, uint32](m, 9)
	if err != nil || fmt.Sprint(got) != "[4660 4660 4660]" {
		t.Fatalf("per-CPU values %v, %v", got, err)
	}
}

func TestTypedAPI(t *testing.T) {
	type flowKey struct {
		Src, Dst uint32
		Port     uint16
		_        [2]byte // C padding, declared
	}
	type stats struct{ Packets, Bytes uint64 }
	m := mustNew(t, Spec{Name: "flows", Type: ebpf.Hash, KeySize: 12, ValueSize: 16, MaxEntries: 8})
	k := flowKey{Src: 1, Dst: 2, Port: 80}
	if err := UpdateValue(m, k, stats{3, 300}, UpdateNoExist); err != nil {
		t.Fatal(err)
	}
	if err := UpdateValue(m, k, stats{3, 300}, UpdateNoExist); Errno(err) != -int64(syscall.EEXIST) {
		t.Fatalf("second NOEXIST update: %v", err)
	}
	got, err := LookupValue[flowKey, stats](m, k)
	if err != nil || got != (stats{3, 300}) {
		t.Fatalf("LookupValue = %+v, %v", got, err)
	}
	if _, err := LookupValue[uint32, stats](m, 1); Errno(err) != -int64(syscall.EINVAL) {
		t.Fatalf("wrong-size key: %v, want EINVAL", err)
	}
	if err := DeleteKey(m, k); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupValue[flowKey, stats](m, k); Errno(err) != -int64(syscall.ENOENT) {
		t.Fatalf("lookup after delete: %v, want ENOENT", err)
	}
	if Errno(nil) != 0 || Errno(fmt.Errorf("x")) != -int64(syscall.EINVAL) {
		t.Fatal("Errno of nil / non-errno")
	}
}

// FuzzParseKV: never panic; on success the key and value have the map's sizes.
func FuzzParseKV(f *testing.F) {
	for _, s := range []string{"1=2", "10.0.0.0/8=1", "hex:0102=0x3", "-1=-1", "::1/128=7", "a=b=c"} {
		f.Add(s)
	}
	specs := []Spec{
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 8},
		{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 3},
		{Type: ebpf.LPMTrie, KeySize: 20, ValueSize: 16},
		{Type: ebpf.PerCPUHash, KeySize: 1, ValueSize: 9, NumCPU: 3},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, spec := range specs {
			k, v, err := ParseKV(spec, s)
			if err != nil {
				continue
			}
			wantV := int(spec.ValueSize)
			if IsPerCPU(spec.Type) {
				wantV = int(roundUp8(spec.ValueSize)) * spec.NumCPU
			}
			if len(k) != int(spec.KeySize) || len(v) != wantV {
				t.Fatalf("ParseKV(%q) gave %d/%d bytes for %+v", s, len(k), len(v), spec)
			}
		}
	})
}

func TestAccessFlagsAndFreeze(t *testing.T) {
	ro := mustNew(t, Spec{Name: "ro", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2, Flags: FlagRdonly})
	if err := UpdateValue(ro, uint32(1), uint32(2), UpdateAny); Errno(err) != -int64(syscall.EPERM) {
		t.Fatalf("update of a BPF_F_RDONLY map: %v, want EPERM", err)
	}
	// A program may still write it.
	wantErrno(t, "program update", ro.Update(u32(1), u32(2), UpdateAny, 0), 0)
	if v, err := LookupValue[uint32, uint32](ro, 1); err != nil || v != 2 {
		t.Fatalf("control-plane read of a BPF_F_RDONLY map = %d, %v", v, err)
	}
	wo := mustNew(t, Spec{Name: "wo", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 2, Flags: FlagWronly})
	if _, err := LookupBytes(wo, u32(0)); Errno(err) != -int64(syscall.EPERM) {
		t.Fatalf("read of a BPF_F_WRONLY map: %v, want EPERM", err)
	}
	rodata := mustNew(t, Spec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg})
	if err := UpdateBytes(rodata, u32(0), u32(7), UpdateAny); err != nil {
		t.Fatal(err)
	}
	rodata.(*Array).Freeze()
	if err := UpdateBytes(rodata, u32(0), u32(8), UpdateAny); Errno(err) != -int64(syscall.EPERM) {
		t.Fatalf("update of a frozen map: %v, want EPERM", err)
	}
	if v, _ := LookupValue[uint32, uint32](rodata, 0); v != 7 {
		t.Fatalf("frozen value = %d, want 7", v)
	}
}
