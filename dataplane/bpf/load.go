package bpf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Options tune loading and running. The zero value (or nil) is usable.
type Options struct {
	// NumCPU is the number of per-CPU map slots: one per Runner (poll
	// goroutine) that will run the collection's programs. 0 means
	// runtime.NumCPU (the maps package's default).
	NumCPU int
	// InsnBudget bounds one run, counted on backward jumps, calls and
	// bpf_loop iterations. 0 means DefaultInsnBudget.
	InsnBudget int
	// Trace receives bpf_trace_printk lines. nil discards them.
	Trace io.Writer
	// NewMap creates the collection's maps; nil means maps.New.
	NewMap func(maps.Spec) (maps.Map, error)
	// Engine runs the programs: EngineDefault (the JIT where available),
	// EngineInterp or EngineJIT (see jit.go).
	Engine Engine
}

// ErrNoProgram is returned when a collection has no program of the name,
// section or type asked for.
var ErrNoProgram = errors.New("no such program")

// Collection is the programs and maps of one ELF object. Programs may run in
// many Runners at once; the maps are shared by all of them. Immutable after
// load but for map contents and program array slots.
type Collection struct {
	progs       []*Program // sorted by name
	byName      map[string]*Program
	maps        map[string]maps.Map
	mapRefs     []*mapRef // the map number is the index (map handle values)
	mapIndex    map[string]int
	statics     []region // direct-value regions, region number regionStatic+i
	staticNames []string
	staticIndex map[string]int
	skipped     map[string]string            // programs not loaded: name -> reason
	skippedSpec map[string]*ebpf.ProgramSpec // programs not loaded
	mapErrs     map[string]error             // maps that could not be created: name -> why
	fib         atomic.Pointer[fibTable]     // bpf_fib_lookup's table (SetFIB)
	inner       innerRefs                    // inner maps of maps of maps (load_mapinmap.go)
	spinMaps    map[string]bool              // maps whose values hold a bpf_spin_lock
	trace       io.Writer
	traceMu     sync.Mutex
	closed      atomic.Bool
	rxMeta      bool // a program calls an RX metadata kfunc: Program.UsesRxMeta
}

// mapRef is a map as programs see it: resolved once at load.
type mapRef struct {
	name         string
	m            maps.Map
	spec         maps.Spec
	keySize      uint32
	valueSize    uint32
	lookupOK     bool            // map_lookup_elem allowed
	updateOK     bool            // map_update_elem / map_delete_elem allowed
	progWritable bool            // values writable by programs
	progs        *maps.ProgArray // program arrays: slots hold *Program
	ring         RingBuffer
	outer        *maps.MapOfMaps // maps of maps: lookups give inner maps
	// Arrays and per-CPU arrays of maps.Array: their storage, for lookups
	// without the interface call (see arrayValue). nil for other maps.
	arr     []byte
	arrElem uint64 // stride between slots (value size rounded up to 8)
	arrMax  uint64 // max_entries
	arrNCPU uint64 // CPU slots: 1 for a plain array
}

// arrayValue is maps.Array.Lookup for m's storage: the value of entry i for
// CPU cpu, or nil when i or cpu is out of range (as Lookup). m.arr is not
// nil.
func (m *mapRef) arrayValue(i uint32, cpu int) []byte {
	if uint64(i) >= m.arrMax {
		return nil
	}
	c := uint64(0)
	if m.arrNCPU != 1 {
		if cpu < 0 || uint64(cpu) >= m.arrNCPU {
			return nil
		}
		c = uint64(cpu)
	}
	off := (c*m.arrMax + uint64(i)) * m.arrElem
	end := off + uint64(m.valueSize)
	if end > uint64(len(m.arr)) {
		return nil // cannot happen: setArray checked the storage's size
	}
	return m.arr[off:end:end]
}

// setArray enables arrayValue for m when its map is a maps.Array laid out as
// its documentation says.
func (m *mapRef) setArray() {
	a, ok := m.m.(*maps.Array)
	if !ok || (m.spec.Type != ebpf.Array && m.spec.Type != ebpf.PerCPUArray) || m.keySize != 4 {
		return
	}
	ncpu := uint64(1)
	if m.spec.Type == ebpf.PerCPUArray {
		ncpu = uint64(m.spec.NumCPU)
	}
	elem := uint64(a.ElemSize())
	data := a.Bytes()
	if ncpu == 0 || elem < uint64(m.valueSize) || uint64(len(data)) != elem*uint64(m.spec.MaxEntries)*ncpu {
		return
	}
	m.arr, m.arrElem, m.arrMax, m.arrNCPU = data, elem, uint64(m.spec.MaxEntries), ncpu
}

