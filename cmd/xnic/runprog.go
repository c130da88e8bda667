package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// The program of a running `xnic run`, and its replacement (xnic prog load,
// like `ip link set dev X xdp obj new.o` or bpf_link_update): the new object
// is loaded beside the running one, keeping the running program's maps by
// name where type, key, value, entries and flags match (as libbpf reuses a
// pinned map), and the engine swaps programs between two bursts of each
// poll goroutine (dataplane.Engine.ReplaceProgram), so every frame is run
// by exactly one of them. A same-named map that does not match refuses the
// load, saying why; maps only the new object has start empty (the run's
// --maps and --map entries are not applied again; its --fib is).

// runProgram is one loaded program of a run. Immutable.
type runProgram struct {
	coll     *bpf.Collection
	spec     *ebpf.CollectionSpec
	prog     *bpf.Program
	object   string // the object's file name
	loadedAt time.Time
	loads    int      // 1 for the run's first program, +1 per replacement
	kept     []string // maps carried over from the program before
}

// info is the program as `xnic prog show` shows it.
func (rp *runProgram) info(e *dataplane.Engine, runTime time.Duration) *control.ProgInfo {
	pi := &control.ProgInfo{ID: rp.prog.ID(), Name: rp.prog.Name(), Type: "xdp", Engine: rp.prog.Engine().String(),
		Object: rp.object, LoadedAt: rp.loadedAt.Format(time.RFC3339), Insns: rp.prog.Len(), Loads: rp.loads}
	if ps := rp.spec.Programs[rp.prog.Name()]; ps != nil {
		// bpftool's tag: the SHA-1 of the instructions as loaded. Kernels
		// from 6.18 hash other bytes; xnic keeps the long-standing form.
		//lint:ignore SA1019 the program's tag as bpftool printed it before Linux 6.18
		if tag, err := ps.Tag(); err == nil {
			pi.Tag = tag
		}
	}
	for n := range rp.coll.Maps() {
		pi.Maps = append(pi.Maps, n)
	}
	slices.Sort(pi.Maps)
	if e != nil {
		if runTime > 0 {
			e.SetRunTime(true)
			r0, _ := e.ProgramRuns()
			time.Sleep(runTime)
			r1, ns := e.ProgramRuns()
			e.SetRunTime(false)
			pi.RunCnt, pi.RunTimeNanos, pi.RunTimeCnt, pi.RunTimeFor = r1, uint64(ns), r1-r0, runTime.String()
		} else {
			pi.RunCnt, _ = e.ProgramRuns()
		}
	}
	return pi
}

// runPrograms are the programs of one run: the one running and every one
// loaded before (kept open until the run ends: cpumap entries and program
// arrays may still name their programs).
type runPrograms struct {
	cur   atomic.Pointer[runProgram]
	mu    sync.Mutex // serialises loads; guards all
	all   []*runProgram
	opts  bpf.Options // how the run loads objects (slots, engine, trace)
	after func(*runProgram) error
}

// close closes every collection the run loaded.
func (rs *runPrograms) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, rp := range rs.all {
		rp.coll.Close()
	}
	rs.all = nil
}

// load loads spec as the run's program sec (its XDP program when ""),
// keeping the maps of the running program that match.
func (rs *runPrograms) load(spec *ebpf.CollectionSpec, object, sec string) (*runProgram, error) {
	old := rs.cur.Load()
	o := rs.opts
	var kept []string
	if old != nil {
		if err := checkKeptMaps(old.coll, spec); err != nil {
			return nil, err
		}
		o.NewMap = func(s maps.Spec) (maps.Map, error) {
			if m, ok := keepMap(old.coll, s); ok {
				kept = append(kept, s.Name)
				return m, nil
			}
			return maps.New(s)
		}
	}
	coll, err := bpf.LoadCollectionSpec(spec, &o)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", object, err)
	}
	prog, err := dpPickProgram(coll, sec)
	if err != nil {
		coll.Close()
		return nil, err
	}
	rp := &runProgram{coll: coll, spec: spec, prog: prog, object: object, loadedAt: time.Now(), loads: 1, kept: kept}
	if old != nil {
		rp.loads = old.loads + 1
	}
	return rp, nil
}

// keepable reports whether a map of this name and type may be carried over:
// not global data (the new object's own variables), not a program array
// (its slots name the old object's programs), not kernel config.
func keepable(name string, t ebpf.MapType) bool {
	return t != ebpf.ProgramArray && !strings.HasPrefix(name, ".") && !strings.Contains(name, ".rodata") &&
		!strings.Contains(name, ".data") && !strings.Contains(name, ".bss")
}

// keepMap is the running program's map for s, when one of that name
// matches it.
func keepMap(old *bpf.Collection, s maps.Spec) (maps.Map, bool) {
	if !keepable(s.Name, s.Type) {
		return nil, false
	}
	m, err := old.Map(s.Name)
	if err != nil {
		return nil, false
	}
	return m, mapMismatch(m.Spec(), s) == ""
}

