package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot returns the directory holding xnic's go.mod, searching upwards
// from dir.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/xnic-dev/xnic")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no xnic go.mod above %s", dir)
		}
		d = parent
	}
}

// goEnv is the environment for building guest binaries: static, linux/amd64.
func goEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
}

// BuildInit builds command guestinit (the guest's /init) into out.
func BuildInit(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./internal/vmtest/guestinit")
	cmd.Dir = root
	cmd.Env = goEnv()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build guestinit: %w\n%s", err, b)
	}
	return nil
}

// BuildCommand builds the command pkg (relative to root, e.g. "./cmd/xnic")
// for the guest into out.
func BuildCommand(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = goEnv()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// TestBinary is a test binary built for the guest.
type TestBinary struct {
	Name  string   // binary name in the guest ("igb")
	Pkg   string   // package path relative to the module root ("./igb")
	Path  string   // host path
	Tests []string // top-level tests it has (from -test.list)
}

// HasTests reports whether dir holds Go test files.
func HasTests(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	return len(m) > 0
}

// BuildTest builds the test binary of pkg (relative to root, e.g. "./igb")
// into outDir and lists its tests. It returns (nil, nil) with a reason when
// the package does not exist yet or has no tests.
func BuildTest(ctx context.Context, root, pkg, outDir string) (*TestBinary, string, error) {
	dir := filepath.Join(root, filepath.FromSlash(pkg))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Sprintf("package %s does not exist yet", pkg), nil
	}
	if !HasTests(dir) {
		return nil, fmt.Sprintf("package %s has no test files yet", pkg), nil
	}
	name := filepath.Base(dir)
	out := filepath.Join(outDir, name+".test")
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = goEnv()
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("go test -c %s: %w\n%s", pkg, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		return nil, fmt.Sprintf("go test -c %s produced no binary (no tests?)", pkg), nil
	}
	tb := &TestBinary{Name: name, Pkg: pkg, Path: out}
	// The binary is linux/amd64 like the host: ask it for its tests, so the
	// host knows which ones must appear in the guest's output.
	list := exec.CommandContext(ctx, out, "-test.list", ".")
	list.Dir = outDir
	list.Env = append(os.Environ(), "XNIC_VMTEST_LIST=1")
	b, err := list.Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s -test.list: %w", out, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Test") {
			tb.Tests = append(tb.Tests, l)
		}
	}
	return tb, "", nil
}
