package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Status is the verdict of one check.
type Status int

const (
	// Unknown: the check could not be made; Why says why. It does not refuse.
	Unknown Status = iota
	// Pass: the state is what xnic needs.
	Pass
	// Fail: touching the device now would hang the SoC, fail, or take it from
	// a kernel driver; Fix says what to do. Any Fail refuses the port.
	Fail
)

// String returns "PASS", "FAIL" or "UNKNOWN".
func (s Status) String() string {
	switch s {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	}
	return "UNKNOWN"
}

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Check is one inspected fact.
type Check struct {
	Name   string `json:"name"`   // "driver", "clock ipg", ...
	Status Status `json:"status"` //
	Detail string `json:"detail"` // what was found (Pass, Fail) or why it could not be (Unknown)
	Fix    string `json:"fix,omitempty"`
}

// Report is every check of one port, in the order they were made.
type Report struct {
	Port   string  `json:"port"` // "30be0000.ethernet" or "0000:03:00.0"
	Bus    string  `json:"bus"`  // "platform" or "pci"
	What   string  `json:"what,omitempty"`
	Checks []Check `json:"checks"`
}

// ErrRefused is wrapped by the error of a report with a Fail.
var ErrRefused = errors.New("preflight: refused before touching a register")

func (r *Report) add(name string, s Status, detail, fix string) {
	r.Checks = append(r.Checks, Check{Name: name, Status: s, Detail: detail, Fix: fix})
}

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// Err is nil when no check failed, otherwise an error wrapping ErrRefused that
// lists every failed check with its fix.
func (r *Report) Err() error {
	f := r.Failed()
	if len(f) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s):", r.Port, r.What)
	for _, c := range f {
		fmt.Fprintf(&b, "\n  %s: %s", c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(&b, "\n    fix: %s", c.Fix)
		}
	}
	b.WriteString("\n  (`xnic doctor` lists every check)")
	return fmt.Errorf("%w: %s", ErrRefused, b.String())
}

// Check returns the first check named name.
func (r *Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// WriteText prints one line per check, with the fix under a Fail.
func (r *Report) WriteText(w io.Writer) error {
	what := r.What
	if what != "" {
		what = " (" + what + ")"
	}
	if _, err := fmt.Fprintf(w, "%s %s%s\n", r.Bus, r.Port, what); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if _, err := fmt.Fprintf(w, "  %-7s %-22s %s\n", c.Status, c.Name, c.Detail); err != nil {
			return err
		}
		if c.Fix != "" {
			if _, err := fmt.Fprintf(w, "          %-22s fix: %s\n", "", c.Fix); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON prints the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
