package vmtest

import (
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// Status of one guest test.
type Status string

// Statuses.
const (
	StatusPass   Status = "PASS"
	StatusFail   Status = "FAIL"
	StatusSkip   Status = "SKIP"
	StatusNotRun Status = ""
)

// TestResult is one top-level test as the guest reported it.
type TestResult struct {
	Name    string
	Status  Status
	Seconds string
	Output  []string // lines printed while it ran
}

// BinaryResult is one test binary's run in the guest.
type BinaryResult struct {
	Name     string
	Started  bool
	Exited   bool
	ExitCode int
	Seconds  string
	Tests    map[string]*TestResult
	Order    []string // test names in the order they started
	Output   []string // every line it printed
}

// ConsoleResult is what the guest's console says.
type ConsoleResult struct {
	Booted   bool     // /init printed "boot"
	Done     bool     // /init finished the plan
	Fatal    string   // /init's fatal error, if any
	Steps    []string // "step" lines
	Failed   []string // "step ... fail" lines
	Dmesg    []string
	Binaries map[string]*BinaryResult
	Order    []string
}

// ParseConsole reads the serial console output of a guest run. Lines that do
// not carry guestproto.Prefix (kernel messages) are ignored.
func ParseConsole(console string) *ConsoleResult {
	r := &ConsoleResult{Binaries: map[string]*BinaryResult{}}
	bin := func(name string) *BinaryResult {
		b, ok := r.Binaries[name]
		if !ok {
			b = &BinaryResult{Name: name, Tests: map[string]*TestResult{}, ExitCode: -1}
			r.Binaries[name] = b
			r.Order = append(r.Order, name)
		}
		return b
	}
	current := map[string]string{} // binary -> test whose output is flowing
	for _, line := range strings.Split(console, "\n") {
		line = strings.TrimRight(line, "\r")
		i := strings.Index(line, guestproto.Prefix)
		if i < 0 {
			continue
		}
		msg := line[i+len(guestproto.Prefix):]
		verb, rest, _ := strings.Cut(msg, " ")
		switch {
		case verb == "boot":
			r.Booted = true
		case verb == "done":
			r.Done = true
		case verb == "fatal":
			r.Fatal = rest
		case verb == "step":
			r.Steps = append(r.Steps, rest)
			if f := strings.Fields(rest); len(f) >= 2 && f[1] == "fail" {
				r.Failed = append(r.Failed, rest)
			}
		case verb == "start":
			bin(strings.TrimSpace(rest)).Started = true
		case verb == "exit":
			f := strings.Fields(rest)
			if len(f) >= 2 {
				b := bin(f[0])
				b.Exited = true
				b.ExitCode, _ = strconv.Atoi(f[1])
				if len(f) >= 3 {
					b.Seconds = f[2]
				}
			}
		case strings.HasPrefix(msg, "dmesg| "):
			r.Dmesg = append(r.Dmesg, strings.TrimPrefix(msg, "dmesg| "))
		case verb == "out":
			name, text, ok := strings.Cut(rest, "| ")
			if !ok {
				name, text, _ = strings.Cut(rest, "|")
			}
			b := bin(name)
			b.Output = append(b.Output, text)
			parseTestLine(b, current, text)
		}
	}
	return r
}

// parseTestLine follows "go test -v" output: === RUN/CONT/PAUSE switch the
// test whose output is flowing; "--- PASS|FAIL|SKIP: Name (1.23s)" at the start
// of a line ends a top-level test (subtests are indented).
func parseTestLine(b *BinaryResult, current map[string]string, text string) {
	test := func(name string) *TestResult {
		t, ok := b.Tests[name]
		if !ok {
			t = &TestResult{Name: name}
			b.Tests[name] = t
			b.Order = append(b.Order, name)
		}
		return t
	}
	for _, p := range []string{"=== RUN", "=== CONT", "=== PAUSE", "=== NAME"} {
		if strings.HasPrefix(text, p) {
			name := strings.TrimSpace(strings.TrimPrefix(text, p))
			top, _, _ := strings.Cut(name, "/")
			if top != "" {
				test(top)
				current[b.Name] = top
			}
			return
		}
	}
	for _, s := range []Status{StatusPass, StatusFail, StatusSkip} {
		p := "--- " + string(s) + ": "
		if strings.HasPrefix(text, p) {
			name, secs, _ := strings.Cut(strings.TrimPrefix(text, p), " ")
			t := test(name)
			t.Status = s
			t.Seconds = strings.Trim(secs, "()")
			return
		}
	}
	if cur := current[b.Name]; cur != "" {
		t := test(cur)
		t.Output = append(t.Output, text)
	}
}
