package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
)

func TestServeUsageErrors(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	exists := filepath.Join(t.TempDir(), "exists")
	if err := os.WriteFile(exists, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--vfio-user", sock}, "--sim is required"},
		{[]string{"serve", "--sim", "igb"}, "--vfio-user SOCKET is required"},
		{[]string{"serve", "--sim", "igb:2", "--vfio-user", sock}, "one device"},
		{[]string{"serve", "--sim", "fec", "--vfio-user", sock}, "not a PCI model"},
		{[]string{"serve", "--sim", "dwmac:imx8mp", "--vfio-user", sock}, "not a PCI model"},
		{[]string{"serve", "--sim", "nope", "--vfio-user", sock}, "no simulated"},
		{[]string{"serve", "--sim", "igb", "--vfio-user", sock, "--wire", "eth0"}, "want udp:LOCAL,REMOTE"},
		{[]string{"serve", "--sim", "igb", "--vfio-user", sock, "--wire", "udp:1.2.3.4:5"}, "two host:port"},
		{[]string{"serve", "--sim", "igb", "--vfio-user", exists}, "file exists"},
		{[]string{"serve", "--sim", "igb", "--vfio-user", sock, "extra"}, "unexpected argument"},
		{[]string{"serve", "--bogus"}, "bogus"},
	} {
		code, out, errs := runCmd(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q); stdout %q", c.args, code, errs, c.want, out)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Fatalf("%v left the socket behind", c.args)
		}
	}
}

// TestServeOnceIGB serves an igb model over a socket; a client negotiates,
// reads the config space and writes a register, and leaves: with --once serve
// returns, removes the socket and prints its counters and the model's faults.
func TestServeOnceIGB(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "igb.sock")
	pcap := filepath.Join(dir, "tx.pcap")
	ready := make(chan struct{})
	var out bytes.Buffer
	errc := make(chan error, 1)
	o := serveOptions{sim: "igb:i350", socket: sock, wire: "pcap:" + pcap, once: true,
		logf: t.Logf, ready: func() { close(ready) }}
	go func() { errc <- serve(context.Background(), o, &out) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("socket never appeared")
	}
	c, err := vfiousertest.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Version(0, nil); err != nil {
		t.Fatal(err)
	}
	id, err := c.ReadRegion(vfiouser.RegionConfig, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(id); got != 0x15218086 {
		t.Fatalf("vendor/device %08x, want I350 8086:1521", got)
	}
	if err := c.Write32(0x5400, 0x01020304); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRegion(vfiouser.RegionBAR0, 0x5400, []byte{1, 2}); err == nil {
		t.Fatal("a 2-byte register write was accepted")
	}
	c.Close()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve --once did not return after the client left")
	}
	s := out.String()
	for _, want := range []string{"serving simulated igb:i350 (8086:1521)", "messages=4 errors=1 region_reads=1 region_writes=1",
		"model counters:", "model faults: 1", "2-byte register write"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if st, err := os.Stat(pcap); err != nil || st.Size() != 24 {
		t.Errorf("pcap file: %v, want a 24-byte header and no frames", err)
	}
}

func TestServeInterrupted(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var out bytes.Buffer
	errc := make(chan error, 1)
	o := serveOptions{sim: "dwmac:intel", socket: sock, wire: "udp:127.0.0.1:0,127.0.0.1:9", logf: t.Logf, ready: func() { close(ready) }}
	go func() { errc <- serve(ctx, o, &out) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	cancel() // as SIGINT does
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("an interrupt is a normal end: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve ignored the interrupt")
	}
	if !strings.Contains(out.String(), "model faults: 0") {
		t.Errorf("output:\n%s", out.String())
	}
}
