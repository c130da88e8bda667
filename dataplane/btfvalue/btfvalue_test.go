package btfvalue

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/cilium/ebpf/btf"
)

func TestBTFValue(t *testing.T) {
	u16 := &btf.Int{Name: "u16", Size: 2}
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	u8 := &btf.Int{Name: "u8", Size: 1}
	verdict := &btf.Enum{Name: "verdict", Size: 4, Values: []btf.EnumValue{{Name: "PASS", Value: 2}, {Name: "DROP", Value: 1}}}
	st := &btf.Struct{Name: "flow", Size: 16, Members: []btf.Member{
		{Name: "port", Type: u16, Offset: 0},
		{Name: "delta", Type: &btf.Typedef{Name: "s32_t", Type: s32}, Offset: 32},
		{Name: "action", Type: verdict, Offset: 64},
		{Name: "mac", Type: &btf.Array{Type: u8, Nelems: 2, Index: u16}, Offset: 96},
		{Name: "lo", Type: u8, Offset: 112, BitfieldSize: 3},
		{Name: "hi", Type: u8, Offset: 115, BitfieldSize: 5},
	}}
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b[0:], 8080)
	binary.NativeEndian.PutUint32(b[4:], uint32(0xFFFFFFFE)) // -2
	binary.NativeEndian.PutUint32(b[8:], 2)
	b[12], b[13] = 0xaa, 0xbb
	b[14] = 5 | 17<<3
	v, err := Decode(st, b)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(v)
	if want := `{"port":8080,"delta":-2,"action":"PASS","mac":[170,187],"lo":5,"hi":17}`; string(j) != want {
		t.Fatalf("%s\nwant %s", j, want)
	}
	if _, err := Decode(st, b[:8]); err == nil {
		t.Fatal("a value shorter than its type decoded")
	}
}

// TestBTFValueKinds: bools, chars, pointers, floats, unsigned and signed
// enums, unions and data sections decode as bpftool shows them.
func TestBTFValueKinds(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	b := make([]byte, 8)
	binary.NativeEndian.PutUint32(b, 7)
	binary.NativeEndian.PutUint32(b[4:], uint32(0xFFFFFFFF))
	sec := &btf.Datasec{Name: ".bss", Size: 8, Vars: []btf.VarSecinfo{
		{Type: &btf.Var{Name: "count", Type: u32}, Offset: 0, Size: 4},
		{Type: &btf.Var{Name: "level", Type: &btf.Enum{Name: "lvl", Size: 4, Signed: true, Values: []btf.EnumValue{{Name: "LOW", Value: 0}}}}, Offset: 4, Size: 4},
	}}
	for _, c := range []struct {
		t    btf.Type
		b    []byte
		want string
	}{
		{&btf.Int{Name: "bool", Size: 1, Encoding: btf.Bool}, []byte{1}, `true`},
		{&btf.Int{Name: "char", Size: 1, Encoding: btf.Char}, []byte{'x'}, `"x"`},
		{&btf.Pointer{Target: u32}, []byte{0x10, 0, 0, 0, 0, 0, 0, 0}, `"0x10"`},
		{&btf.Float{Name: "float", Size: 4}, binary.NativeEndian.AppendUint32(nil, 0x3fc00000), `1.5`},
		{&btf.Union{Name: "u", Size: 4, Members: []btf.Member{{Name: "a", Type: u32}, {Name: "b", Type: &btf.Int{Name: "u8", Size: 1}}}}, b[:4], `{"a":7,"b":7}`},
		{sec, b, `{"count":7,"level":-1}`},
	} {
		v, err := Decode(c.t, c.b)
		if err != nil {
			t.Errorf("%v: %v", c.t, err)
			continue
		}
		if j, _ := json.Marshal(v); string(j) != c.want {
			t.Errorf("%v: %s, want %s", c.t, j, c.want)
		}
	}
	if _, err := Decode(sec, b[:6]); err == nil {
		t.Error("a data section longer than its bytes decoded")
	}
}

// FuzzDecode: never panic on any bytes, whatever their length.
func FuzzDecode(f *testing.F) {
	st := &btf.Struct{Name: "s", Size: 12, Members: []btf.Member{
		{Name: "a", Type: &btf.Int{Name: "u16", Size: 2}, Offset: 0},
		{Name: "bits", Type: &btf.Int{Name: "u8", Size: 1}, Offset: 21, BitfieldSize: 7},
		{Name: "arr", Type: &btf.Array{Type: &btf.Int{Name: "u8", Size: 1}, Nelems: 8}, Offset: 32},
	}}
	f.Add([]byte("0123456789ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(st, b)
		if err != nil && v != nil {
			t.Fatal("a value with an error")
		}
	})
}
