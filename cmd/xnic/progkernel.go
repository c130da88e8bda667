package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// kernelBench is the kernel's side of prog bench --kernel: the same object
// loaded into the kernel, its maps given the entries xnic's were given
// (--maps, --map), the program run with BPF_PROG_TEST_RUN's repeat loop on
// the same frames and context.
type kernelBench struct {
	obj  *kernelxdp.Object
	prog *ebpf.Program
}

// openKernelBench loads the object at path into the kernel and copies the
// entries of the maps of c (xnic's collection of the same object) into the
// kernel's; a map whose entries cannot be copied is named on stderr.
func openKernelBench(path, prog string, c *bpf.Collection, stderr io.Writer) (*kernelBench, error) {
	if err := kernelxdp.Available(); err != nil {
		return nil, fmt.Errorf("--kernel: %w", err)
	}
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		return nil, fmt.Errorf("--kernel: %w", err)
	}
	for _, m := range spec.Maps {
		m.Pinning = ebpf.PinNone // a bench's maps are its own, as xnic's are
	}
	obj, err := kernelxdp.LoadSpec(spec, nil)
	if err != nil {
		return nil, fmt.Errorf("--kernel: %w", err)
	}
	kb := &kernelBench{obj: obj}
	if kb.prog, err = obj.Program(prog); err != nil {
		kb.close()
		return nil, fmt.Errorf("--kernel: %w", err)
	}
	for name, m := range c.Maps() {
		if err := copyEntries(obj, name, m); err != nil {
			fmt.Fprintf(stderr, "--kernel: map %s: %v; the kernel's stays as the object left it\n", name, err)
		}
	}
	return kb, nil
}

func (kb *kernelBench) close() { kb.obj.Close() }

// round runs every frame of b repeat times in the kernel and returns its
// time per run (the kernel reports whole nanoseconds per frame).
func (kb *kernelBench) round(b *benchSetup) (float64, error) {
	var sum float64
	for i, data := range b.frames {
		per, _, err := kernelxdp.BenchInput(kb.prog, kernelxdp.Input{Frame: data, IngressIfindex: b.ifindex, RxQueueIndex: b.queue}, b.repeat)
		if err != nil {
			return 0, fmt.Errorf("--kernel: frame %d: %w", i, err)
		}
		sum += float64(per.Nanoseconds())
	}
	return sum / float64(len(b.frames)), nil
}

// copyEntries writes the entries of xnic's map m into the kernel's map of
// the same name. Global data (.data, .rodata, .bss) came from the same ELF
// on both sides; maps of records, programs, devices or sockets hold
// nothing the kernel could take as it is.
func copyEntries(obj *kernelxdp.Object, name string, m maps.Map) error {
	s := m.Spec()
	if strings.HasPrefix(name, ".") {
		return nil
	}
	switch s.Type {
	case ebpf.Array, ebpf.PerCPUArray, ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash, ebpf.LPMTrie:
	default:
		if hasEntries(m) {
			return fmt.Errorf("entries of a %s are not copied", s.Type)
		}
		return nil
	}
	km, err := obj.Map(name)
	if err != nil {
		return err
	}
	var key []byte
	next := make([]byte, s.KeySize)
	for {
		err := m.NextKey(key, next)
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
		key = append(key[:0], next...)
		v := m.Lookup(key, 0) // NumCPU 1 (loadProg): CPU 0 holds the value
		if v == nil || (isArrayType(s.Type) && allZero(v)) {
			continue
		}
		var kv any = v
		if isPerCPU(s.Type) {
			kv, err = everyCPU(v)
			if err != nil {
				return err
			}
		}
		if err := km.Update(key, kv, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("key %x: %w", key, err)
		}
	}
}

// everyCPU repeats v for each CPU the kernel may have, as a per-CPU map's
// update takes it.
func everyCPU(v []byte) ([][]byte, error) {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = v
	}
	return vs, nil
}

// hasEntries reports whether m holds a value that is not all zero (the
// array kinds have every key, most of them empty).
func hasEntries(m maps.Map) bool {
	var key []byte
	next := make([]byte, m.Spec().KeySize)
	for m.NextKey(key, next) == nil {
		key = append(key[:0], next...)
		if v := m.Lookup(key, 0); v != nil && !allZero(v) {
			return true
		}
	}
	return false
}

func isArrayType(t ebpf.MapType) bool { return t == ebpf.Array || t == ebpf.PerCPUArray }

func isPerCPU(t ebpf.MapType) bool {
	return t == ebpf.PerCPUArray || t == ebpf.PerCPUHash || t == ebpf.LRUCPUHash
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
