package maps

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
)

func TestDevMap(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}).(*DevMap)
	if m.Spec().Flags&FlagRdonlyProg == 0 {
		t.Fatal("devmap spec lacks BPF_F_RDONLY_PROG (the kernel adds it)")
	}
	wantErrno(t, "NOEXIST", m.Update(u32(1), append(u32(7), u32(0)...), UpdateNoExist, 0), syscall.EEXIST)
	wantErrno(t, "out of range", m.Update(u32(4), append(u32(7), u32(0)...), UpdateAny, 0), syscall.E2BIG)
	wantErrno(t, "prog fd without resolver", m.Update(u32(1), append(u32(7), u32(5)...), UpdateAny, 0), syscall.EINVAL)
	wantErrno(t, "ifindex 0 with prog fd", m.Update(u32(1), append(u32(0), u32(5)...), UpdateAny, 0), syscall.EINVAL)
	m.SetProgResolver(func(fd int32) (any, uint32, error) {
		if fd != 5 {
			return nil, 0, errors.New("bad fd")
		}
		return "prog5", 77, nil
	})
	wantErrno(t, "set with prog", m.Update(u32(1), append(u32(7), u32(5)...), UpdateExist, 0), 0)
	if v := m.Lookup(u32(1), 0); !bytes.Equal(v, append(u32(7), u32(77)...)) {
		t.Fatalf("lookup = %x, want ifindex 7 and prog id 77", v)
	}
	tg, ok := m.Target(1)
	if !ok || tg.Ifindex != 7 || tg.Prog != "prog5" {
		t.Fatalf("Target(1) = %+v, %v", tg, ok)
	}
	if n := testing.AllocsPerRun(100, func() { tg, ok = m.Target(1) }); n != 0 {
		t.Fatalf("Target allocates %v", n)
	}
	m.SetIfindexCheck(func(i uint32) bool { return i < 100 })
	wantErrno(t, "unknown ifindex", m.Update(u32(2), append(u32(100), u32(0)...), UpdateAny, 0), syscall.EINVAL)
	wantErrno(t, "clear with ifindex 0", m.Update(u32(1), make([]byte, 8), UpdateAny, 0), 0)
	if m.Lookup(u32(1), 0) != nil {
		t.Fatal("slot still set after ifindex 0")
	}
	wantErrno(t, "delete empty", m.Delete(u32(1)), 0)
	wantErrno(t, "delete out of range", m.Delete(u32(4)), syscall.EINVAL)
	_ = m.Set(3, 9, nil, 0)
	var seen []uint32
	m.Each(func(d DevTarget) bool { seen = append(seen, d.Key); return true })
	if len(seen) != 1 || seen[0] != 3 {
		t.Fatalf("Each saw %v, want [3]", seen)
	}
}

func TestDevMapHash(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 2}).(*DevMapHash)
	wantErrno(t, "ifindex 0", m.Update(u32(5), u32(0), UpdateAny, 0), syscall.EINVAL)
	// The kernel checks only NOEXIST: EXIST on a missing key inserts.
	wantErrno(t, "EXIST on missing", m.Update(u32(5), u32(5), UpdateExist, 0), 0)
	wantErrno(t, "NOEXIST on present", m.Update(u32(5), u32(6), UpdateNoExist, 0), syscall.EEXIST)
	wantErrno(t, "second", m.Update(u32(9), u32(9), UpdateAny, 0), 0)
	wantErrno(t, "full", m.Update(u32(13), u32(13), UpdateAny, 0), syscall.E2BIG)
	wantErrno(t, "replace when full", m.Update(u32(9), u32(10), UpdateAny, 0), 0)
	if tg, ok := m.Target(9); !ok || tg.Ifindex != 10 {
		t.Fatalf("Target(9) = %+v, %v", tg, ok)
	}
	count := 0
	each := func(DevTarget) bool { count++; return true }
	if n := testing.AllocsPerRun(100, func() { m.Each(each) }); n != 0 {
		t.Fatalf("Each allocates %v (the broadcast path runs it per frame)", n)
	}
	if count != 2*101 {
		t.Fatalf("Each visited %d entries in 101 runs, want 202", count)
	}
	wantErrno(t, "delete", m.Delete(u32(9)), 0)
	wantErrno(t, "delete missing", m.Delete(u32(9)), syscall.ENOENT)
}

