package main

import (
	"strings"
	"testing"
)

// TestExitCodes: exit 2 for every nonsense value and usage mistake, with
// the error printed once and no flag dump; exit 1 for failures.
func TestExitCodes(t *testing.T) {
	obj := "../../examples/xdp/xdp_drop_count.o"
	for _, c := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"info", "--sim", "igb", "--rx-ring", "3"}, 2, "ring of 3 descriptors"},
		{[]string{"info", "--sim", "dwmac", "--rx-ring", "3"}, 2, "ring of 3 descriptors"},
		{[]string{"info", "--sim", "fec", "--rx-ring", "3"}, 2, "ring of 3 descriptors"},
		{[]string{"info", "--sim", "igb", "--queues", "5"}, 2, "5 queues"},
		{[]string{"info", "--sim", "fec", "--queues", "5"}, 2, "5 queues"},
		{[]string{"ptp", "--sim", "igb:i210", "adj", "freq", "1000000000"}, 2, "adj freq 1000000000"},
		{[]string{"ptp", "--sim", "igb:i210", "adj", "freq", "-1000000000"}, 2, "adj freq -1000000000"},
		{[]string{"run", "--sim", "igb", "--prog", obj, "--duration", "1ns"}, 2, "--duration 1ns"},
		{[]string{"run", "--sim", "igb", "--prog", obj, "--cpus", "0,0,0"}, 2, "CPU 0 is named twice"},
		{[]string{"prog"}, 2, "name one of its commands"},
		{[]string{"link", "--sim", "igb", "speed"}, 2, `"speed" wants a value`},
		{[]string{"dump"}, 2, "name the running port"},
		{[]string{"dump", "--control", "x", "--filter-dd", "1,2,3"}, 2, "compiled filter"},
		{[]string{"prog", "load", "--control", "x"}, 2, "one ELF object"},
		{[]string{"prog", "show", "--control", "x", "--run-time", "2m"}, 2, "want 0 to 1m"},
		{[]string{"stats", "--sim", "igb", "--watch", "1s"}, 2, "--watch follows a running port"},
		{[]string{"stats", "--sim", "igb", "--count", "3"}, 2, "--count goes with --watch"},
		{[]string{"prog", "show", "--control", "nosuchport"}, 1, "no control socket"},
	} {
		rc, _, errs := runPort(t, c.args...)
		if rc != c.rc || !strings.Contains(errs, c.want) {
			t.Errorf("%q: rc %d (want %d), stderr %q (want %q)", c.args, rc, c.rc, errs, c.want)
		}
		if strings.Count(errs, c.want) != 1 {
			t.Errorf("%q: the error is printed %d times:\n%s", c.args, strings.Count(errs, c.want), errs)
		}
	}
	// An unknown flag: the error once, the usage line, no flag dump.
	rc, _, errs := runPort(t, "info", "--sim", "igb", "--bogus")
	if rc != 2 || strings.Count(errs, "-bogus") != 1 || strings.Count(errs, "\n") > 2 || strings.Contains(errs, "flags:") {
		t.Errorf("unknown flag: rc %d\n%s", rc, errs)
	}
}
