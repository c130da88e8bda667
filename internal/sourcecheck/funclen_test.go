package sourcecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, from its func
// keyword to its closing brace.
const maxFuncLines = 150

// longFuncs are the functions allowed over maxFuncLines, keyed by file
// (relative to the module root, slash-separated) and function name with its
// receiver type, each with the reason. An entry whose function has been
// split (or moved) fails the test so the list only shrinks.
var longFuncs = map[string]string{
	"dataplane/bpf/interp.go:(*Runner).fast": "the interpreter's fast loop: one " +
		"switch over the fast operations that calls no function, so the compiler " +
		"keeps its state in registers (see its comment); splitting it spills",
}

// TestFunctionLength fails when a non-test function outside longFuncs
// exceeds maxFuncLines, or when an allow-listed one no longer does.
func TestFunctionLength(t *testing.T) {
	root := moduleRoot(t)
	lengths := funcLengths(t, root)
	if len(lengths) < 100 {
		t.Fatalf("parsed only %d functions under %s: the walk is not seeing the module", len(lengths), root)
	}
	var keys []string
	for k := range lengths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := lengths[k]
		if n <= maxFuncLines {
			continue
		}
		if _, ok := longFuncs[k]; ok {
			continue
		}
		t.Errorf("%s is %d lines (limit %d): split it into named steps", k, n, maxFuncLines)
	}
	for k, why := range longFuncs {
		n, ok := lengths[k]
		switch {
		case !ok:
			t.Errorf("allow-list entry %s (%s): no such function any more: remove the entry", k, why)
		case n <= maxFuncLines:
			t.Errorf("allow-list entry %s: now %d lines, within the limit: remove the entry", k, n)
		}
	}
}

// TestFuncLengthsCounts checks the counter on a source whose lengths are
// known, so a broken walk cannot pass the real test by seeing nothing long.
func TestFuncLengthsCounts(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc short() {}\n\ntype T struct{}\n\nfunc (t *T) long() {\n" +
		strings.Repeat("\t_ = 1\n", 200) + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// A test file's functions are not counted.
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc x() {\n"+strings.Repeat("\n", 300)+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := funcLengths(t, dir)
	want := map[string]int{"p.go:short": 1, "p.go:(*T).long": 202}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: got %d lines, want %d", k, got[k], n)
		}
	}
}

// moduleRoot is the directory holding go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// funcLengths parses every non-test Go file under root (skipping testdata and
// hidden directories, as the go tool does) and returns each function's length
// in lines, keyed as longFuncs is.
func funcLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			out[rel+":"+funcName(fd)] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// funcName is fd's name with its receiver type: "f", "(T).m", "(*T).m".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return "(" + recvType(fd.Recv.List[0].Type) + ")." + fd.Name.Name
}

func recvType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr: // generic receiver T[P]
		return recvType(x.X)
	case *ast.IndexListExpr:
		return recvType(x.X)
	case *ast.ParenExpr:
		return recvType(x.X)
	}
	return "?"
}
