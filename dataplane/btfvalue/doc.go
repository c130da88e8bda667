// Package btfvalue decodes map keys and values, ring buffer records and perf
// samples by their BTF types, as bpftool's "formatted" output shows them for
// an object with BTF: integers as numbers, enums by name, structs and unions
// as objects in member order, arrays as lists, pointers in hex, data sections
// as objects of their variables.
//
// The bytes are in the host's byte order, as map memory is (the kernel's maps
// are too). Decode never panics: bytes shorter than their type are an error.
package btfvalue
