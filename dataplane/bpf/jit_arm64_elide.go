//go:build linux && arm64

package bpf

import "fmt"

// elideAt reports whether the native lookup at pc, about to be emitted,
// leaves its region out (valueElided in jit_elide.go): only when its
// first access is compiled with no check (c.unchk.bufOnly), which is what
// leaves the value's address in X10 (S2) for every access valueElided
// found. It records those accesses for elideErr.
func (c *arm64Compiler) elideAt(pc int, a jitArray) bool {
	if !c.unchk.bufOnly || a.dyn {
		return false
	}
	accs, ok := valueElided(c.plain, c.targets, pc, a)
	if !ok {
		return false
	}
	if c.elided == nil {
		c.elided = map[int][]int{}
	}
	c.elided[pc] = accs
	return true
}

// elideRegion is valueRegion for an elided lookup: S2 = the value's first
// byte (what leaveBuf leaves for an unchecked access), r0 = the stand-in,
// region 0 (regionNone) at offset 1.
func (c *arm64Compiler) elideRegion() {
	c.rrr(a64Orr, aS2, aZR, 0)
	c.movImm(0, 1)
}

// elideErr checks, once the code is emitted, that every access an elided
// lookup relies on was compiled with no check (it reads S2, never r0);
// one that was not would read the stand-in, so the program is refused.
func (c *arm64Compiler) elideErr() error {
	for call, accs := range c.elided {
		for _, pc := range accs {
			if c.unchk.accs == nil || !c.unchk.accs[pc] {
				return fmt.Errorf("internal: value access at %d after the elided lookup at %d has a check", pc, call)
			}
		}
	}
	return nil
}
