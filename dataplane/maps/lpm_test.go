package maps

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
)

// lpmKey builds a bpf_lpm_trie_key_u8 from a prefix ("10.0.0.0/8").
func lpmKey(t testing.TB, p string) []byte {
	t.Helper()
	pf := netip.MustParsePrefix(p)
	b := binary.LittleEndian.AppendUint32(nil, uint32(pf.Bits()))
	return append(b, pf.Addr().AsSlice()...)
}

func lpmHost(t testing.TB, a string) []byte {
	ad := netip.MustParseAddr(a)
	return lpmKey(t, netip.PrefixFrom(ad, ad.BitLen()).String())
}

func TestLPMIPv4LongestMatch(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: FlagNoPrealloc})
	for i, p := range []string{"0.0.0.0/0", "10.0.0.0/8", "10.1.2.0/24", "10.1.2.3/32", "192.168.0.0/16"} {
		wantErrno(t, "insert "+p, m.Update(lpmKey(t, p), u32(uint32(i+1)), UpdateNoExist, 0), 0)
	}
	for _, c := range []struct {
		addr string
		want uint32 // 0: no match
	}{
		{"10.1.2.3", 4}, {"10.1.2.4", 3}, {"10.1.3.1", 2}, {"10.255.255.255", 2},
		{"11.0.0.1", 1}, {"192.168.7.7", 5}, {"192.169.0.0", 1}, {"0.0.0.0", 1},
	} {
		v := m.Lookup(lpmHost(t, c.addr), 0)
		if got, _ := keyIndex(v); v == nil || got != c.want {
			t.Errorf("lookup %s = %x, want value %d", c.addr, v, c.want)
		}
	}
	// A lookup key's own prefix length bounds the match: 10.1.2.3/16 sees /8.
	if v := m.Lookup(lpmKey(t, "10.1.0.0/16"), 0); v == nil || v[0] != 2 {
		t.Errorf("lookup 10.1.0.0/16 = %x, want /8's value 2", v)
	}
	wantErrno(t, "delete /0", m.Delete(lpmKey(t, "0.0.0.0/0")), 0)
	if v := m.Lookup(lpmHost(t, "11.0.0.1"), 0); v != nil {
		t.Errorf("after deleting /0, 11.0.0.1 matched %x", v)
	}
	// Exact semantics for update and delete.
	wantErrno(t, "delete non-stored /12", m.Delete(lpmKey(t, "10.0.0.0/12")), syscall.ENOENT)
	wantErrno(t, "EXIST on missing", m.Update(lpmKey(t, "10.0.0.0/12"), u32(9), UpdateExist, 0), syscall.ENOENT)
	wantErrno(t, "NOEXIST on stored", m.Update(lpmKey(t, "10.0.0.0/8"), u32(9), UpdateNoExist, 0), syscall.EEXIST)
	wantErrno(t, "prefix over 32", m.Update(append(u32(33), 10, 0, 0, 0), u32(9), UpdateAny, 0), syscall.EINVAL)
	wantErrno(t, "bad flags", m.Update(lpmKey(t, "10.0.0.0/8"), u32(9), 3, 0), syscall.EINVAL)
}

func TestLPMIPv6(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 20, ValueSize: 1, MaxEntries: 8, Flags: FlagNoPrealloc})
	for i, p := range []string{"::/0", "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1::1/128", "fe80::/10"} {
		wantErrno(t, "insert "+p, m.Update(lpmKey(t, p), []byte{byte(i + 1)}, UpdateAny, 0), 0)
	}
	for addr, want := range map[string]byte{
		"2001:db8:1::1": 4, "2001:db8:1::2": 3, "2001:db8:2::1": 2, "2001:db9::": 1, "fe80::1": 5, "febf::1": 5, "fec0::1": 1,
	} {
		if v := m.Lookup(lpmHost(t, addr), 0); len(v) != 1 || v[0] != want {
			t.Errorf("lookup %s = %x, want %d", addr, v, want)
		}
	}
}

