package maps

import (
	"sync/atomic"
	"syscall"
)

// XSKSocket is what a Go consumer binds into an xskmap slot: frames a program
// redirects to the slot are delivered to Consumer (whatever the dataplane
// defines a consumer to be) for queue QueueID.
type XSKSocket struct {
	val      [8]byte // the value programs see (first 4 bytes); 8-byte aligned
	QueueID  uint32
	Consumer any
}

// XSKMap is BPF_MAP_TYPE_XSKMAP (net/xdp/xskmap.c) with xnic's Go consumers in
// place of AF_XDP sockets. Go code binds and unbinds slots with Bind and
// Unbind; a program's Lookup returns a non-nil, read-only 4-byte value (the
// socket's queue id, as xdp_sock->queue_id) when the slot is bound, nil
// otherwise, so `if (bpf_map_lookup_elem(&xsks, &q))` works as with the kernel.
// Update with a socket fd has no meaning here and is EOPNOTSUPP unless it
// names nothing (see Update). Slots are atomic pointers: lock-free.
type XSKMap struct {
	spec  Spec
	slots []atomic.Pointer[XSKSocket] // immutable slice
}

func newXSKMap(spec Spec) (*XSKMap, error) {
	if spec.KeySize != 4 || spec.ValueSize != 4 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: xskmap keys and values are 4 bytes", spec.KeySize, spec.ValueSize)
	}
	if err := checkFlagMask(spec, devFlagMask); err != nil {
		return nil, err
	}
	if uint64(spec.MaxEntries)*8 > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d entries is over xnic's cap", spec.MaxEntries)
	}
	spec.NumCPU = 0
	return &XSKMap{spec: spec, slots: make([]atomic.Pointer[XSKSocket], spec.MaxEntries)}, nil
}

// Spec returns the map's spec.
func (x *XSKMap) Spec() Spec { return x.spec }

// Bind attaches consumer to slot key for queue queueID. flags as for an
// update: BPF_NOEXIST on a bound slot EEXIST, BPF_EXIST on a free one ENOENT.
func (x *XSKMap) Bind(key, queueID uint32, consumer any, flags uint64) error {
	if flags > UpdateExist {
		return mapErr(x.spec.Name, syscall.EINVAL, "flags %d", flags)
	}
	if key >= x.spec.MaxEntries {
		return mapErr(x.spec.Name, syscall.E2BIG, "key %d is past max_entries %d", key, x.spec.MaxEntries)
	}
	s := &XSKSocket{QueueID: queueID, Consumer: consumer}
	putIndex(s.val[:], queueID)
	for {
		old := x.slots[key].Load()
		if old != nil && flags == UpdateNoExist {
			return mapErr(x.spec.Name, syscall.EEXIST, "slot %d is bound", key)
		}
		if old == nil && flags == UpdateExist {
			return mapErr(x.spec.Name, syscall.ENOENT, "slot %d is not bound", key)
		}
		if x.slots[key].CompareAndSwap(old, s) {
			return nil
		}
	}
}

// Unbind frees slot key; ENOENT if it was not bound.
func (x *XSKMap) Unbind(key uint32) error {
	if key >= x.spec.MaxEntries || x.slots[key].Swap(nil) == nil {
		return mapErr(x.spec.Name, syscall.ENOENT, "slot %d is not bound", key)
	}
	return nil
}

// Socket returns the binding of key for bpf_redirect_map without allocating.
func (x *XSKMap) Socket(key uint32) (XSKSocket, bool) {
	if key >= x.spec.MaxEntries {
		return XSKSocket{}, false
	}
	s := x.slots[key].Load()
	if s == nil {
		return XSKSocket{}, false
	}
	return *s, true
}

// Lookup returns the bound socket's queue id (4 bytes, read-only) or nil.
func (x *XSKMap) Lookup(key []byte, cpu int) []byte {
	i, ok := keyIndex(key)
	if !ok || i >= x.spec.MaxEntries {
		return nil
	}
	s := x.slots[i].Load()
	if s == nil {
		return nil
	}
	return s.val[:4:4]
}

// Update checks flags and index like xsk_map_update_elem (EINVAL, E2BIG) and
// then refuses with EOPNOTSUPP: xnic has no AF_XDP socket fds; bind Go
// consumers with Bind.
func (x *XSKMap) Update(key, value []byte, flags uint64, cpu int) error {
	if flags > UpdateExist {
		return errBadFlags
	}
	i, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if i >= x.spec.MaxEntries {
		return errFull
	}
	return syscall.EOPNOTSUPP
}

// Delete unbinds key: EINVAL past max_entries, otherwise success.
func (x *XSKMap) Delete(key []byte) error {
	i, ok := keyIndex(key)
	if !ok || i >= x.spec.MaxEntries {
		return syscall.EINVAL
	}
	x.slots[i].Store(nil)
	return nil
}

// NextKey walks indexes as an array does.
func (x *XSKMap) NextKey(key, next []byte) error { return arrayNextKey(x.spec.MaxEntries, key, next) }
