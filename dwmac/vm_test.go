package dwmac_test

// Tests against a real device opened through VFIO: in the VM tier
// (TestVFIOUser in internal/vmtest) dwmacsim served over vfio-user, bound to
// vfio-pci inside the guest; on hardware, an Intel mGbE. They run only when
// XNIC_DWMAC_BDF names the device, bound to vfio-pci, with the traffic peer at
// the other end of its link.

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/internal/vmtest/porttest"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/vfio"
)

const vmLinkTimeout = 30 * time.Second

func vmBDF(t *testing.T) string {
	t.Helper()
	return nictest.Env(t, "XNIC_DWMAC_BDF", "no dwmac device bound to vfio-pci here (the VM tier's TestVFIOUser sets it)")
}

// vmOpts are the vfio.Open options: XNIC_DWMAC_HUGEPAGE (bytes) backs DMA
// memory with huge pages of that size. The vfio-user tier leaves it unset:
// behind the guest's IOMMU QEMU sends one DMA_MAP per 4 KiB page, and the
// server's arenas (vfiouser/arena.go) give the model a contiguous view of
// them anyway.
func vmOpts(t *testing.T) []vfio.Option {
	t.Helper()
	s := os.Getenv("XNIC_DWMAC_HUGEPAGE")
	if s == "" {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("XNIC_DWMAC_HUGEPAGE=%q: %v", s, err)
	}
	return []vfio.Option{vfio.WithHugePages(n)}
}

// openVM opens the device named by XNIC_DWMAC_BDF and waits for its link.
func openVM(t *testing.T, cfg dwmac.Config) *dwmac.Port {
	t.Helper()
	dev, err := vfio.Open(vmBDF(t), vmOpts(t)...)
	if err != nil {
		t.Fatalf("vfio.Open: %v", err)
	}
	p := nictest.OpenOn(t, "dwmac.Open", dev, func() (*dwmac.Port, error) { return dwmac.Open(dev, cfg) })
	if _, err := p.WaitLink(vmLinkTimeout); err != nil {
		t.Fatalf("%v\n%s", err, p.Dump())
	}
	return p
}

func vmClient(t *testing.T, p *dwmac.Port) (*traffic.Client, *traffic.PortIO) {
	t.Helper()
	return porttest.Connect(t, p)
}

func TestVMLinkAndMAC(t *testing.T) {
	p := openVM(t, dwmac.Config{})
	l := p.Link()
	if !l.Up || l.SpeedMbps != 1000 || !l.FullDuplex {
		t.Fatalf("link %+v, want 1000 Mb/s full duplex", l)
	}
	mac := p.MAC()
	if want := os.Getenv("XNIC_DWMAC_MAC"); want != "" && mac.String() != want {
		t.Fatalf("MAC %s, want %s (the model's factory address)", mac, want)
	}
	if mac[0]&1 != 0 || (mac[0]|mac[1]|mac[2]|mac[3]|mac[4]|mac[5]) == 0 {
		t.Fatalf("MAC %s", mac)
	}
	t.Logf("%s: %s MAC %s link %+v PHY %08x at %d, HW %+v", p.Name(), p.Model().Name, mac, l, p.PHYID(), p.PHYAddr(), p.HW())
}

func TestVMTransmit(t *testing.T) {
	p := openVM(t, dwmac.Config{})
	c, _ := vmClient(t, p)
	if rep, err := c.Transmit(10000, 501, 120*time.Second); err != nil {
		t.Fatalf("transmit: %v (report %s)", err, rep)
	}
}

func TestVMReceive(t *testing.T) {
	p := openVM(t, dwmac.Config{})
	c, _ := vmClient(t, p)
	s, err := c.Inject(10000, 502, 128)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Receive(s, 120*time.Second); err != nil {
		t.Fatalf("%v\nstats: %v", err, p.Stats())
	}
}

// TestVMInterruptWakesRecv blocks on RX queue 0's MSI-X vector (through VFIO's
// eventfd) until a frame the peer sends two seconds later arrives.
func TestVMInterruptWakesRecv(t *testing.T) {
	p := openVM(t, dwmac.Config{Interrupts: true})
	c, io := vmClient(t, p)
	porttest.PeerWakesRecv(t, p, c, io, 503, 20*time.Second, func() string { return p.Dump().String() })
}

func TestVMCloseReopen(t *testing.T) {
	dev, err := vfio.Open(vmBDF(t), vmOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	porttest.CloseReopen(t, 2, vmLinkTimeout, 510, func() (nic.Port, error) {
		return dwmac.Open(dev, dwmac.Config{})
	})
}
