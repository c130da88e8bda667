package kernelxdp

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ErrUnavailable is wrapped by every error that means the kernel cannot be
// used as an oracle here (not root, bpf() not permitted, BPF_PROG_TEST_RUN
// missing). Tests skip on it.
var ErrUnavailable = errors.New("kernel BPF unavailable")

var (
	availOnce sync.Once
	availErr  error
)

// Available returns nil when this process may load XDP programs and run them
// with BPF_PROG_TEST_RUN, or an error wrapping ErrUnavailable that says why
// not. The probe runs once.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

func probe() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (run the tests as root, e.g. sudo go test)", ErrUnavailable)
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP,
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 2), // XDP_PASS
			asm.Return(),
		},
		License: "MIT",
	})
	if err != nil {
		return fmt.Errorf("%w: loading a trivial XDP program: %v", ErrUnavailable, err)
	}
	defer p.Close()
	ret, _, err := p.Test(make([]byte, 14))
	if err != nil {
		return fmt.Errorf("%w: BPF_PROG_TEST_RUN: %v", ErrUnavailable, err)
	}
	if ret != 2 {
		return fmt.Errorf("%w: trivial program returned %d, want 2", ErrUnavailable, ret)
	}
	return nil
}

// Options adjust an object before it is loaded.
type Options struct {
	// Constants rewrites global variables (usually volatile const in
	// .rodata) before load, by name, as CollectionSpec.Variables[name].Set.
	Constants map[string]any
}

// Object is an ELF object loaded into the kernel. It holds every program and
// map of the collection open (program arrays keep their entries only while
// their map is open) until Close.
type Object struct {
	// Spec is the collection as read from the ELF file, before rewriting.
	Spec *ebpf.CollectionSpec
	// Coll is the loaded collection. Do not close it directly.
	Coll *ebpf.Collection
}

// Load reads the ELF object at path and loads it into the kernel.
func Load(path string, opts *Options) (*Object, error) {
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		return nil, fmt.Errorf("kernelxdp: reading %s: %w", path, err)
	}
	obj, err := LoadSpec(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("kernelxdp: %s: %w", path, err)
	}
	return obj, nil
}

// LoadSpec loads a copy of spec into the kernel; spec itself is not changed.
// The verifier log of a rejected program is part of the error.
func LoadSpec(spec *ebpf.CollectionSpec, opts *Options) (*Object, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	cp := spec.Copy()
	if opts != nil {
		for name, v := range opts.Constants {
			vs, ok := cp.Variables[name]
			if !ok {
				return nil, fmt.Errorf("kernelxdp: no global variable %q in the object (have %v)", name, sortedKeys(cp.Variables))
			}
			if err := vs.Set(v); err != nil {
				return nil, fmt.Errorf("kernelxdp: setting %s: %w", name, err)
			}
		}
	}
	coll, err := ebpf.NewCollection(cp)
	if err != nil {
		// An object's other programs (tc, tracing iterators) may need what
		// this process lacks; the XDP ones alone may still load.
		if xdp := xdpOnly(cp); xdp != nil {
			if c, err2 := ebpf.NewCollection(xdp); err2 == nil {
				return &Object{Spec: spec, Coll: c}, nil
			}
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("kernelxdp: the kernel rejected the object: %+v", ve)
		}
		return nil, fmt.Errorf("kernelxdp: loading the object into the kernel: %w", err)
	}
	return &Object{Spec: spec, Coll: coll}, nil
}

// xdpOnly is a copy of spec without its programs of other types than XDP,
// or nil when it has none (or none of XDP). A prog_array can only hold XDP
// programs for an XDP caller, so the calls between XDP programs stay.
func xdpOnly(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	other, xdp := false, false
	for _, p := range spec.Programs {
		if p.Type == ebpf.XDP {
			xdp = true
		} else {
			other = true
		}
	}
	if !other || !xdp {
		return nil
	}
	cp := spec.Copy()
	for name, p := range cp.Programs {
		if p.Type != ebpf.XDP {
			delete(cp.Programs, name)
		}
	}
	return cp
}

// Close releases every program and map.
func (o *Object) Close() error {
	if o == nil || o.Coll == nil {
		return nil
	}
	o.Coll.Close()
	o.Coll = nil
	return nil
}

// Program returns the loaded program named name (its C function name).
func (o *Object) Program(name string) (*ebpf.Program, error) {
	p, ok := o.Coll.Programs[name]
	if !ok {
		return nil, fmt.Errorf("kernelxdp: no program %q in the object (have %v)", name, sortedKeys(o.Coll.Programs))
	}
	return p, nil
}

// Map returns the loaded map named name (.bss, .data, .rodata for globals).
func (o *Object) Map(name string) (*ebpf.Map, error) {
	m, ok := o.Coll.Maps[name]
	if !ok {
		return nil, fmt.Errorf("kernelxdp: no map %q in the object (have %v)", name, sortedKeys(o.Coll.Maps))
	}
	return m, nil
}

// Run runs the program named prog once on in; see the package function Run.
func (o *Object) Run(prog string, in Input) (Result, error) {
	p, err := o.Program(prog)
	if err != nil {
		return Result{}, err
	}
	return Run(p, in)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
