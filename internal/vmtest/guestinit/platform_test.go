package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// TestRunPlatform: a Config without a PCI device runs its tests directly with
// the Config's environment and counts the binaries that failed.
func TestRunPlatform(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to stand in for a test binary")
	}
	var buf bytes.Buffer
	defer guestrt.SetConsole(&buf)()
	cfg := guestproto.Config{
		Env: map[string]string{"XNIC_FEC_PLATFORM": "fsl,imx8mp-fec@0x30be0000"},
		Tests: []guestproto.Test{
			{Name: "ok", Path: sh, Args: []string{"-c", `echo "platform=$XNIC_FEC_PLATFORM vmtest=$XNIC_VMTEST"`}, TimeoutSec: 10},
			{Name: "bad", Path: sh, Args: []string{"-c", "exit 3"}, TimeoutSec: 10},
		},
	}
	if n := runPlatform(cfg); n != 1 {
		t.Errorf("runPlatform: %d failures, want 1", n)
	}
	got := buf.String()
	for _, want := range []string{
		guestproto.Prefix + "start ok",
		guestproto.Prefix + "out ok| platform=fsl,imx8mp-fec@0x30be0000 vmtest=1",
		guestproto.Prefix + "exit ok 0 ",
		guestproto.Prefix + "exit bad 3 ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
