// Package mapio reads and writes the contents of BPF maps in the formats
// bpftool uses, so that a map can be filled before a program runs, dumped
// while it runs, and updated by hand:
//
//   - Dump and WriteText: a map's entries as `bpftool map dump` prints them
//     (hex bytes of key and value, one "value (CPU NN)" line per slot of a
//     per-CPU map) and as `bpftool map dump -j` encodes them, with the entry
//     decoded by the object's BTF (package btfvalue) in "formatted".
//   - Update, ParseBytes: one entry as `bpftool map update` takes it.
//   - SetArg: NAME:KEY=VALUE, integers or byte lists (xnic run --map).
//   - LoadFile: a map file.
//
// # Map files
//
// A map file (xnic run --maps, xnic prog run --maps) has two forms, told apart by the first character:
//
// JSON, as `bpftool map dump -j` prints each map, under the map's name:
//
//	{"acl_v4": [{"key": ["0x08","0x00","0x00","0x00","0x0a","0x00","0x00","0x00"],
//	             "value": ["0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00"]}],
//	 "rxcnt":  [{"key": "11000000", "values": [{"cpu": 0, "value": "0100000000000000"}]}]}
//
// or a list of entries each naming its map ("map": "acl_v4"). Keys and values
// are bpftool's arrays of "0xNN" strings (numbers 0-255 also do) or one hex
// string; bpftool's "formatted" member is ignored. Per-CPU maps take
// bpftool's "values" (one per CPU) or one "value" for every CPU.
//
// Hex lines, one entry each, '#' starting a comment:
//
//	acl_v4  08000000 0a000000  0000000000000000
//
// the map name, then the key's bytes, then the value's, in hex; spaces
// between byte groups are allowed as long as the key's bytes add up to the
// map's key size (the rest is the value).
//
// # Byte lists
//
// Byte lists in NAME:KEY=VALUE arguments, for keys and values of any size
// (LPM keys, 16-byte flow keys) as bpftool map update takes them: bytes separated
// by spaces in C notation ("10 0 0 1", "0x0a 0x00 0x00 0x01"), or after
// "hex" as hex digits, two per byte, in one or several words ("hex
// 0a000001", "hex 0a 00 00 01"; "hex:" and ':' between bytes also do, for
// shells). A plain number stays an integer of the field's size.
package mapio
