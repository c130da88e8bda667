package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpListsEveryCommandAligned(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"help"}, &out, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	col := -1
	for name, c := range commands {
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "  "+name+" ") && strings.Contains(line, c.summary) {
				found = true
				at := strings.Index(line, c.summary)
				if col >= 0 && at != col {
					t.Errorf("summary of %q at column %d, others at %d", name, at, col)
				}
				col = at
			}
		}
		if !found {
			t.Errorf("help has no line for %q with its summary", name)
		}
	}
}

func TestProgGroupPrintsItsSubcommands(t *testing.T) {
	// Asked for (-h, help): the list on stdout, exit 0. The group alone
	// names no command: the list on stderr, exit 2 (a usage error).
	for _, args := range [][]string{{"prog"}, {"prog", "-h"}, {"help", "prog"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		where, want := out.String(), 0
		if len(args) == 1 {
			where, want = errOut.String(), 2
		}
		if code != want {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, want, errOut.String())
		}
		for _, sub := range []string{"prog run", "prog bench", "prog disasm", "prog maps", "prog load", "prog show", "prog events"} {
			if !strings.Contains(where, sub) {
				t.Errorf("%v: output lacks %q:\n%s", args, sub, where)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"prog", "frobnicate"}, &out, &errOut); code != 2 {
		t.Errorf("prog frobnicate: exit %d, want 2", code)
	}
}

func TestCommandHelpShowsPositionalArguments(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"info", "-h"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errOut.String(), "usage: xnic info BDF | --sim") {
		t.Errorf("info -h does not show its arguments:\n%s", errOut.String())
	}
}

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "xnic ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("version = %q", out.String())
	}
	if code := run([]string{"version", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}
