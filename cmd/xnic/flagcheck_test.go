package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every value here makes no sense for its flag: each must be a usage error
// (exit 2) whose first line names the flag, before the command opens anything.
func TestNonsenseFlagValuesAreUsageErrors(t *testing.T) {
	cases := [][]string{
		{"demo", "--phase", "0"},
		{"demo", "--phase", "-1s"},
		{"demo", "--size", "0"},
		{"run", "--sim", "igb", "--prog", "x.o", "--interval", "0"},
		{"run", "--sim", "igb", "--prog", "x.o", "--duration", "-1s"},
		{"run", "--sim", "igb", "--prog", "x.o", "--queues", "0"},
		{"run", "--sim", "igb", "--prog", "x.o", "--queues", "-2"},
		{"run", "--sim", "igb", "--prog", "x.o", "--rate", "NaN"},
		{"run", "--sim", "igb", "--prog", "x.o", "--rate", "-5"},
		{"run", "--sim", "igb", "--prog", "x.o", "--burst", "0"},
		{"run", "--sim", "igb", "--prog", "x.o", "--size", "100000"},
		{"run", "--sim", "igb", "--prog", "x.o", "--ring", "-1"},
		{"run", "--sim", "igb", "--prog", "x.o", "--cpumap-workers", "-7"},
		{"pktgen", "--sim", "igb", "--burst", "0"},
		{"pktgen", "--sim", "igb", "--size", "5"},
		{"pktgen", "--sim", "igb", "--duration", "-3s"},
		{"prog", "bench", "x.o", "--rounds", "0"},
		{"prog", "bench", "x.o", "--repeat", "-1"},
		{"info", "--sim", "igb", "--queues", "100"},
		{"info", "--sim", "igb", "--link-timeout", "-1s"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(args, &out, &errOut)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (usage error); stderr:\n%s", code, errOut.String())
			}
			first, _, _ := strings.Cut(errOut.String(), "\n")
			flagName := ""
			for _, a := range args {
				if strings.HasPrefix(a, "--") && a != "--sim" && a != "--prog" {
					flagName = a
				}
			}
			if !strings.Contains(first, flagName) {
				t.Errorf("first line %q does not name %s", first, flagName)
			}
			if strings.Contains(errOut.String(), "goroutine") {
				t.Errorf("stack trace in stderr:\n%s", errOut.String())
			}
		})
	}
}

// Sensible values pass the checks (the defaults among them).
func TestSensibleFlagValuesPass(t *testing.T) {
	fs := newFlags("run", &bytes.Buffer{})
	fs.Duration("interval", 0, "")
	fs.Int("queues", 1, "")
	fs.Float64("rate", 0, "")
	fs.String("cpus", "0,2-3", "")
	if _, err := parseInterspersed(fs, []string{"--interval", "250ms", "--queues", "4", "--rate", "1e6"}); err != nil {
		t.Fatalf("sensible values refused: %v", err)
	}
}
