package examples

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// generateLines returns the arguments of each //go:generate clang line of
// generate.go.
func generateLines(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "//go:generate clang "); ok {
			lines = append(lines, strings.Fields(rest))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func outputOf(args []string) (int, string) {
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			return i + 1, args[i+1]
		}
	}
	return -1, ""
}

func TestEveryExampleHasAGenerateLine(t *testing.T) {
	have := map[string]bool{}
	for _, args := range generateLines(t) {
		_, out := outputOf(args)
		have[strings.TrimSuffix(filepath.Base(out), ".o")] = true
	}
	for _, e := range All {
		if !have[e.Name] {
			t.Errorf("%s: no //go:generate line in generate.go", e.Name)
		}
		if _, err := os.Stat(filepath.Join("xdp", e.Name+".c")); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
		if _, err := Object(e.Name); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
	if len(have) != len(All) {
		t.Errorf("generate.go builds %d objects, All lists %d", len(have), len(All))
	}
}

func TestObjectsMatchSources(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("skipping: clang is not installed, so the objects cannot be rebuilt and compared")
	}
	tmp := t.TempDir()
	for _, args := range generateLines(t) {
		i, out := outputOf(args)
		if i < 0 {
			t.Fatalf("generate line without -o: %v", args)
		}
		t.Run(strings.TrimSuffix(filepath.Base(out), ".o"), func(t *testing.T) {
			fresh := append([]string(nil), args...)
			fresh[i] = filepath.Join(tmp, filepath.Base(out))
			cmd := exec.Command("clang", fresh...)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("clang %v: %v\n%s", fresh, err, msg)
			}
			if err := sameCollection(out, fresh[i]); err != nil {
				t.Fatalf("%s no longer matches its source (run `make generate`): %v", out, err)
			}
		})
	}
}

// sameCollection compares the programs and maps of two objects.
func sameCollection(committed, rebuilt string) error {
	a, err := ebpf.LoadCollectionSpec(committed)
	if err != nil {
		return err
	}
	b, err := ebpf.LoadCollectionSpec(rebuilt)
	if err != nil {
		return err
	}
	if len(a.Programs) != len(b.Programs) {
		return fmt.Errorf("%d programs, rebuilt has %d", len(a.Programs), len(b.Programs))
	}
	for name, pa := range a.Programs {
		pb, ok := b.Programs[name]
		if !ok {
			return fmt.Errorf("program %s missing from the rebuilt object", name)
		}
		if pa.SectionName != pb.SectionName {
			return fmt.Errorf("program %s: section %q, rebuilt %q", name, pa.SectionName, pb.SectionName)
		}
		if err := sameInstructions(pa.Instructions, pb.Instructions); err != nil {
			return fmt.Errorf("program %s: %w", name, err)
		}
	}
	if len(a.Maps) != len(b.Maps) {
		return fmt.Errorf("%d maps, rebuilt has %d", len(a.Maps), len(b.Maps))
	}
	for name, ma := range a.Maps {
		mb, ok := b.Maps[name]
		if !ok {
			return fmt.Errorf("map %s missing from the rebuilt object", name)
		}
		if ma.Type != mb.Type || ma.KeySize != mb.KeySize || ma.ValueSize != mb.ValueSize ||
			ma.MaxEntries != mb.MaxEntries || ma.Flags != mb.Flags || fmt.Sprint(ma.Contents) != fmt.Sprint(mb.Contents) {
			return fmt.Errorf("map %s: %v, rebuilt %v", name, ma, mb)
		}
	}
	return nil
}

func sameInstructions(a, b asm.Instructions) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d instructions, rebuilt has %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.OpCode != y.OpCode || x.Dst != y.Dst || x.Src != y.Src || x.Offset != y.Offset ||
			x.Constant != y.Constant || x.Reference() != y.Reference() {
			return fmt.Errorf("instruction %d: %v, rebuilt %v", i, x, y)
		}
	}
	return nil
}

func TestLookup(t *testing.T) {
	e, err := Lookup("xdp_adjust_tail")
	if err != nil || e.Program != "xdp_adjust_tail" {
		t.Fatalf("Lookup: %+v, %v", e, err)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Fatal("Lookup(nope): want an error")
	}
	p, err := WriteObject(t.TempDir(), "xdp_reference")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ebpf.LoadCollectionSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := spec.Programs["xdp_reference"]; !ok {
		t.Fatalf("written object has programs %v", spec.Programs)
	}
	if _, err := Object("missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Object(missing): %v, want ErrNotExist", err)
	}
}
