package bpf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
)

// Lazy loading: an object may hold programs xnic cannot run (another program
// type, a helper or map type xnic lacks, an instruction the decoder refuses).
// Those are refused one by one, with the reason, and the rest of the object
// loads; picking a refused program (by name, section or as the default)
// returns the reason. A program whose program arrays are declared with a
// refused program in a slot (BTF __array(values, ...)) is refused too: it
// could tail-call into it.

// refuse records that the program of ps is not loaded, and why.
func (c *Collection) refuse(ps *ebpf.ProgramSpec, why string) {
	c.skipped[ps.Name] = why
	c.skippedSpec[ps.Name] = ps
}

// Refused returns the programs of the object that were not loaded, by
// function name, each with the reason.
func (c *Collection) Refused() map[string]string {
	out := make(map[string]string, len(c.skipped))
	for n, why := range c.skipped {
		out[n] = why
	}
	return out
}

// RefusedList is Refused as lines "name (section s): reason", sorted by name.
func (c *Collection) RefusedList() []string {
	names := make([]string, 0, len(c.skipped))
	for n := range c.skipped {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		sec := ""
		if ps := c.skippedSpec[n]; ps != nil {
			sec = ps.SectionName
		}
		out[i] = fmt.Sprintf("%s (section %s): %s", n, sec, c.skipped[n])
	}
	return out
}

// refuseTailCallers refuses, until nothing changes, every loaded program
// that references a program array whose declared contents name a refused
// program.
func (c *Collection) refuseTailCallers(contents map[string][]ebpf.MapKV) {
	for changed := true; changed; {
		changed = false
		for _, p := range c.progs {
			why := c.badTailTarget(p, contents)
			if why == "" {
				continue
			}
			ps := &ebpf.ProgramSpec{Name: p.name, SectionName: p.section, Type: p.typ}
			c.refuse(ps, why)
			c.dropProgram(p)
			changed = true
			break // c.progs changed under the loop
		}
	}
}

// badTailTarget says why p may tail-call a refused program, or "".
func (c *Collection) badTailTarget(p *Program, contents map[string][]ebpf.MapKV) string {
	iter := p.insns.Iterate()
	for iter.Next() {
		if !iter.Ins.IsLoadFromMap() {
			continue
		}
		mn := iter.Ins.Reference()
		for _, kv := range contents[mn] {
			pn, ok := kv.Value.(string)
			if !ok {
				continue
			}
			if why, refused := c.skipped[pn]; refused {
				return fmt.Sprintf("program array %s holds program %s (slot %v), which is refused: %s", mn, pn, kv.Key, why)
			}
		}
	}
	return ""
}

// dropProgram removes p from the loaded programs.
func (c *Collection) dropProgram(p *Program) {
	delete(c.byName, p.name)
	for i, q := range c.progs {
		if q == p {
			c.progs = append(c.progs[:i], c.progs[i+1:]...)
			return
		}
	}
}

// refusedInSection is the error for a section with no loaded program but
// refused ones, or nil.
func (c *Collection) refusedInSection(sec string) error {
	var why []string
	for _, n := range c.sortedSkipped() {
		if ps := c.skippedSpec[n]; ps != nil && ps.SectionName == sec {
			why = append(why, fmt.Sprintf("%s: %s", n, c.skipped[n]))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("section %q: program refused: %s: %w", sec, strings.Join(why, "; "), ErrNoProgram)
}

// refusedXDP is the error DefaultXDP returns when refused XDP programs make
// the choice impossible or ambiguous (loaded is the number of loaded XDP
// programs), or nil.
func (c *Collection) refusedXDP(loaded int) error {
	var why []string
	for _, n := range c.sortedSkipped() {
		if ps := c.skippedSpec[n]; ps != nil && ps.Type == ebpf.XDP {
			why = append(why, fmt.Sprintf("%s (section %s): %s", n, ps.SectionName, c.skipped[n]))
		}
	}
	switch {
	case len(why) == 0:
		return nil
	case loaded == 0:
		return fmt.Errorf("no XDP program xnic can run: refused %s: %w", strings.Join(why, "; "), ErrNoProgram)
	}
	return fmt.Errorf("%d XDP programs; pick one with its name or section: %s (refused: %s)", loaded+len(why), c.choices(), strings.Join(why, "; "))
}

func (c *Collection) sortedSkipped() []string {
	names := make([]string, 0, len(c.skipped))
	for n := range c.skipped {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
