package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// What every VM tier does around its own boot: find the module and the
// artifacts directory, pick the frame streams' seed, write the initramfs
// with /init's plan, boot, and read /init's results with the same checks.

// vmTier skips the test unless the VM tiers were asked for, and returns the
// module root and the tier's artifacts directory: -vmtest.dir/sub (sub "":
// -vmtest.dir itself), created, else a temporary one.
func vmTier(t *testing.T, sub string) (root, dir string) {
	t.Helper()
	if !*flagVM && os.Getenv("XNIC_VMTEST") != "1" {
		t.Skip("VM tier not requested: run `make vmtest` (go test ./internal/vmtest -vmtest, or XNIC_VMTEST=1)")
	}
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir = *flagDir
	if dir == "" {
		return root, t.TempDir()
	}
	dir = filepath.Join(dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("cannot create %s: %v", dir, err)
	}
	return root, dir
}

// guestSeed is the seed of the guests' frame streams: -vmtest.seed, else one
// from the clock.
func guestSeed() int64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	return time.Now().UnixNano() % 1_000_000_007
}

// writeGuestInitramfs writes the initramfs at path: files, then cfg as /init's
// plan at guestproto.ConfigPath.
func writeGuestInitramfs(t *testing.T, path string, cfg guestproto.Config, files []InitramfsFile) {
	t.Helper()
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, InitramfsFile{Name: strings.TrimPrefix(guestproto.ConfigPath, "/"), Data: cj})
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = WriteInitramfs(f, files)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// guestVM is a VM of any tier: Run boots it and returns its console when
// QEMU exits.
type guestVM interface {
	Run(ctx context.Context) (string, error)
}

// bootGuest boots vm, whose Console is logger and whose /init writes its
// lines to the file results, for at most timeout (0: ctx's own), and keeps
// the console as console.log in dir. It parses /init's lines (from results,
// where no kernel message splits them, else from the console) and fails the
// test when the guest never reached /init; QEMU's failure, /init giving up,
// or the guest stopping without finishing are errors. what names the boot
// in the log.
func bootGuest(ctx context.Context, t *testing.T, vm guestVM, logger *lineLogger, results, dir, what string, timeout time.Duration) (*ConsoleResult, string) {
	t.Helper()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	bootAt := time.Now()
	console, runErr := vm.Run(ctx)
	logger.stop()
	_ = os.WriteFile(filepath.Join(dir, "console.log"), []byte(console), 0o644)
	t.Logf("%s ran %v (QEMU exit: %v); artifacts in %s", what, time.Since(bootAt).Round(time.Millisecond), runErr, dir)

	lines, err := os.ReadFile(results)
	if err != nil || !bytes.Contains(lines, []byte(guestproto.Prefix+"boot")) {
		t.Logf("no results from the guest's results port (%v); parsing the console", err)
		lines = []byte(console)
	}
	res := ParseConsole(string(lines))
	switch {
	case !res.Booted:
		t.Fatalf("the guest never reached /init (QEMU: %v); console tail:\n%s", runErr, Tail(console, 60))
	case runErr != nil:
		t.Errorf("QEMU: %v; console tail:\n%s", runErr, Tail(console, 40))
	}
	if res.Fatal != "" {
		t.Errorf("guest /init gave up: %s\nsteps: %s\nkernel log tail:\n%s", res.Fatal, strings.Join(res.Steps, "\n"), strings.Join(res.Dmesg, "\n"))
	} else if !res.Done && runErr == nil {
		t.Errorf("guest powered off without finishing; console tail:\n%s", Tail(console, 40))
	}
	return res, console
}

// buildGuestTools builds /init and xnic for the guest into dir with build
// (BuildARM64, BuildARMHF) and returns their paths.
func buildGuestTools(ctx context.Context, t *testing.T, build func(ctx context.Context, root, pkg, out string) error, root, dir string) (initPath, xnicPath string) {
	t.Helper()
	initPath, xnicPath = filepath.Join(dir, "init"), filepath.Join(dir, "xnic")
	if err := build(ctx, root, "./internal/vmtest/guestinit", initPath); err != nil {
		t.Fatal(err)
	}
	if err := build(ctx, root, "./cmd/xnic", xnicPath); err != nil {
		t.Fatal(err)
	}
	return initPath, xnicPath
}