// Program is one loaded, checked and pre-decoded program.
type Program struct {
	name    string
	section string
	typ     ebpf.ProgramType
	coll    *Collection
	code    []insn
	icode   interpCode // code as the interpreter's fast level runs it (buildInterp)
	funcs   []bool     // subprogram entries
	insns   asm.Instructions
	raw     []byte
	budget  int64
	id      uint32
	jit     atomic.Pointer[jitProg] // native code, nil in the interpreter
	rxMeta  bool                    // calls an RX metadata kfunc (kfunc.go)
}

// progIDs numbers programs like the kernel's program ids: unique in the
// process, never 0.
var progIDs atomic.Uint32

// ID is the program's id, unique in the process. Program arrays accept it
// where the kernel's syscall takes a program fd (maps.ProgArray.Update).
func (p *Program) ID() uint32 { return p.id }

// Name is the program's function name.
func (p *Program) Name() string { return p.name }

// Section is the ELF section the program came from.
func (p *Program) Section() string { return p.section }

// Len is the number of 8-byte instruction slots.
func (p *Program) Len() int { return len(p.code) }

// Disasm returns the program's disassembly, one instruction a line with its
// slot index, as cilium/ebpf formats it.
func (p *Program) Disasm() string {
	return fmt.Sprintf("%v", p.insns)
}

// insnString disassembles the instruction at slot pc.
func (p *Program) insnString(pc int) string {
	return disasmAt(p.raw, pc)
}

// ErrNotELF is wrapped when the bytes given as an object are no complete
// ELF object.
var ErrNotELF = errors.New("not a complete ELF object")

// LoadFile loads the ELF object at path. It never panics, whatever the file
// holds.
func LoadFile(path string, opts *Options) (*Collection, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read ELF object: %w", err)
	}
	c, err := LoadBytes(b, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// describeELFError says in words what the ELF reader's error means for a
// file that is no complete object (its own error for a truncated file is
// a bare "EOF").
func describeELFError(err error, size int) error {
	var fe *elf.FormatError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the file ends early, after %d bytes (truncated, or not an ELF object at all)", ErrNotELF, size)
	case errors.As(err, &fe):
		return fmt.Errorf("%w: %v", ErrNotELF, fe)
	}
	return fmt.Errorf("read ELF object: %w", err)
}

// LoadBytes loads an ELF object from memory. It never panics, whatever the
// bytes.
func LoadBytes(b []byte, opts *Options) (c *Collection, err error) {
	defer func() {
		if e := recover(); e != nil {
			c, err = nil, fmt.Errorf("malformed ELF object: parser failed: %v", e)
		}
	}()
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if err != nil {
		return nil, describeELFError(err, len(b))
	}
	return LoadCollectionSpec(spec, opts)
}

// isDataSection says whether a map is a global data section (.data, .rodata,
// .bss and their named variants), which programs access directly.
func isDataSection(name string) bool {
	return name == ".bss" || name == ".data" || name == ".rodata" ||
		strings.HasPrefix(name, ".data.") || strings.HasPrefix(name, ".rodata.")
}

