package mapio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// ArgBytes parses s when it is a byte list, reporting false when it is
// not (a plain number or a program name). The list must fill size bytes.
func ArgBytes(s string, size int) ([]byte, bool, error) {
	s = strings.TrimSpace(s)
	hex := strings.HasPrefix(s, "hex ") || strings.HasPrefix(s, "hex:")
	if !hex && !strings.Contains(s, " ") {
		return nil, false, nil
	}
	words := strings.Fields(s)
	if hex {
		words = append([]string{"hex"}, strings.Fields(strings.ReplaceAll(s[4:], ":", " "))...)
	}
	b, rest, err := ParseBytes(words, "")
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("unexpected %q", rest)
	}
	if err == nil && len(b) != size {
		err = fmt.Errorf("%d bytes given for a field of %d", len(b), size)
	}
	return b, true, err
}

// ParseBytes reads bytes as bpftool does: each word a byte, in C notation
// (0x0a, 10, 012) unless the list starts with "hex", where each word is hex
// digits, two per byte ("0a", "0a000001"). It stops at the word stop.
func ParseBytes(words []string, stop string) ([]byte, []string, error) {
	hexMode := len(words) > 0 && words[0] == "hex"
	if hexMode {
		words = words[1:]
	}
	var out []byte
	for len(words) > 0 && words[0] != stop {
		w := words[0]
		words = words[1:]
		if hexMode {
			w = strings.TrimPrefix(w, "0x")
			if len(w)%2 != 0 {
				return nil, nil, fmt.Errorf("hex bytes %q: an odd number of digits", w)
			}
			for i := 0; i < len(w); i += 2 {
				v, err := strconv.ParseUint(w[i:i+2], 16, 8)
				if err != nil {
					return nil, nil, fmt.Errorf("hex bytes %q: %v", w, err)
				}
				out = append(out, byte(v))
			}
			continue
		}
		v, err := strconv.ParseUint(w, 0, 8)
		if err != nil {
			return nil, nil, fmt.Errorf("byte %q: want 0 to 255 (0x0a, 10, 012), or start the list with hex", w)
		}
		out = append(out, byte(v))
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("no bytes")
	}
	return out, words, nil
}

// HexString is b as hex bytes separated by spaces ("0a 00 00 01").
func HexString(b []byte) string {
	s := make([]string, len(b))
	for i, c := range b {
		s[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(s, " ")
}

// HexDecode reads hex bytes separated by white space ("0a 0 ff"), each
// with or without 0x (as Entry holds them).
func HexDecode(s string) ([]byte, error) {
	var out []byte
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 8)
		if err != nil {
			return nil, fmt.Errorf("byte %q: %w", f, err)
		}
		out = append(out, byte(v))
	}
	return out, nil
}

// SetArg applies NAME:KEY=VALUE to the collection's maps. KEY is an integer
// written in the map's key size; VALUE a comma-separated list of integers (32-bit
// fields, or one field filling the whole value) or program names (their ids).
// Per-CPU maps get the value in every slot.
func SetArg(c *bpf.Collection, arg string) error {
	name, kv, ok := strings.Cut(arg, ":")
	if !ok {
		return errors.New("want NAME:KEY=VALUE")
	}
	ks, vs, ok := strings.Cut(kv, "=")
	if !ok {
		return errors.New("want NAME:KEY=VALUE")
	}
	m, err := c.Map(name)
	if err != nil {
		return err
	}
	spec := m.Spec()
	key, err := IntBytes(ks, int(spec.KeySize))
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	fields := strings.Split(vs, ",")
	var val []byte
	if len(fields) == 1 {
		if val, err = valueField(c, fields[0], int(spec.ValueSize)); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	} else {
		for _, f := range fields {
			b, err := valueField(c, f, 4)
			if err != nil {
				return fmt.Errorf("value: %w", err)
			}
			val = append(val, b...)
		}
		if len(val) != int(spec.ValueSize) {
			return fmt.Errorf("value of %d bytes for a map with %d-byte values", len(val), spec.ValueSize)
		}
	}
	cpu := 0
	if maps.IsPerCPU(spec.Type) {
		cpu = -1
		one := (len(val) + 7) &^ 7
		all := make([]byte, one*max(spec.NumCPU, 1))
		for i := 0; i < max(spec.NumCPU, 1); i++ {
			copy(all[i*one:], val)
		}
		val = all
	}
	return m.Update(key, val, maps.UpdateAny, cpu)
}

// valueField is one field of a value: a byte list, an integer, or a program
// name (its id).
func valueField(c *bpf.Collection, s string, size int) ([]byte, error) {
	if _, ok, err := ArgBytes(s, size); ok && err != nil {
		return nil, err
	}
	if b, err := IntBytes(s, size); err == nil {
		return b, nil
	}
	p, err := c.Program(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is neither a number nor a program of the object", s)
	}
	return IntBytes(strconv.FormatUint(uint64(p.ID()), 10), size)
}

// IntBytes writes the integer s little-endian in size bytes (1, 2, 4 or 8).
func IntBytes(s string, size int) ([]byte, error) {
	if b, ok, err := ArgBytes(s, size); ok {
		return b, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b, v)
	default:
		return nil, fmt.Errorf("%d-byte integers are not supported", size)
	}
	if size < 8 && v>>(8*size) != 0 {
		return nil, fmt.Errorf("%d does not fit %d bytes", v, size)
	}
	return b, nil
}
