package nic

import (
	"fmt"
	"strings"
)

// RegDump is a named, decoded snapshot of a device's registers, as drivers'
// Dump methods return it. Which registers it holds, and that none of them has a
// read side effect, is the driver's business; RegDump only carries and renders
// them.
type RegDump struct {
	Registers []RegValue `json:"registers"`
	// NameWidth and OffsetDigits lay out String's columns: the register name
	// padded to NameWidth characters, the offset in OffsetDigits hex digits.
	// Zero: wide enough for the longest name and the largest offset.
	NameWidth    int `json:"-"`
	OffsetDigits int `json:"-"`
}

// RegValue is one register with its decoded fields.
type RegValue struct {
	Name   string  `json:"name"`
	Offset uint32  `json:"offset"`
	Value  uint32  `json:"value"`
	Fields []Field `json:"fields,omitempty"`
}

// Field is one decoded field of a register.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Reg returns the named register of the dump, and whether it is there.
func (d *RegDump) Reg(name string) (RegValue, bool) {
	for _, r := range d.Registers {
		if r.Name == name {
			return r, true
		}
	}
	return RegValue{}, false
}

// Field returns the value of a named field, and whether it is there.
func (r RegValue) Field(name string) (string, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// Read reads the register at byte offset off of r, appends it under name with
// the fields decode makes of its value (none when decode is nil), and returns
// the value. It reads the register exactly once.
func (d *RegDump) Read(r Regs, name string, off uint32, decode func(v uint32) []Field) uint32 {
	v := r.Read32(off)
	rv := RegValue{Name: name, Offset: off, Value: v}
	if decode != nil {
		rv.Fields = decode(v)
	}
	d.Registers = append(d.Registers, rv)
	return v
}

// String renders the dump one register per line: name, offset, value, fields.
func (d *RegDump) String() string {
	nw, od := d.NameWidth, d.OffsetDigits
	if nw <= 0 || od <= 0 {
		var maxOff uint32
		w := 0
		for _, r := range d.Registers {
			w = max(w, len(r.Name))
			maxOff = max(maxOff, r.Offset)
		}
		if nw <= 0 {
			nw = w
		}
		if od <= 0 {
			od = max(1, len(fmt.Sprintf("%x", maxOff)))
		}
	}
	var b strings.Builder
	for _, r := range d.Registers {
		fmt.Fprintf(&b, "%-*s [0x%0*x] 0x%08x", nw, r.Name, od, r.Offset, r.Value)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, " %s=%s", f.Name, f.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Flag names one single-bit field of a register by its mask.
type Flag struct {
	Mask uint32
	Name string
}

// FlagFields decodes v's flags, in the order of fs, as fields valued "0" or "1".
func FlagFields(v uint32, fs []Flag) []Field {
	out := make([]Field, 0, len(fs))
	for _, f := range fs {
		b := "0"
		if v&f.Mask != 0 {
			b = "1"
		}
		out = append(out, Field{f.Name, b})
	}
	return out
}