// LoadCollectionSpec creates the maps of spec and checks and decodes its XDP
// programs (and programs of unspecified type, for sections the user names).
// The order is libbpf's bpf_object__load: maps first (created, then filled,
// inner maps once every map exists), then programs, then the program arrays
// that name them.
func LoadCollectionSpec(spec *ebpf.CollectionSpec, opts *Options) (*Collection, error) {
	if spec == nil {
		return nil, errors.New("nil collection spec")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.NewMap == nil {
		o.NewMap = maps.New
	}
	budget := int64(o.InsnBudget)
	if budget <= 0 {
		budget = DefaultInsnBudget
	}
	c := &Collection{
		byName:      map[string]*Program{},
		maps:        map[string]maps.Map{},
		mapIndex:    map[string]int{},
		staticIndex: map[string]int{},
		skipped:     map[string]string{},
		skippedSpec: map[string]*ebpf.ProgramSpec{},
		mapErrs:     map[string]error{},
		trace:       o.Trace,
	}
	progContents, innerContents, err := c.createMaps(spec, &o)
	if err != nil {
		return nil, err
	}
	if err := c.fillMapsOfMaps(innerContents); err != nil {
		return nil, err
	}
	c.loadPrograms(spec, &o, budget)
	c.refuseTailCallers(progContents)
	if err := c.fillProgArrays(progContents); err != nil {
		return nil, err
	}
	return c, nil
}

// createMaps creates and fills the maps of spec, in name order so map numbers
// are stable. A map that cannot be created is recorded in c.mapErrs (lazy
// loading: only the programs that use it are refused). It returns the initial
// contents of program arrays and of maps of maps, which can only be filled
// once the programs, or every map, exist.
func (c *Collection) createMaps(spec *ebpf.CollectionSpec, o *Options) (progContents, innerContents map[string][]ebpf.MapKV, err error) {
	names := make([]string, 0, len(spec.Maps))
	for n := range spec.Maps {
		names = append(names, n)
	}
	sort.Strings(names)
	progContents = map[string][]ebpf.MapKV{}
	innerContents = map[string][]ebpf.MapKV{}
	spinOK, spinBad := spinLockMaps(spec) // helpers_spin.go
	c.spinMaps = spinOK
	for _, n := range names {
		ms := spec.Maps[n]
		if ms == nil {
			continue
		}
		if why, bad := spinBad[n]; bad {
			c.mapErrs[n] = errors.New(why)
			continue
		}
		if n == ".kconfig" || strings.HasPrefix(n, ".ksyms") {
			// Kernel configuration values are not available to xnic;
			// references to them fail at program load.
			continue
		}
		s := maps.Spec{
			Name:       n,
			Type:       ms.Type,
			KeySize:    ms.KeySize,
			ValueSize:  ms.ValueSize,
			MaxEntries: ms.MaxEntries,
			Flags:      ms.Flags,
			NumCPU:     o.NumCPU,
			InnerMap:   innerSpec(ms.InnerMap, o.NumCPU), // load_mapinmap.go
			MapExtra:   ms.MapExtra,
		}
		if spinOK[n] {
			s.SpinLockOff, s.SpinLock = spinLockOffset(ms.Value) // helpers_spin.go
		}
		m, err := o.NewMap(s)
		if err != nil {
			// Lazy loading: only the programs that use the map are
			// refused (loadProgram names the map and the reason).
			c.mapErrs[n] = fmt.Errorf("create map %s (%v): %w", n, ms.Type, err)
			continue
		}
		ref, err := c.newMapRef(n, m)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case ms.Type == ebpf.ProgramArray:
			progContents[n] = ms.Contents
		case ms.Type == ebpf.ArrayOfMaps || ms.Type == ebpf.HashOfMaps:
			innerContents[n] = ms.Contents // filled once every map exists
		default:
			if err := initMap(m, ms, n, spec.Variables); err != nil {
				return nil, nil, err
			}
		}
		c.addMap(n, m, ref)
	}
	return progContents, innerContents, nil
}

// newMapRef describes map m, named n, to the decoder and the interpreter:
// which helpers may take it and how programs reach its values.
func (c *Collection) newMapRef(n string, m maps.Map) (*mapRef, error) {
	s := m.Spec()
	ref := &mapRef{name: n, m: m, spec: s, keySize: s.KeySize, valueSize: s.ValueSize}
	switch s.Type {
	case ebpf.Array, ebpf.PerCPUArray, ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash, ebpf.LPMTrie:
		ref.lookupOK, ref.updateOK = true, true
		ref.progWritable = s.Flags&maps.FlagRdonlyProg == 0
		ref.setArray()
	case ebpf.DevMap, ebpf.DevMapHash, ebpf.XSKMap, ebpf.CPUMap:
		ref.lookupOK = true // read-only values, as the kernel's verifier
	case ebpf.ProgramArray:
		pa, ok := m.(*maps.ProgArray)
		if !ok {
			return nil, fmt.Errorf("map %s: program array of type %T; tail calls need a *maps.ProgArray", n, m)
		}
		ref.progs = pa
		// Control-plane updates name programs by id, standing in for
		// the fd the kernel's syscall takes.
		pa.SetProgResolver(c.resolveProg)
	case ebpf.RingBuf:
		ref.ring = ringOf(m)
	case ebpf.ArrayOfMaps, ebpf.HashOfMaps:
		ref.outer, _ = m.(*maps.MapOfMaps)
		ref.lookupOK = ref.outer != nil // lookups return the inner map
	}
	return ref, nil
}

