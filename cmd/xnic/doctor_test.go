package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/preflight/preflighttest"
	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

// useBoard points the platform open path at a fake board, with an empty file
// for /dev/mem: mapping it succeeds, but any access to the mapping is beyond
// the file's end and faults (SIGBUS), so a command that touched a register
// would crash the test.
func useBoard(t *testing.T, b *preflighttest.Board) {
	mem := filepath.Join(t.TempDir(), "mem")
	if err := os.WriteFile(mem, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	platformMemPath, platformPages, platformRoot, platformGPIO, platformSysWrite = mem, noHugePages{}, b.Root, b.GPIO, b.Write
	t.Cleanup(func() {
		platformMemPath, platformPages, platformRoot, platformGPIO, platformSysWrite = "", nil, "", nil, nil
	})
}

// TestPlatformCommandsRefuseBoundFEC: with the stock DTB and fec bound,
// every command on the MAC refuses with the reason and the method, and
// touches no register (the window faults on any access).
func TestPlatformCommandsRefuseBoundFEC(t *testing.T) {
	for _, up := range []bool{true, false} {
		b := preflighttest.NewIMX8MP(t)
		b.BindKernel(preflighttest.FEC, up)
		useBoard(t, b)
		const mac = "fec@0x30be0000"
		for _, args := range [][]string{
			{"info", "--platform", mac}, {"regs", "--platform", mac}, {"stats", "--platform", mac},
			{"link", "--platform", mac}, {"phy", "--platform", mac}, {"ptp", "--platform", mac, "get"},
			{"reg", "--platform", mac, "0x4"}, {"selftest", "--platform", mac}, {"coalesce", "--platform", mac},
			{"hwmeta", "--platform", mac, "--count", "1"}, {"pktgen", "--platform", mac, "--count", "1"},
		} {
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			msg := errb.String()
			if code != 1 || !strings.Contains(msg, "refused before touching a register") ||
				!strings.Contains(msg, "suppress_bind_attrs") || !strings.Contains(msg, "compatible simple-pm-bus") {
				t.Errorf("up=%v xnic %s: exit %d, want 1 with the refusal; stderr:\n%s", up, strings.Join(args, " "), code, msg)
			}
		}
		if b.GPIO.Holds() != 0 {
			t.Errorf("refused commands requested GPIO lines")
		}
	}
}

// TestPlatformCommandsRefuseRemovedFEC: after rmmod fec the clocks are
// gated: refused for the gates, still without a register access.
func TestPlatformCommandsRefuseRemovedFEC(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.FEC, true)
	b.RemoveKernel(preflighttest.FEC)
	useBoard(t, b)
	var out, errb bytes.Buffer
	if code := run([]string{"info", "--platform", "fec@0x30be0000"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "enet1_root_clk") || !strings.Contains(errb.String(), "enable count 0") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

func TestDoctorPlatform(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.FEC, false)
	useBoard(t, b)
	var out, errb bytes.Buffer
	if code := run([]string{"doctor", "--platform", "fec@0x30be0000"}, &out, &errb); code != 1 {
		t.Fatalf("doctor on a bound fec: exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"FAIL    driver", "fix: hand the node to simple-pm-bus", "fdtput -t s BOARD.dtb " + preflighttest.FECNode,
		"FAIL    iomem", "PASS    soc", "FAIL    clock ipg"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
	// Handed over: every check passes, positional NAME@ADDR, JSON.
	b2 := preflighttest.NewIMX8MP(t)
	b2.HandOver(preflighttest.FEC)
	useBoard(t, b2)
	out.Reset()
	errb.Reset()
	if code := run([]string{"doctor", "fec@0x30be0000", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("doctor on a handed-over board: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var rep struct {
		Port   string
		Checks []struct{ Name, Status string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Port != "30be0000.ethernet" || len(rep.Checks) < 10 {
		t.Fatalf("report %+v", rep)
	}
	for _, c := range rep.Checks {
		if c.Status == "FAIL" {
			t.Errorf("check %s failed on a handed-over board", c.Name)
		}
	}
	if b2.Control(preflighttest.FEC) != "auto" || b2.GPIO.Holds() != 0 {
		t.Error("doctor changed the board")
	}
}

func TestDoctorPCI(t *testing.T) {
	f := vfiotest.New(t)
	f.AddDevice(vfiotest.Device{Addr: "0000:03:00.0", Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: "igb", Group: 4})
	var out, errb bytes.Buffer
	code := run([]string{"doctor", "--sysfs", f.Root, "--state-dir", t.TempDir(), "03:00.0"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "FAIL    vfio-pci") || !strings.Contains(out.String(), "xnic bind 0000:03:00.0") ||
		!strings.Contains(out.String(), "PASS    xnic-driver") {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"doctor"}, &out, &errb); code != 2 {
		t.Errorf("doctor without a port: exit %d, want 2", code)
	}
}
