package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/xnic-dev/xnic/dataplane/pktgen"
)

// A flagRule refuses values of one flag that make no sense. Rules are checked
// after parsing, on the value the flag ends up with (given or default), so a
// command never starts with, for example, a zero interval (a ticker panics on
// it) or a negative duration (which would mean "forever").
type flagRule struct {
	flag  string // the flag's name
	cmds  []string
	check func(v flag.Value) error
}

// flagRules apply to every command that has the flag, unless cmds names the
// commands they are for (FlagSet names: "run", "prog bench", ...).
var flagRules = []flagRule{
	{flag: "interval", check: durationAtLeast(10 * time.Millisecond)},
	{flag: "phase", check: durationAtLeast(100 * time.Millisecond)},
	{flag: "size", check: intBetween(pktgen.MinFrame, pktgen.MaxFrame)},
	{flag: "burst", check: intBetween(1, 1024)},
	{flag: "repeat", check: intBetween(1, 1<<30)},
	{flag: "rounds", check: intBetween(1, 1000)},
	{flag: "queues", cmds: []string{"run"}, check: intBetween(1, 64)},
	{flag: "queues", check: intBetween(0, 64)},
	{flag: "ring", check: intBetween(0, 1<<16)},
	{flag: "rx-ring", check: intBetween(0, 1<<16)},
	{flag: "tx-ring", check: intBetween(0, 1<<16)},
	{flag: "rx-usecs", check: intBetween(0, 1<<20)},
	{flag: "rate", check: finiteAtLeast(0)},
	{flag: "cpumap-workers", check: intBetween(-1, 1024)},
	// A duration is 0 (none) or long enough for one poll and one line.
	{flag: "duration", check: zeroOrAtLeast(10 * time.Millisecond)},
	{flag: "cpus", check: cpuList},
}

// zeroOrAtLeast accepts 0 (the flag's "none") or at least min.
func zeroOrAtLeast(min time.Duration) func(flag.Value) error {
	return func(v flag.Value) error {
		if d, ok := durationOf(v); ok && d != 0 && d < min {
			return fmt.Errorf("must be 0 (none) or at least %v", min)
		}
		return nil
	}
}

// cpuList accepts "" or a list of distinct CPUs (0,2-3). A CPU the machine
// does not have fails when the poll goroutine pins itself (exit 1).
func cpuList(v flag.Value) error {
	if v.String() == "" {
		return nil
	}
	cpus, err := dpParseCPUs(v.String())
	if err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, c := range cpus {
		if seen[c] {
			return fmt.Errorf("CPU %d is named twice", c)
		}
		seen[c] = true
	}
	return nil
}

// checkFlagValues applies flagRules to fs, and refuses a negative value of any
// duration flag. The error wraps errUsage and names the flag.
func checkFlagValues(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		if d, ok := durationOf(f.Value); ok && d < 0 {
			err = usageErrorf("--%s %v: a duration cannot be negative", f.Name, d)
			return
		}
		if r := ruleFor(fs.Name(), f.Name); r != nil {
			if e := r.check(f.Value); e != nil {
				err = usageErrorf("--%s %s: %v", f.Name, f.Value.String(), e)
			}
		}
	})
	return err
}

// durationOf is v's value when v is a duration flag.
func durationOf(v flag.Value) (time.Duration, bool) {
	g, ok := v.(flag.Getter)
	if !ok {
		return 0, false
	}
	d, ok := g.Get().(time.Duration)
	return d, ok
}

// ruleFor is the first rule for flag name in command cmd.
func ruleFor(cmd, name string) *flagRule {
	for i := range flagRules {
		r := &flagRules[i]
		if r.flag != name {
			continue
		}
		if len(r.cmds) == 0 {
			return r
		}
		for _, c := range r.cmds {
			if c == cmd {
				return r
			}
		}
	}
	return nil
}

func durationAtLeast(min time.Duration) func(flag.Value) error {
	return func(v flag.Value) error {
		d, ok := durationOf(v)
		if !ok || d >= min {
			return nil
		}
		return fmt.Errorf("must be at least %v", min)
	}
}

// intBetween accepts the flag's value as an integer in [lo, hi]; flags whose
// value is not an integer (a flag of the same name holding a list) pass.
func intBetween(lo, hi int64) func(flag.Value) error {
	return func(v flag.Value) error {
		n, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil {
			if u, uerr := strconv.ParseUint(v.String(), 10, 64); uerr == nil && u > math.MaxInt64 {
				return fmt.Errorf("must be between %d and %d", lo, hi)
			}
			return nil
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

func finiteAtLeast(min float64) func(flag.Value) error {
	return func(v flag.Value) error {
		f, err := strconv.ParseFloat(v.String(), 64)
		if err != nil {
			return nil
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f < min {
			return fmt.Errorf("must be a number of at least %g", min)
		}
		return nil
	}
}
