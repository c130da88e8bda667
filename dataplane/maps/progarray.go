package maps

import (
	"sync/atomic"
	"syscall"
)

// ProgArray is BPF_MAP_TYPE_PROG_ARRAY (kernel/bpf/arraymap.c, fd arrays):
// slots holding the interpreter's program handles for bpf_tail_call. Programs
// cannot look slots up (Lookup returns nil; the kernel's verifier refuses it);
// the interpreter's tail_call uses Prog. The loader and the control plane fill
// slots with SetProg, or with Update and a 4-byte program fd once a
// ProgResolver is installed. Update accepts only BPF_ANY (EINVAL otherwise);
// an index out of range is E2BIG for Update and Delete; Delete of an empty
// slot is ENOENT.
//
// Slots are atomic pointers: Prog is lock-free and does not allocate.
type ProgArray struct {
	spec     Spec
	slots    []atomic.Pointer[progSlot] // immutable slice
	resolver atomic.Pointer[ProgResolver]
}

type progSlot struct {
	prog any
	id   uint32
}

func newProgArray(spec Spec) (*ProgArray, error) {
	if spec.KeySize != 4 || spec.ValueSize != 4 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: prog_array keys and values are 4 bytes", spec.KeySize, spec.ValueSize)
	}
	if spec.Flags&(FlagRdonlyProg|FlagWronlyProg) != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "BPF_F_RDONLY_PROG/WRONLY_PROG are not accepted for a prog_array")
	}
	if err := checkFlagMask(spec, fdArrayFlagMask&^(FlagMmapable|FlagInnerMap|FlagPreserveElems)); err != nil {
		return nil, err
	}
	if uint64(spec.MaxEntries)*8 > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d entries is over xnic's cap", spec.MaxEntries)
	}
	spec.NumCPU = 0
	return &ProgArray{spec: spec, slots: make([]atomic.Pointer[progSlot], spec.MaxEntries)}, nil
}

// Spec returns the map's spec.
func (p *ProgArray) Spec() Spec { return p.spec }

// SetProgResolver installs the resolver Update uses for program fds.
func (p *ProgArray) SetProgResolver(r ProgResolver) { p.resolver.Store(&r) }

// Prog returns the program in slot index for bpf_tail_call, or nil (the tail
// call then falls through, as in the kernel). It does not allocate.
func (p *ProgArray) Prog(index uint32) any {
	if index >= p.spec.MaxEntries {
		return nil
	}
	if s := p.slots[index].Load(); s != nil {
		return s.prog
	}
	return nil
}

// ProgID returns the id of the program in slot index (what a syscall lookup
// of a prog_array reports), or ENOENT.
func (p *ProgArray) ProgID(index uint32) (uint32, error) {
	if index < p.spec.MaxEntries {
		if s := p.slots[index].Load(); s != nil {
			return s.id, nil
		}
	}
	return 0, mapErr(p.spec.Name, syscall.ENOENT, "slot %d is empty", index)
}

// SetProg puts prog (nil clears) with its id into slot index.
func (p *ProgArray) SetProg(index uint32, prog any, id uint32) error {
	if index >= p.spec.MaxEntries {
		return mapErr(p.spec.Name, syscall.E2BIG, "index %d is past max_entries %d", index, p.spec.MaxEntries)
	}
	if prog == nil {
		p.slots[index].Store(nil)
		return nil
	}
	p.slots[index].Store(&progSlot{prog: prog, id: id})
	return nil
}

// Lookup returns nil: programs cannot read a prog_array.
func (p *ProgArray) Lookup(key []byte, cpu int) []byte { return nil }

// Update resolves a 4-byte program fd into slot key (see the type's comment).
func (p *ProgArray) Update(key, value []byte, flags uint64, cpu int) error {
	if flags != UpdateAny {
		return errBadFlags
	}
	i, ok := keyIndex(key)
	if !ok || len(value) != 4 {
		return errBadKeySize
	}
	if i >= p.spec.MaxEntries {
		return errFull
	}
	r := p.resolver.Load()
	if r == nil {
		return syscall.EINVAL
	}
	fd, _ := keyIndex(value)
	prog, id, err := (*r)(int32(fd))
	if err != nil || prog == nil {
		return syscall.EINVAL
	}
	p.slots[i].Store(&progSlot{prog: prog, id: id})
	return nil
}

// Delete empties slot key: E2BIG past max_entries, ENOENT if already empty.
func (p *ProgArray) Delete(key []byte) error {
	i, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if i >= p.spec.MaxEntries {
		return errFull
	}
	if p.slots[i].Swap(nil) == nil {
		return errNoEntry
	}
	return nil
}

// NextKey walks indexes as an array does.
func (p *ProgArray) NextKey(key, next []byte) error {
	return arrayNextKey(p.spec.MaxEntries, key, next)
}
