package nictest

import (
	"testing"
)

type closeLog []string

type logCloser struct {
	log  *closeLog
	name string
}

func (c logCloser) Close() error { *c.log = append(*c.log, c.name); return nil }

type loggedPort struct {
	fakePort
	log *closeLog
}

func (p *loggedPort) Close() error { *p.log = append(*p.log, "port"); return nil }

// TestOpenOnClosesPortThenDevice: the port opened on a device is closed
// before the device at the end of the test.
func TestOpenOnClosesPortThenDevice(t *testing.T) {
	var log closeLog
	t.Run("open", func(t *testing.T) {
		p := OpenOn(t, "fake.Open", logCloser{&log, "device"}, func() (*loggedPort, error) { return &loggedPort{log: &log}, nil })
		if p == nil || len(log) != 0 {
			t.Fatalf("port %v, closes %v before the end of the test", p, log)
		}
	})
	if len(log) != 2 || log[0] != "port" || log[1] != "device" {
		t.Fatalf("closes %v, want [port device]", log)
	}
}

// TestEnvSkips: an unset variable skips the test; a set one is returned.
func TestEnvSkips(t *testing.T) {
	t.Setenv("XNIC_NICTEST_ENV", "0000:01:00.0")
	if got := Env(t, "XNIC_NICTEST_ENV", "unused"); got != "0000:01:00.0" {
		t.Fatalf("Env = %q", got)
	}
	t.Setenv("XNIC_NICTEST_ENV", "")
	ran := false
	t.Run("unset", func(t *testing.T) {
		Env(t, "XNIC_NICTEST_ENV", "nothing here")
		ran = true
	})
	if ran {
		t.Fatal("Env did not skip with the variable unset")
	}
}