// initMap writes the initial contents of map m, named n: a global data
// section's bytes, or a map's declared values.
func initMap(m maps.Map, ms *ebpf.MapSpec, n string, vars map[string]*ebpf.VariableSpec) error {
	if !isDataSection(n) {
		if err := fillMap(m, ms); err != nil {
			return fmt.Errorf("initialise map %s: %w", n, err)
		}
		return nil
	}
	// Global data: the section's bytes with the variables the caller may
	// have changed (VariableSpec.Set) laid over them.
	data, err := dataSection(ms, n, vars)
	if err != nil {
		return fmt.Errorf("global data %s: %w", n, err)
	}
	if err := m.Update([]byte{0, 0, 0, 0}, data, maps.UpdateAny, 0); err != nil {
		return fmt.Errorf("initialise global data %s: %w", n, err)
	}
	return nil
}

// addMap numbers map m, named n, for the decoder. Arrays give programs direct
// access to their first value (global data sections are single-entry arrays).
func (c *Collection) addMap(n string, m maps.Map, ref *mapRef) {
	c.maps[n] = m
	c.mapIndex[n] = len(c.mapRefs)
	c.mapRefs = append(c.mapRefs, ref)
	if ref.spec.Type != ebpf.Array {
		return
	}
	v := m.Lookup([]byte{0, 0, 0, 0}, 0)
	if v == nil {
		return
	}
	rg := region{buf: v, hi: uint64(len(v))}
	if ref.progWritable {
		rg.whi = rg.hi
	}
	c.staticIndex[n] = len(c.statics)
	c.statics = append(c.statics, rg)
	c.staticNames = append(c.staticNames, n)
}

// loadPrograms checks and decodes the programs of spec, in name order. A
// program xnic cannot run does not stop the others (lazy loading): it is
// refused, and picking it returns the reason.
func (c *Collection) loadPrograms(spec *ebpf.CollectionSpec, o *Options, budget int64) {
	env := &decodeEnv{
		mapHandle: func(name string) (int, bool) {
			i, ok := c.mapIndex[name]
			return i, ok
		},
		mapValue: func(name string) (int, uint32, bool) {
			i, ok := c.staticIndex[name]
			if !ok {
				return 0, 0, false
			}
			return regionStatic + i, uint32(c.statics[i].hi), true
		},
		helper: helperImplemented,
		engine: o.Engine,
	}
	pnames := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		pnames = append(pnames, n)
	}
	sort.Strings(pnames)
	for _, n := range pnames {
		ps := spec.Programs[n]
		if ps.Type != ebpf.XDP && ps.Type != ebpf.UnspecifiedProgram {
			c.refuse(ps, fmt.Sprintf("section %s: program type %v is not XDP", ps.SectionName, ps.Type))
			continue
		}
		p, err := c.loadProgram(ps, env, budget)
		if err != nil {
			c.refuse(ps, err.Error())
			continue
		}
		c.progs = append(c.progs, p)
		c.byName[n] = p
		c.rxMeta = c.rxMeta || p.rxMeta
	}
}