// mapMismatch says how a running map differs from a new object's of the
// same name ("" when it may be kept). A size the new object leaves at 0
// (perf event arrays) takes the running map's.
func mapMismatch(have, want maps.Spec) string {
	eq := func(a, b uint32) bool { return a == b || b == 0 }
	switch {
	case have.Type != want.Type:
		return fmt.Sprintf("type %v, the new object's %v", have.Type, want.Type)
	case !eq(have.KeySize, want.KeySize):
		return fmt.Sprintf("%d-byte keys, the new object's %d", have.KeySize, want.KeySize)
	case !eq(have.ValueSize, want.ValueSize):
		return fmt.Sprintf("%d-byte values, the new object's %d", have.ValueSize, want.ValueSize)
	case !eq(have.MaxEntries, want.MaxEntries):
		return fmt.Sprintf("%d entries, the new object's %d", have.MaxEntries, want.MaxEntries)
	case have.Flags != want.Flags:
		return fmt.Sprintf("flags %#x, the new object's %#x", have.Flags, want.Flags)
	case have.MapExtra != want.MapExtra:
		return fmt.Sprintf("map_extra %d, the new object's %d", have.MapExtra, want.MapExtra)
	case (have.InnerMap == nil) != (want.InnerMap == nil) ||
		have.InnerMap != nil && !reflect.DeepEqual(*have.InnerMap, *want.InnerMap):
		return "another inner map"
	}
	return ""
}

// checkKeptMaps refuses an object with a map named as one of the running
// program's but of another shape, naming every such map and how it differs.
func checkKeptMaps(old *bpf.Collection, spec *ebpf.CollectionSpec) error {
	var why []string
	for name, ms := range spec.Maps {
		if ms == nil || !keepable(name, ms.Type) {
			continue
		}
		m, err := old.Map(name)
		if err != nil {
			continue // a new map
		}
		want := maps.Spec{Name: name, Type: ms.Type, KeySize: ms.KeySize, ValueSize: ms.ValueSize,
			MaxEntries: ms.MaxEntries, Flags: ms.Flags, MapExtra: ms.MapExtra}
		have := m.Spec()
		if ms.InnerMap != nil || have.InnerMap != nil {
			want.InnerMap = have.InnerMap // inner maps: compared by the loader's own spec below
			if ms.InnerMap == nil || have.InnerMap == nil || ms.InnerMap.Type != have.InnerMap.Type ||
				ms.InnerMap.KeySize != have.InnerMap.KeySize || ms.InnerMap.ValueSize != have.InnerMap.ValueSize {
				why = append(why, fmt.Sprintf("map %s: another inner map", name))
				continue
			}
		}
		if d := mapMismatch(have, want); d != "" {
			why = append(why, fmt.Sprintf("map %s: the running one has %s", name, d))
		}
	}
	if len(why) > 0 {
		slices.Sort(why)
		return fmt.Errorf("%w: a map of the new object has the name of a running map but not its shape, so it can be neither kept nor replaced under the running program: %s",
			errRefused, strings.Join(why, "; "))
	}
	return nil
}

// errRefused marks a program load the run refused.
var errRefused = errors.New("not loaded")

// replace loads object (the ELF bytes obj) and makes its program sec the
// running one.
func (rs *runPrograms) replace(e *dataplane.Engine, obj []byte, object, sec string) (*runProgram, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", object, err)
	}
	rp, err := rs.load(spec, filepath.Base(object), sec)
	if err != nil {
		return nil, err
	}
	if rs.after != nil {
		if err := rs.after(rp); err != nil {
			rp.coll.Close()
			return nil, err
		}
	}
	err = e.ReplaceProgram(dataplane.BPF(rp.prog), 2*time.Second)
	if err != nil && !errors.Is(err, dataplane.ErrReplace) {
		rp.coll.Close()
		return nil, err
	}
	// Taken by every poll goroutine, or (ErrReplace) published and taken
	// by the rest at their next poll: it is the program now.
	rs.all = append(rs.all, rp)
	rs.cur.Store(rp)
	return rp, err
}

// specUsesRxMeta reports whether a program of spec calls an RX metadata
// kfunc (bpf_xdp_metadata_rx_timestamp, _hash, _vlan_tag): the ports of a
// run then report metadata, as the kernel's drivers do once asked
// (SIOCSHWTSTAMP, or the kfuncs' own bpf_dev_bound programs).
func specUsesRxMeta(spec *ebpf.CollectionSpec) bool {
	for _, ps := range spec.Programs {
		for _, ins := range ps.Instructions {
			if ins.IsKfuncCall() && strings.HasPrefix(ins.Reference(), "bpf_xdp_metadata_rx_") {
				return true
			}
		}
	}
	return false
}

// specPrints reports whether a program of spec calls bpf_trace_printk or
// bpf_trace_vprintk (what xnic prog trace follows).
func specPrints(spec *ebpf.CollectionSpec) bool {
	for _, ps := range spec.Programs {
		for _, ins := range ps.Instructions {
			if ins.IsBuiltinCall() && (asm.BuiltinFunc(ins.Constant) == asm.FnTracePrintk || asm.BuiltinFunc(ins.Constant) == asm.FnTraceVprintk) {
				return true
			}
		}
	}
	return false
}
