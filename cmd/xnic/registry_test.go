package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// familyWords are the names by which a family could be named: its name, its
// platform aliases and compatible strings, and the package paths of its
// driver and model.
func familyWords() []string {
	var ws []string
	for _, f := range families {
		ws = append(ws, string(f.name), string(f.name)+"sim")
		for a := range f.aliases {
			ws = append(ws, a)
		}
		if f.compatibles != nil {
			ws = append(ws, f.compatibles()...)
		}
	}
	return ws
}

// TestNoFamilyOutsideItsFile: only the file that registers a family (the
// one calling registerFamily) names it in code or text: no other file of
// the CLI imports a driver or model, has an identifier with a family's name
// in it, or a string literal naming one (help, errors, examples), so adding
// a fourth family is its packages plus one file here. Comments may cite a
// family's datasheet.
func TestNoFamilyOutsideItsFile(t *testing.T) {
	words := familyWords()
	var alts []string
	for _, w := range words {
		alts = append(alts, regexp.QuoteMeta(w))
	}
	re := regexp.MustCompile(`(?i)(^|[^a-z0-9])(` + strings.Join(alts, "|") + `)($|[^a-z0-9])`)
	ident := regexp.MustCompile(`(?i)(` + strings.Join(alts, "|") + `)`)
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, de := range files {
		name := de.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		registers := false
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "registerFamily" {
					registers = true
				}
			}
			return true
		})
		if registers {
			continue
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					s = n.Value
				}
				if m := re.FindStringSubmatch(s); m != nil {
					if n.Pos() >= f.Imports[0].Pos() && len(f.Imports) > 0 && n.End() <= f.Imports[len(f.Imports)-1].End() {
						t.Errorf("%s: imports %s, a family's package", fset.Position(n.Pos()), s)
					} else {
						t.Errorf("%s: %q names the family %q", fset.Position(n.Pos()), s, m[2])
					}
				}
			case *ast.Ident:
				if m := ident.FindString(n.Name); m != "" {
					t.Errorf("%s: identifier %s names the family %q", fset.Position(n.Pos()), n.Name, m)
				}
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files", checked)
	}
}

// TestFourthFamily: a family the CLI has never heard of, registered as its
// file would register it (here: the first family's driver and model under
// another name, with its own platform name), appears in the help, the --sim
// choices, the --platform names and the errors, and works through every
// generic path: info, regs, stats, selftest and run with a program.
func TestFourthFamily(t *testing.T) {
	toy := *families[0]
	toy.name, toy.order, toy.about = "toyfam", 99, "a family made up by a test"
	toy.platformExample = "toyfam@0x40000000"
	toy.knowsCompatible = func(c string) bool { return c == "test,toyfam" }
	toy.compatibles = func() []string { return []string{"test,toyfam"} }
	toy.aliases = map[string]string{"toyfam": "test,toyfam"}
	toy.window, toy.dmaLimit = 0x1000, 1<<32
	registerFamily(&toy)
	t.Cleanup(func() {
		families = slices.DeleteFunc(families, func(f *familyDriver) bool { return f == &toy })
	})

	rc, out, _ := runPort(t, "help")
	if rc != 0 || !strings.Contains(out, "toyfam") || !strings.Contains(out, "a family made up by a test") || !strings.Contains(out, "toyfam@0x40000000") {
		t.Fatalf("help rc %d:\n%s", rc, out)
	}
	if _, err := parseSim("toyfam:nosuch"); err == nil || !strings.Contains(err.Error(), "toyfam") {
		t.Errorf("--sim error: %v", err)
	}
	if f, compat, ok := platformFamily("toyfam"); !ok || f != &toy || compat != "test,toyfam" {
		t.Errorf("--platform toyfam: %v %q %v", f, compat, ok)
	}
	var pi portInfo
	cliJSON(t, &pi, "info", "--sim", "toyfam", "--json")
	if pi.Driver != "toyfam" || pi.Model == "" || !pi.Link.Up {
		t.Errorf("info: %+v", pi)
	}
	if rc, out, errs := runPort(t, "regs", "--sim", "toyfam"); rc != 0 || !strings.Contains(out, "0x") {
		t.Errorf("regs rc %d: %s", rc, errs)
	}
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	cliJSON(t, &st, "stats", "--sim", "toyfam", "--json")
	if _, ok := st.Counters["rx_packets"]; !ok {
		t.Errorf("stats: %v", st.Counters)
	}
	if rc, out, errs := runPort(t, "selftest", "--sim", "toyfam"); rc != 0 || strings.Contains(out, "fail") {
		t.Errorf("selftest rc %d:\n%s%s", rc, out, errs)
	}
	rc, out, errs := runPort(t, "run", "--sim", "toyfam:2", "--prog", examplePath(t, "xdp_drop_count"), "--duration", "300ms",
		"--interval", "100ms", "--tap", "none", "--json")
	var final struct {
		Ports []struct {
			Name     string            `json:"port"`
			Counters map[string]uint64 `json:"counters"`
		} `json:"ports"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if rc != 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &final) != nil || len(final.Ports) != 2 ||
		final.Ports[1].Name != "toyfamsim1" || final.Ports[0].Counters["rx_xdp_drop"] == 0 {
		t.Fatalf("run rc %d: %s\n%s", rc, out, errs)
	}
}

// TestRegisterFacts: every register a driver's facts name (read-only,
// self-test patterns, MAC loopback) is in its family's register dump, and a
// pattern's bits are in the register.
func TestRegisterFacts(t *testing.T) {
	for _, f := range families {
		op, err := openPort("", portOptions{Sim: string(f.name)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := portDumpTable(op)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{f.facts.Loopback.Reg}
		for r := range f.facts.ReadOnly {
			names = append(names, r)
		}
		for _, p := range f.facts.Patterns {
			names = append(names, p.Reg)
			if p.Mask == 0 {
				t.Errorf("%s: pattern register %s with no bits", f.name, p.Reg)
			}
		}
		if len(f.facts.Patterns) == 0 || f.facts.Loopback.Mask == 0 || f.facts.Loopback.On&^f.facts.Loopback.Mask != 0 {
			t.Errorf("%s: facts %+v", f.name, f.facts)
		}
		for _, n := range names {
			if _, ok := d.Reg(n); !ok {
				t.Errorf("%s: %s is not in the register dump", f.name, n)
			}
		}
		op.Close()
	}
}
