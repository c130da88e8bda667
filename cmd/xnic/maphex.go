package main

import (
	"fmt"
	"strings"
)

// Byte lists in --map NAME:KEY=VALUE, for keys and values of any size (LPM
// keys, 16-byte flow keys) as bpftool map update takes them: bytes separated
// by spaces in C notation ("10 0 0 1", "0x0a 0x00 0x00 0x01"), or after
// "hex" as hex digits, two per byte, in one or several words ("hex
// 0a000001", "hex 0a 00 00 01"; "hex:" and ':' between bytes also do, for
// shells). A plain number stays an integer of the field's size (run.go).

// mapArgBytes parses s when it is a byte list, reporting false when it is
// not (a plain number or a program name). The list must fill size bytes.
func mapArgBytes(s string, size int) ([]byte, bool, error) {
	s = strings.TrimSpace(s)
	hex := strings.HasPrefix(s, "hex ") || strings.HasPrefix(s, "hex:")
	if !hex && !strings.Contains(s, " ") {
		return nil, false, nil
	}
	words := strings.Fields(s)
	if hex {
		words = append([]string{"hex"}, strings.Fields(strings.ReplaceAll(s[4:], ":", " "))...)
	}
	b, rest, err := parseBytes(words, "")
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("unexpected %q", rest)
	}
	if err == nil && len(b) != size {
		err = fmt.Errorf("%d bytes given for a field of %d", len(b), size)
	}
	return b, true, err
}