func TestCPUMap(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 8, NumCPU: 2}).(*CPUMap)
	wantErrno(t, "qsize too big", m.Update(u32(0), u32(16385), UpdateAny, 0), syscall.EOVERFLOW)
	wantErrno(t, "not a CPU slot", m.Update(u32(2), u32(64), UpdateAny, 0), syscall.ENODEV)
	wantErrno(t, "past max", m.Update(u32(8), u32(64), UpdateAny, 0), syscall.E2BIG)
	wantErrno(t, "NOEXIST", m.Update(u32(1), u32(64), UpdateNoExist, 0), syscall.EEXIST)
	wantErrno(t, "set", m.Update(u32(1), u32(64), UpdateAny, 0), 0)
	if tg, ok := m.Target(1); !ok || tg.Qsize != 64 || tg.CPU != 1 {
		t.Fatalf("Target(1) = %+v, %v", tg, ok)
	}
	wantErrno(t, "qsize 0 clears", m.Update(u32(1), u32(0), UpdateAny, 0), 0)
	if m.Lookup(u32(1), 0) != nil {
		t.Fatal("entry survived qsize 0")
	}
	_, err := New(Spec{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 9000})
	wantErrno(t, "max_entries over NR_CPUS", err, syscall.E2BIG)
}

func TestXSKMap(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}).(*XSKMap)
	if m.Lookup(u32(2), 0) != nil {
		t.Fatal("unbound slot looks bound")
	}
	consumer := make(chan []byte)
	wantErrno(t, "bind EXIST on free", m.Bind(2, 7, consumer, UpdateExist), syscall.ENOENT)
	wantErrno(t, "bind", m.Bind(2, 7, consumer, UpdateNoExist), 0)
	wantErrno(t, "bind NOEXIST on bound", m.Bind(2, 7, consumer, UpdateNoExist), syscall.EEXIST)
	if v := m.Lookup(u32(2), 0); !bytes.Equal(v, u32(7)) {
		t.Fatalf("lookup of bound slot = %x, want queue id 7", v)
	}
	if s, ok := m.Socket(2); !ok || s.Consumer != any(consumer) {
		t.Fatal("Socket(2) lost the consumer")
	}
	wantErrno(t, "update with an fd", m.Update(u32(2), u32(3), UpdateAny, 0), syscall.EOPNOTSUPP)
	wantErrno(t, "update past max", m.Update(u32(4), u32(3), UpdateAny, 0), syscall.E2BIG)
	wantErrno(t, "unbind", m.Unbind(2), 0)
	wantErrno(t, "unbind again", m.Unbind(2), syscall.ENOENT)
	if m.Lookup(u32(2), 0) != nil {
		t.Fatal("unbound slot still looks bound")
	}
}

func TestProgArray(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}).(*ProgArray)
	wantErrno(t, "update without resolver", m.Update(u32(0), u32(3), UpdateAny, 0), syscall.EINVAL)
	wantErrno(t, "update NOEXIST", m.Update(u32(0), u32(3), UpdateNoExist, 0), syscall.EINVAL)
	m.SetProgResolver(func(fd int32) (any, uint32, error) { return fd * 10, uint32(fd), nil })
	wantErrno(t, "update", m.Update(u32(0), u32(3), UpdateAny, 0), 0)
	wantErrno(t, "update past max", m.Update(u32(4), u32(3), UpdateAny, 0), syscall.E2BIG)
	if p := m.Prog(0); p != int32(30) {
		t.Fatalf("Prog(0) = %v", p)
	}
	if m.Lookup(u32(0), 0) != nil {
		t.Fatal("programs must not read a prog_array")
	}
	if id, err := m.ProgID(0); err != nil || id != 3 {
		t.Fatalf("ProgID = %d, %v", id, err)
	}
	_ = m.SetProg(2, "tail", 9)
	if m.Prog(2) != "tail" || m.Prog(1) != nil || m.Prog(99) != nil {
		t.Fatal("SetProg/Prog mismatch")
	}
	var p any
	if n := testing.AllocsPerRun(100, func() { p = m.Prog(2) }); n != 0 || p == nil {
		t.Fatalf("Prog allocates %v", n)
	}
	wantErrno(t, "delete", m.Delete(u32(2)), 0)
	wantErrno(t, "delete empty", m.Delete(u32(2)), syscall.ENOENT)
	wantErrno(t, "delete past max", m.Delete(u32(4)), syscall.E2BIG)
}
