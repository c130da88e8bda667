package tap

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("TAP devices need root (CAP_NET_ADMIN): skipped")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no /dev/net/tun: %v", err)
	}
}

func TestTAPRoundTrip(t *testing.T) {
	needRoot(t)
	d, err := Open("xnictest%d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mac := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	if err := d.SetMAC(mac); err != nil {
		t.Fatal(err)
	}
	if err := d.SetMTU(1400); err != nil {
		t.Fatal(err)
	}
	if err := d.SetUp(true); err != nil {
		t.Fatal(err)
	}
	ifi, err := net.InterfaceByName(d.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ifi.HardwareAddr, mac) || ifi.MTU != 1400 || ifi.Flags&net.FlagUp == 0 || d.Ifindex() != ifi.Index {
		t.Errorf("interface %+v: want MAC %v, MTU 1400, up, index %d", ifi, mac, d.Ifindex())
	}
	// Nothing to read: a timeout, not an error (IPv6 may send router
	// solicitations; accept those).
	buf := make([]byte, 2048)
	if _, err := d.ReadFrame(buf, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A broadcast ARP request written to the TAP is received by the kernel; ask
	// the kernel to send something: with an address on the TAP, an ARP request for
	// a neighbour leaves through it.
	if out, err := exec.Command("ip", "addr", "add", "10.213.7.1/24", "dev", d.Name()).CombinedOutput(); err != nil {
		t.Skipf("ip addr add: %v %s", err, out)
	}
	c, err := net.Dial("udp4", "10.213.7.2:9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("hello"))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, err := d.ReadFrame(buf, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n >= 42 && buf[12] == 0x08 && buf[13] == 0x06 && bytes.Equal(buf[6:12], mac) {
			if !bytes.Equal(buf[38:42], []byte{10, 213, 7, 2}) {
				t.Errorf("ARP for %v, want 10.213.7.2", buf[38:42])
			}
			if err := d.Deliver(buf[:n]); err != nil {
				t.Errorf("Deliver: %v", err)
			}
			return
		}
	}
	t.Fatal("no ARP request read from the TAP")
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("this-name-is-far-too-long-for-linux"); err == nil {
		t.Error("a 35-byte name was accepted")
	}
}
