package btfvalue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/cilium/ebpf/btf"
)

// Object is a struct, union or data section: fields in declaration order.
type Object []Field

// Field is one member or variable of an Object.
type Field struct {
	Name  string
	Value any
}

// MarshalJSON writes the fields in order (a Go map would sort them).
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// btfValue decodes b as a value of type t.
func Decode(t btf.Type, b []byte) (any, error) {
	t = btf.UnderlyingType(t)
	size, err := btf.Sizeof(t)
	if err != nil {
		return nil, err
	}
	if size > len(b) {
		return nil, fmt.Errorf("%v: %d bytes, the value has %d", t, size, len(b))
	}
	switch t := t.(type) {
	case *btf.Int:
		if t.Size > 8 {
			return fmt.Sprintf("%#x", b[:t.Size]), nil
		}
		return intValue(b[:t.Size], t.Encoding), nil
	case *btf.Enum:
		v := Uint(b[:t.Size])
		for _, ev := range t.Values {
			if ev.Value == v {
				return ev.Name, nil
			}
		}
		if t.Signed {
			return signExtend(v, t.Size), nil
		}
		return v, nil
	case *btf.Pointer:
		return fmt.Sprintf("%#x", Uint(b[:size])), nil
	case *btf.Float:
		if t.Size == 4 {
			return math.Float32frombits(binary.NativeEndian.Uint32(b)), nil
		}
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), nil
	case *btf.Array:
		es, err := btf.Sizeof(t.Type)
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, t.Nelems)
		for i := 0; i < int(t.Nelems); i++ {
			v, err := Decode(t.Type, b[i*es:])
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *btf.Struct:
		return members(t.Members, b)
	case *btf.Union:
		return members(t.Members, b)
	case *btf.Datasec:
		var o Object
		for _, v := range t.Vars {
			name := fmt.Sprint(v.Type)
			vt := v.Type
			if bv, ok := v.Type.(*btf.Var); ok {
				name, vt = bv.Name, bv.Type
			}
			if int(v.Offset+v.Size) > len(b) {
				return nil, fmt.Errorf("variable %s past the section's %d bytes", name, len(b))
			}
			x, err := Decode(vt, b[v.Offset:v.Offset+v.Size])
			if err != nil {
				return nil, err
			}
			o = append(o, Field{name, x})
		}
		return o, nil
	}
	return fmt.Sprintf("%x", b[:size]), nil
}

func members(ms []btf.Member, b []byte) (Object, error) {
	o := make(Object, 0, len(ms))
	for _, m := range ms {
		off := int(m.Offset)
		if m.BitfieldSize > 0 {
			var w [8]byte
			copy(w[:], b[off/8:])
			v := binary.LittleEndian.Uint64(w[:]) >> (off % 8) & (1<<m.BitfieldSize - 1)
			o = append(o, Field{m.Name, v})
			continue
		}
		v, err := Decode(m.Type, b[off/8:])
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		}
		o = append(o, Field{m.Name, v})
	}
	return o, nil
}

// Uint is b, 1 to 8 bytes, as an unsigned integer in the host's byte order.
func Uint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	case 8:
		return binary.NativeEndian.Uint64(b)
	}
	var w [8]byte
	copy(w[:], b)
	return binary.NativeEndian.Uint64(w[:])
}

func signExtend(v uint64, size uint32) int64 {
	shift := 64 - 8*size
	return int64(v<<shift) >> shift
}

func intValue(b []byte, enc btf.IntEncoding) any {
	v := Uint(b)
	switch {
	case enc&btf.Bool != 0:
		return v != 0
	case enc&btf.Signed != 0:
		return signExtend(v, uint32(len(b)))
	case enc&btf.Char != 0 && len(b) == 1:
		return string(rune(v))
	}
	return v
}
