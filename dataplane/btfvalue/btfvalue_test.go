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