// fillProgArrays fills the program arrays declared with initial contents (BTF
// maps with __array(values, ...)); slots naming a refused program stay empty,
// as refuseTailCallers refused their callers.
func (c *Collection) fillProgArrays(progContents map[string][]ebpf.MapKV) error {
	for mn, kvs := range progContents {
		for _, kv := range kvs {
			k, ok := kv.Key.(uint32)
			pn, ok2 := kv.Value.(string)
			if !ok || !ok2 {
				return fmt.Errorf("program array %s: entry %v=%v is not index=program name", mn, kv.Key, kv.Value)
			}
			p := c.byName[pn]
			if p == nil {
				if _, refused := c.skipped[pn]; refused {
					continue // its callers were refused by refuseTailCallers
				}
				return fmt.Errorf("program array %s: slot %d: program %q: %w", mn, k, pn, ErrNoProgram)
			}
			if err := c.SetTailCall(mn, k, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillMap writes a map's initial contents (data sections, BTF maps with
// values).
func fillMap(m maps.Map, ms *ebpf.MapSpec) error {
	for _, kv := range ms.Contents {
		k, err := kvBytes(kv.Key, ms.KeySize)
		if err != nil {
			return fmt.Errorf("key %v: %w", kv.Key, err)
		}
		v, err := kvBytes(kv.Value, ms.ValueSize)
		if err != nil {
			return fmt.Errorf("value of key %v: %w", kv.Key, err)
		}
		if err := m.Update(k, v, maps.UpdateAny, 0); err != nil {
			return fmt.Errorf("key %x: %w", k, err)
		}
	}
	return nil
}

// dataSection returns the initial value of a global data section: its bytes
// from the object (zeros for .bss) with every variable of the section that
// the caller set through CollectionSpec.Variables copied over them.
func dataSection(ms *ebpf.MapSpec, section string, vars map[string]*ebpf.VariableSpec) ([]byte, error) {
	data := make([]byte, ms.ValueSize)
	if len(ms.Contents) > 0 {
		b, ok := ms.Contents[0].Value.([]byte)
		if !ok || len(ms.Contents) != 1 {
			return nil, fmt.Errorf("contents are not one block of bytes")
		}
		if len(b) > len(data) {
			return nil, fmt.Errorf("%d bytes of contents in a %d-byte section", len(b), len(data))
		}
		copy(data, b)
	}
	for name, v := range vars {
		if v == nil || v.SectionName != section || v.Value == nil {
			continue
		}
		end := uint64(v.Offset) + uint64(len(v.Value))
		if end > uint64(len(data)) {
			return nil, fmt.Errorf("variable %s (offset %d, %d bytes) runs past the section's %d bytes", name, v.Offset, len(v.Value), len(data))
		}
		copy(data[v.Offset:end], v.Value)
	}
	return data, nil
}

func kvBytes(x any, size uint32) ([]byte, error) {
	var b []byte
	switch v := x.(type) {
	case []byte:
		b = v
	case uint32:
		b = binary.LittleEndian.AppendUint32(nil, v)
	case uint64:
		b = binary.LittleEndian.AppendUint64(nil, v)
	case int32:
		b = binary.LittleEndian.AppendUint32(nil, uint32(v))
	default:
		var err error
		b, err = binary.Append(nil, binary.LittleEndian, x)
		if err != nil {
			return nil, fmt.Errorf("cannot encode %T", x)
		}
	}
	if uint32(len(b)) != size {
		return nil, fmt.Errorf("%d bytes, want %d", len(b), size)
	}
	return b, nil
}

func (c *Collection) loadProgram(ps *ebpf.ProgramSpec, env *decodeEnv, budget int64) (*Program, error) {
	insns := make(asm.Instructions, len(ps.Instructions))
	copy(insns, ps.Instructions)
	refs := map[int]string{}
	kfuncs := map[int]string{}
	iter := insns.Iterate()
	for iter.Next() {
		if iter.Ins.IsKfuncCall() {
			kfuncs[int(iter.Offset)] = iter.Ins.Reference()
		}
		if iter.Ins.IsLoadFromMap() && iter.Ins.Reference() != "" {
			ref := iter.Ins.Reference()
			if err := c.mapErrs[ref]; err != nil {
				return nil, fmt.Errorf("program %s uses map %s, which xnic cannot create: %w", ps.Name, ref, err)
			}
			refs[int(iter.Offset)] = ref
		}
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, binary.LittleEndian); err != nil {
		return nil, fmt.Errorf("program %s: encode instructions: %w", ps.Name, err)
	}
	e := *env
	e.name = ps.Name
	e.mapRefs = refs
	e.kfuncRefs = kfuncs
	code, funcs, err := decodeProgram(buf.Bytes(), &e)
	if err != nil {
		return nil, explainRefusal(err) // helpers_refuse.go
	}
	if err := c.checkSpin(ps.Name, buf.Bytes(), refs); err != nil {
		return nil, err
	}
	p := &Program{
		name:    ps.Name,
		section: ps.SectionName,
		typ:     ps.Type,
		coll:    c,
		code:    code,
		icode:   buildInterp(code),
		funcs:   funcs,
		insns:   insns,
		raw:     buf.Bytes(),
		budget:  budget,
		id:      progIDs.Add(1),
		rxMeta:  usesKfunc(code),
	}
	if err := p.compile(e.plain, e.engine); err != nil {
		return nil, err
	}
	return p, nil
}

// Programs returns the collection's programs, sorted by name.
func (c *Collection) Programs() []*Program { return append([]*Program(nil), c.progs...) }

// Program returns the program whose function is name.
func (c *Collection) Program(name string) (*Program, error) {
	if p := c.byName[name]; p != nil {
		return p, nil
	}
	if why, ok := c.skipped[name]; ok {
		return nil, fmt.Errorf("program %s refused: %s: %w", name, why, ErrNoProgram)
	}
	return nil, fmt.Errorf("program %q: %w (have %s)", name, ErrNoProgram, c.choices())
}

// ProgramBySection returns the program of ELF section sec, which must be the
// only one in it.
func (c *Collection) ProgramBySection(sec string) (*Program, error) {
	var found []*Program
	for _, p := range c.progs {
		if p.section == sec {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if err := c.refusedInSection(sec); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("section %q: %w (have %s)", sec, ErrNoProgram, c.choices())
	}
	return nil, fmt.Errorf("section %q holds %d programs; pick one by name (have %s)", sec, len(found), c.choices())
}

// DefaultXDP returns the object's only XDP program (section xdp, xdp.frags or
// xdp/...), or an error listing the choices.
func (c *Collection) DefaultXDP() (*Program, error) {
	var found []*Program
	for _, p := range c.progs {
		if p.typ == ebpf.XDP {
			found = append(found, p)
		}
	}
	if err := c.refusedXDP(len(found)); err != nil {
		return nil, err
	}
	if len(found) == 1 {
		return found[0], nil
	}
	if len(found) == 0 && len(c.progs) == 1 {
		return c.progs[0], nil
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no XDP program: %w (have %s)", ErrNoProgram, c.choices())
	}
	return nil, fmt.Errorf("%d XDP programs; pick one with its name or section: %s", len(found), c.choices())
}

func (c *Collection) choices() string {
	if len(c.progs) == 0 {
		return "none"
	}
	s := make([]string, len(c.progs))
	for i, p := range c.progs {
		s[i] = fmt.Sprintf("%s (section %s)", p.name, p.section)
	}
	return strings.Join(s, ", ")
}

// Map returns the map called name (global data sections by section name:
// ".data", ".rodata", ".bss").
func (c *Collection) Map(name string) (maps.Map, error) {
	if m := c.maps[name]; m != nil {
		return m, nil
	}
	names := make([]string, 0, len(c.maps))
	for n := range c.maps {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no map %q in the collection (have %s)", name, strings.Join(names, ", "))
}

// Maps returns the collection's maps by name. The map is a copy; the maps
// are shared.
func (c *Collection) Maps() map[string]maps.Map {
	out := make(map[string]maps.Map, len(c.maps))
	for n, m := range c.maps {
		out[n] = m
	}
	return out
}

// SetTailCall puts p in slot idx of the program array mapName (p nil clears
// the slot). p must belong to this collection. Safe while programs run.
func (c *Collection) SetTailCall(mapName string, idx uint32, p *Program) error {
	i, ok := c.mapIndex[mapName]
	if !ok {
		return fmt.Errorf("no map %q in the collection", mapName)
	}
	ref := c.mapRefs[i]
	if ref.progs == nil {
		return fmt.Errorf("map %s is a %v, not a program array", mapName, ref.spec.Type)
	}
	if p == nil {
		if err := ref.progs.Delete(binary.LittleEndian.AppendUint32(nil, idx)); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("program array %s: clear slot %d: %w", mapName, idx, err)
		}
		return nil
	}
	if p.coll != c {
		return fmt.Errorf("program array %s: program %s belongs to another collection", mapName, p.name)
	}
	if err := ref.progs.SetProg(idx, p, p.id); err != nil {
		return fmt.Errorf("program array %s: slot %d: %w", mapName, idx, err)
	}
	return nil
}

// resolveProg finds a program of the collection by id, for program array
// updates through the Map interface.
func (c *Collection) resolveProg(fd int32) (any, uint32, error) {
	for _, p := range c.progs {
		if int32(p.id) == fd {
			return p, p.id, nil
		}
	}
	return nil, 0, fmt.Errorf("no program with id %d in the collection: %w", fd, syscall.EBADF)
}

// TailCall returns the program in slot idx of the program array mapName.
func (c *Collection) TailCall(mapName string, idx uint32) (*Program, error) {
	i, ok := c.mapIndex[mapName]
	if !ok || c.mapRefs[i].progs == nil {
		return nil, fmt.Errorf("no program array %s", mapName)
	}
	p, _ := c.mapRefs[i].progs.Prog(idx).(*Program)
	return p, nil
}

// Close empties the program arrays (as the kernel does when the last user
// reference goes). Programs already running finish normally.
func (c *Collection) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	defer c.releaseJIT()
	for _, ref := range c.mapRefs {
		if ref.progs == nil {
			continue
		}
		var k [4]byte
		for i := uint32(0); i < ref.spec.MaxEntries; i++ {
			binary.LittleEndian.PutUint32(k[:], i)
			_ = ref.progs.Delete(k[:])
		}
	}
	return nil
}