func TestLPMFullAndCreate(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 2, Flags: FlagNoPrealloc})
	_ = m.Update(lpmKey(t, "1.0.0.0/8"), u32(1), UpdateAny, 0)
	_ = m.Update(lpmKey(t, "2.0.0.0/8"), u32(1), UpdateAny, 0)
	wantErrno(t, "insert into full", m.Update(lpmKey(t, "3.0.0.0/8"), u32(1), UpdateAny, 0), syscall.ENOSPC)
	wantErrno(t, "replace in full", m.Update(lpmKey(t, "2.0.0.0/8"), u32(2), UpdateAny, 0), 0)
	for _, c := range []struct {
		s    Spec
		want syscall.Errno
	}{
		{Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 2}, syscall.EINVAL},
		{Spec{Type: ebpf.LPMTrie, KeySize: 4, ValueSize: 4, MaxEntries: 2, Flags: FlagNoPrealloc}, syscall.EINVAL},
		{Spec{Type: ebpf.LPMTrie, KeySize: 261, ValueSize: 4, MaxEntries: 2, Flags: FlagNoPrealloc}, syscall.EINVAL},
		{Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 0, MaxEntries: 2, Flags: FlagNoPrealloc}, syscall.EINVAL},
		{Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 2, Flags: FlagNoPrealloc | FlagMmapable}, syscall.EINVAL},
	} {
		_, err := New(c.s)
		wantErrno(t, fmt.Sprintf("New(%+v)", c.s), err, c.want)
	}
}

func lpmKeys(t testing.TB, m Map) []string {
	var out []string
	next := make([]byte, m.Spec().KeySize)
	var key []byte
	for range 1000 {
		if err := m.NextKey(key, next); err != nil {
			wantErrno(t, "NextKey end", err, syscall.ENOENT)
			return out
		}
		addr, _ := netip.AddrFromSlice(next[4:])
		plen, _ := keyIndex(next[:4])
		out = append(out, fmt.Sprintf("%s/%d", addr, plen))
		key = append(key[:0], next...)
	}
	t.Fatal("NextKey did not end")
	return nil
}

func TestLPMNextKeyPostOrder(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: FlagNoPrealloc})
	// The kernel's own example (lpm_trie.c): more specific before less specific.
	for _, p := range []string{"192.168.0.0/16", "192.168.0.0/24", "192.168.128.0/24", "192.168.1.0/24"} {
		_ = m.Update(lpmKey(t, p), u32(1), UpdateAny, 0)
	}
	got := fmt.Sprint(lpmKeys(t, m))
	want := "[192.168.0.0/24 192.168.1.0/24 192.168.128.0/24 192.168.0.0/16]"
	if got != want {
		t.Fatalf("NextKey order %s, want %s", got, want)
	}
	// An absent key restarts from the leftmost.
	next := make([]byte, 8)
	wantErrno(t, "NextKey absent", m.NextKey(lpmKey(t, "10.0.0.0/8"), next), 0)
	if !bytes.Equal(next, lpmKey(t, "192.168.0.0/24")) {
		t.Fatalf("NextKey(absent) = %x", next)
	}
	// Deleting a node with two children keeps it as a branch point.
	_ = m.Delete(lpmKey(t, "192.168.0.0/16"))
	if got := fmt.Sprint(lpmKeys(t, m)); got != "[192.168.0.0/24 192.168.1.0/24 192.168.128.0/24]" {
		t.Fatalf("after delete: %s", got)
	}
}

