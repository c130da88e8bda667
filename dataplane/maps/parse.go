package maps

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
)

// SplitMapArg splits the CLI's `--map NAME:KEY=VALUE` argument into the map
// name and the KEY=VALUE part (split at the first ':'; map names have none,
// IPv6 keys may).
func SplitMapArg(arg string) (name, kv string, err error) {
	name, kv, ok := strings.Cut(arg, ":")
	if !ok || name == "" || !strings.Contains(kv, "=") {
		return "", "", fmt.Errorf("map argument %q: want NAME:KEY=VALUE: %w", arg, syscall.EINVAL)
	}
	return name, kv, nil
}

// ParseKV parses "KEY=VALUE" into a key and a value for spec's map, each in
// one of these forms:
//
//   - a number: decimal (42, -1) or 0x hex (0x2a), stored little-endian in
//     the key or value size (zero- or sign-extended beyond 8 bytes); it must
//     fit;
//   - raw bytes: "hex:" followed by exactly size bytes in hex, in memory order
//     ("hex:0a000001"; ':' and '_' separators allowed after the prefix);
//   - an IP address (10.0.0.1, 2001:db8::1) when the size is 4 or 16: the
//     address bytes in network order, as programs compare them;
//   - for an lpm_trie key, a prefix (10.0.0.0/8, 2001:db8::/32): the u32
//     prefix length then the address bytes.
//
// For per-CPU maps the value is repeated for every CPU slot in the syscall
// layout (NumCPU values, each rounded up to 8 bytes), ready for
// Update(key, value, flags, -1).
func ParseKV(spec Spec, s string) (key, value []byte, err error) {
	ks, vs, ok := strings.Cut(s, "=")
	if !ok {
		return nil, nil, mapErr(spec.Name, syscall.EINVAL, "%q: want KEY=VALUE", s)
	}
	if spec.KeySize == 0 || spec.Type == ebpf.RingBuf {
		return nil, nil, mapErr(spec.Name, syscall.EINVAL, "a %v map has no keys to set", spec.Type)
	}
	key, err = parseBytes(strings.TrimSpace(ks), spec.KeySize, spec.Type == ebpf.LPMTrie)
	if err != nil {
		return nil, nil, fmt.Errorf("map %q: key %q: %w", spec.Name, ks, err)
	}
	value, err = parseBytes(strings.TrimSpace(vs), spec.ValueSize, false)
	if err != nil {
		return nil, nil, fmt.Errorf("map %q: value %q: %w", spec.Name, vs, err)
	}
	return key, replicatePerCPU(spec, value), nil
}

func parseBytes(tok string, size uint32, lpmKey bool) ([]byte, error) {
	if tok == "" {
		return nil, fmt.Errorf("empty; want a number, hex:BYTES or an address: %w", syscall.EINVAL)
	}
	if raw, ok := strings.CutPrefix(tok, "hex:"); ok {
		raw = strings.NewReplacer(":", "", "_", "", " ", "").Replace(raw)
		b, err := hex.DecodeString(raw)
		if err != nil {
			return nil, fmt.Errorf("bad hex bytes: %v: %w", err, syscall.EINVAL)
		}
		if len(b) != int(size) {
			return nil, fmt.Errorf("%d bytes given, the map wants %d: %w", len(b), size, syscall.EINVAL)
		}
		return b, nil
	}
	if lpmKey && strings.Contains(tok, "/") {
		p, err := netip.ParsePrefix(tok)
		if err != nil {
			return nil, fmt.Errorf("bad prefix: %v: %w", err, syscall.EINVAL)
		}
		a := p.Addr().AsSlice()
		if uint32(len(a))+4 != size {
			return nil, fmt.Errorf("a %d-byte address, the trie's keys hold %d data bytes: %w", len(a), size-4, syscall.EINVAL)
		}
		return append(binary.LittleEndian.AppendUint32(nil, uint32(p.Bits())), a...), nil
	}
	if (size == 4 || size == 16) && strings.ContainsAny(tok, ".:") {
		a, err := netip.ParseAddr(tok)
		if err != nil {
			return nil, fmt.Errorf("bad address: %v: %w", err, syscall.EINVAL)
		}
		b := a.AsSlice()
		if len(b) != int(size) {
			return nil, fmt.Errorf("a %d-byte address for a %d-byte field: %w", len(b), size, syscall.EINVAL)
		}
		return b, nil
	}
	neg := strings.HasPrefix(tok, "-")
	var u uint64
	if neg {
		v, err := strconv.ParseInt(tok, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number, hex:BYTES or address: %v: %w", err, syscall.EINVAL)
		}
		if size < 8 && v < -(int64(1)<<(8*size-1)) {
			return nil, fmt.Errorf("%d does not fit in %d bytes: %w", v, size, syscall.EINVAL)
		}
		u = uint64(v)
	} else {
		v, err := strconv.ParseUint(tok, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number, hex:BYTES or address: %v: %w", err, syscall.EINVAL)
		}
		if size < 8 && v>>(8*size) != 0 {
			return nil, fmt.Errorf("%d does not fit in %d bytes: %w", v, size, syscall.EINVAL)
		}
		u = v
	}
	b := make([]byte, size)
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], u)
	copy(b, w[:])
	if neg {
		for i := 8; i < int(size); i++ {
			b[i] = 0xff
		}
	}
	return b, nil
}