// TestLPMAgainstBruteForce applies random operations to the trie and to a
// list of prefixes searched linearly, and compares every answer.
func TestLPMAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 6, ValueSize: 4, MaxEntries: 40, Flags: FlagNoPrealloc})
	type ent struct {
		plen uint32
		data [2]byte
		val  uint32
	}
	ref := map[[6]byte]ent{}
	canon := func(plen uint32, d [2]byte) [6]byte {
		var k [6]byte
		binary.LittleEndian.PutUint32(k[:], plen)
		copy(k[4:], d[:])
		return k
	}
	bitsMatch := func(a, b [2]byte, n uint32) bool {
		x := uint16(a[0])<<8 | uint16(a[1])
		y := uint16(b[0])<<8 | uint16(b[1])
		if n == 0 {
			return true
		}
		return (x^y)>>(16-n) == 0
	}
	for i := range 20000 {
		plen := uint32(r.IntN(17))
		d := [2]byte{byte(r.IntN(4) << 6), byte(r.IntN(256))}
		// Keep stored data canonical (host bits zero) so the reference map's
		// exact match equals the trie's prefix match.
		x := uint16(d[0])<<8 | uint16(d[1])
		if plen < 16 {
			x &^= 0xFFFF >> plen
		}
		d = [2]byte{byte(x >> 8), byte(x)}
		k := canon(plen, d)
		_, exists := ref[k]
		switch op := r.IntN(3); op {
		case 0:
			flags := uint64(r.IntN(3))
			err := m.Update(k[:], u32(uint32(i)), flags, 0)
			var want syscall.Errno
			switch {
			case exists && flags == UpdateNoExist:
				want = syscall.EEXIST
			case !exists && flags == UpdateExist:
				want = syscall.ENOENT
			case !exists && len(ref) == 40:
				want = syscall.ENOSPC
			}
			wantErrno(t, fmt.Sprintf("op %d update %x flags %d", i, k, flags), err, want)
			if want == 0 {
				ref[k] = ent{plen, d, uint32(i)}
			}
		case 1:
			var want syscall.Errno
			if !exists {
				want = syscall.ENOENT
			}
			wantErrno(t, fmt.Sprintf("op %d delete %x", i, k), m.Delete(k[:]), want)
			delete(ref, k)
		case 2:
			host := [2]byte{byte(r.IntN(256)), byte(r.IntN(256))}
			var best *ent
			for _, e := range ref {
				if bitsMatch(e.data, host, e.plen) && (best == nil || e.plen > best.plen) {
					e := e
					best = &e
				}
			}
			hk := canon(16, host)
			v := m.Lookup(hk[:], 0)
			if best == nil {
				if v != nil {
					t.Fatalf("op %d lookup %x: got %x, want no match", i, host, v)
				}
			} else if got, _ := keyIndex(v); v == nil || got != best.val {
				t.Fatalf("op %d lookup %x: got %x, want %d (/%d)", i, host, v, best.val, best.plen)
			}
		}
	}
	if got := len(lpmKeys(t, m)); got != len(ref) {
		t.Fatalf("NextKey walk gives %d keys, reference holds %d", got, len(ref))
	}
}

func TestLPMLookupAllocs(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: FlagNoPrealloc})
	_ = m.Update(lpmKey(t, "10.0.0.0/8"), u32(1), UpdateAny, 0)
	k := lpmHost(t, "10.9.9.9")
	if n := testing.AllocsPerRun(1000, func() { _ = m.Lookup(k, 0) }); n != 0 {
		t.Fatalf("lpm Lookup allocates %v", n)
	}
}

// TestLPMConcurrent: lock-free lookups while the control plane inserts and
// deletes; every answer must be a stored prefix that matches the address.
// Run with -race.
func TestLPMConcurrent(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 256, Flags: FlagNoPrealloc})
	// Value: the prefix's first two bytes and its length, so a reader can
	// check the match.
	put := func(a, b byte, plen uint32, flags uint64) error {
		return m.Update(append(u32(plen), a, b, 0, 0), []byte{a, b, byte(plen), 0, 0, 0, 0, 0}, flags, 0)
	}
	if err := put(0, 0, 0, UpdateAny); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 2)
	for g := range 2 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				a, b := byte(r.IntN(4)), byte(r.IntN(256))
				v := m.Lookup(append(u32(32), a, b, 1, 2), 0)
				if v == nil {
					errs <- fmt.Errorf("%d.%d.1.2 matched nothing though /0 is stored", a, b)
					return
				}
				plen := uint32(v[2])
				got := uint16(v[0])<<8 | uint16(v[1])
				want := uint16(a)<<8 | uint16(b)
				if plen > 0 && (got^want)>>(16-plen) != 0 {
					errs <- fmt.Errorf("%d.%d.1.2 matched %d.%d/%d", a, b, v[0], v[1], plen)
					return
				}
			}
		}()
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		plen := uint32(1 + r.IntN(16))
		x := uint16(r.IntN(1<<10)) << 6
		x &^= 0xFFFF >> plen
		if r.IntN(2) == 0 {
			_ = put(byte(x>>8), byte(x), plen, UpdateAny)
		} else {
			_ = m.Delete(append(u32(plen), byte(x>>8), byte(x), 0, 0))
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
