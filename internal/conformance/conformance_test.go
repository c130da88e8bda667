package conformance_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// model is what the suite needs of a device model.
type model interface {
	Attach(sim.Link)
	Err() error
	Close() error
}

// variant is one row of the suite: a model variant and the driver on it.
type variant struct {
	name string
	// build returns a fresh model and the device to open the driver on.
	build func() (model, nic.Device, error)
	open  func(dev nic.Device) (nic.Port, error)
	// serdes: the link is a PCS's 1000BASE-X (igb's fiber ports), with no
	// PHY on MDIO.
	serdes bool
}

const linkTimeout = 2 * time.Second

func igbVariant(name string, id uint16) variant {
	return variant{name: "igb/" + name,
		build: func() (model, nic.Device, error) {
			m, err := igbsim.New(igbsim.Config{DeviceID: id, Queues: 1, AutonegDelay: time.Millisecond})
			if err != nil {
				return nil, nil, err
			}
			return m, m.Device(), nil
		},
		open: func(dev nic.Device) (nic.Port, error) {
			return igb.Open(dev, igb.Config{Queues: 1, LinkTimeout: linkTimeout})
		}}
}

// igbSerDes is an igb fiber/SerDes port.
func igbSerDes(name string, id uint16) variant {
	v := igbVariant(name, id)
	v.serdes = true
	return v
}

func dwmacVariant(name string, v dwmacsim.Variant, pciID uint16) variant {
	return variant{name: "dwmac/" + name,
		build: func() (model, nic.Device, error) {
			m, err := dwmacsim.New(dwmacsim.Config{Variant: v, PCIDevice: pciID, AutonegDelay: time.Millisecond})
			if err != nil {
				return nil, nil, err
			}
			return m, m.Device(), nil
		},
		open: func(dev nic.Device) (nic.Port, error) {
			return dwmac.Open(dev, dwmac.Config{Queues: 1, LinkTimeout: linkTimeout})
		}}
}

func fecVariant(name string, v fecsim.Variant) variant {
	return variant{name: "fec/" + name,
		build: func() (model, nic.Device, error) {
			m, err := fecsim.New(fecsim.Config{Variant: v, AutonegDelay: time.Millisecond})
			if err != nil {
				return nil, nil, err
			}
			return m, m.Device(), nil
		},
		open: func(dev nic.Device) (nic.Port, error) {
			return fec.Open(dev, fec.Config{LinkTimeout: linkTimeout})
		}}
}

// variants is every family and variant the models offer.
var variants = []variant{
	igbVariant("82576", 0x10C9),
	igbVariant("i350", 0x1521),
	igbVariant("i210", 0x1533),
	igbVariant("i211", 0x1539),
	igbSerDes("i350-serdes", 0x1522),
	dwmacVariant("intel-ehl", dwmacsim.IntelMGbE, 0x4B30),
	dwmacVariant("intel-adls", dwmacsim.IntelMGbE, 0x7AAC),
	dwmacVariant("imx8mp", dwmacsim.IMX8MP, 0),
	fecVariant("imx8mp", fecsim.IMX8MP),
	fecVariant("imx6", fecsim.IMX6),
}

// each runs test on every variant with a fresh model, and fails it when the
// model logged a fault.
func each(t *testing.T, test func(t *testing.T, v variant, m model, dev nic.Device)) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m, dev, err := v.build()
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			test(t, v, m, dev)
			if err := m.Err(); err != nil {
				t.Errorf("model faults: %v", err)
			}
		})
	}
}

// openLinked opens the driver on dev and waits for the link. The caller
// closes the port (before each checks the model's fault log).
func openLinked(t *testing.T, v variant, dev nic.Device) nic.Port {
	t.Helper()
	p, err := v.open(dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLink(linkTimeout); err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p
}

// TestClosedPort: every call on a closed port is refused with nic.ErrClosed
// (or does nothing), and Close twice is fine (nictest.ClosedPort).
func TestClosedPort(t *testing.T) {
	each(t, func(t *testing.T, v variant, _ model, dev nic.Device) {
		nictest.ClosedPort(t, func() (nic.Port, error) { return v.open(dev) })
	})
}

// TestSendRefusesABufferItHolds: a buffer the TX ring already holds is
// refused, not sent twice (nictest.SendTwice).
func TestSendRefusesABufferItHolds(t *testing.T) {
	each(t, func(t *testing.T, v variant, _ model, dev nic.Device) {
		p, err := v.open(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		nictest.SendTwice(t, p)
	})
}

// TestFramesBothWays: frames of every size from the minimum to 1514 bytes
// arrive byte for byte in each direction, in order, and after the last
// reclaim every buffer is back in its pool.
func TestFramesBothWays(t *testing.T) {
	each(t, func(t *testing.T, v variant, m model, dev nic.Device) {
		portEnd, peer := sim.NewPair()
		m.Attach(portEnd)
		var rec sim.Recorder
		peer.SetReceiver(rec.Receive)
		p := openLinked(t, v, dev)
		defer p.Close()
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 96
		in := make([][]byte, n)
		for i := range in {
			in[i] = nictest.RandFrame(rng, p.MAC(), 60+rng.IntN(1514-60+1))
		}
		var got [][]byte
		for i := 0; i < n; i += 8 {
			for _, f := range in[i : i+8] {
				if err := peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			got = append(got, nictest.RecvFrames(t, p, 8, 10*time.Second)...)
		}
		for i := range in {
			if !bytes.Equal(got[i], in[i]) {
				t.Fatalf("RX frame %d: %d bytes, want %d, or other bytes", i, len(got[i]), len(in[i]))
			}
		}
		out := make([][]byte, n)
		for i := range out {
			out[i] = nictest.RandFrame(rng, net.HardwareAddr{2, 9, 9, 9, 9, 9}, 60+rng.IntN(1514-60+1))
		}
		send(t, p, out)
		deadline := time.Now().Add(10 * time.Second)
		for len(rec.Frames()) < n && time.Now().Before(deadline) {
			p.TxQueue(0).Reclaim()
			time.Sleep(100 * time.Microsecond)
		}
		sent := rec.Frames()
		if len(sent) != n {
			t.Fatalf("%d of %d frames on the wire", len(sent), n)
		}
		for i := range out {
			if !bytes.Equal(sent[i], out[i]) {
				t.Fatalf("TX frame %d: %d bytes on the wire, want %d, or other bytes", i, len(sent[i]), len(out[i]))
			}
		}
		pool := p.RxQueue(0).Pool()
		for deadline := time.Now().Add(5 * time.Second); pool.Stats().ByOwner[dma.OwnerTx] != 0; {
			if p.TxQueue(0).Reclaim() == 0 && time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		if s := pool.Stats(); s.ByOwner[dma.OwnerApp] != 0 || s.ByOwner[dma.OwnerTx] != 0 || s.BadPuts != 0 {
			t.Fatalf("buffers not back after the last reclaim: %+v", s)
		}
	})
}

// send transmits frames on queue 0 from the port's RX pool, a burst at a
// time, reclaiming as it goes.
func send(t *testing.T, p nic.Port, frames [][]byte) {
	t.Helper()
	pool, tx := p.RxQueue(0).Pool(), p.TxQueue(0)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < len(frames); {
		b := pool.Get()
		if b == nil {
			tx.Reclaim()
			if time.Now().After(deadline) {
				t.Fatalf("the pool stayed dry at frame %d", i)
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		b.Len = copy(b.Mem[b.Off:], frames[i])
		if tx.Send([]*dma.Buf{b}) == 1 {
			i++
			continue
		}
		b.Free()
		tx.Reclaim()
		if time.Now().After(deadline) {
			t.Fatalf("TX stuck at frame %d", i)
		}
	}
}

// TestNoGigabitHalfDuplex: no family's MAC runs 1000BASE-T half duplex
// (Linux's igb never advertises it, fec removes it from the PHY's modes,
// stmmac drops half duplex with several TX queues). The PHYs can (ESTATUS
// bit 12) and come out of reset advertising it (CTRL1000 bit 8); after Open
// the driver has withdrawn it, so the link is 1000 full; CheckLinkMode and
// WritePHY refuse 1000 half with nic.ErrLinkMode and leave the PHY's
// registers as they were; 1000 full and the 10/100 modes stay accepted.
func TestNoGigabitHalfDuplex(t *testing.T) {
	each(t, func(t *testing.T, v variant, m model, dev nic.Device) {
		if v.serdes {
			serdesOnlyGigabitFull(t, v, dev)
			return
		}
		phy := m.(interface{ PHY() *sim.PHY }).PHY()
		if c := phy.Read(sim.MIICTRL1000); c&sim.Ctrl1000HD == 0 {
			t.Fatalf("the model's PHY comes out of reset with CTRL1000 %#04x: the test wants it advertising 1000 half", c)
		}
		p := openLinked(t, v, dev)
		defer p.Close()
		if c := phy.Read(sim.MIICTRL1000); c&(sim.Ctrl1000HD|sim.Ctrl1000FD) != sim.Ctrl1000FD {
			t.Fatalf("CTRL1000 %#04x after Open: want 1000 full advertised and 1000 half not", c)
		}
		if e := phy.Read(sim.MIIESTATUS); e&(1<<12) == 0 {
			t.Fatalf("ESTATUS %#04x: the PHY should still say it can do 1000 half", e)
		}
		if l := p.Link(); l != (nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}) {
			t.Fatalf("link %+v, want 1000 full", l)
		}
		chk, ok := p.(nic.LinkModeChecker)
		if !ok {
			t.Fatalf("%T is not a nic.LinkModeChecker", p)
		}
		if err := chk.CheckLinkMode(1000, false); !errors.Is(err, nic.ErrLinkMode) || !strings.Contains(err.Error(), "1000BASE-T half duplex") {
			t.Errorf("CheckLinkMode(1000, half): %v, want a reason wrapping nic.ErrLinkMode", err)
		}
		for _, ok := range [][2]int{{1000, 1}, {100, 0}, {100, 1}, {10, 0}, {10, 1}} {
			if err := chk.CheckLinkMode(ok[0], ok[1] == 1); err != nil {
				t.Errorf("CheckLinkMode(%d, full=%v): %v", ok[0], ok[1] == 1, err)
			}
		}
		pa := p.(nic.PHYAccess)
		bmcr, c1000 := phy.Read(sim.MIIBMCR), phy.Read(sim.MIICTRL1000)
		for _, w := range []struct {
			reg int
			val uint16
		}{
			{sim.MIICTRL1000, sim.Ctrl1000FD | sim.Ctrl1000HD},
			{sim.MIICTRL1000, sim.Ctrl1000HD},
			{sim.MIIBMCR, sim.BMCRSpeed1000}, // autoneg off, 1000 Mb/s, half duplex
		} {
			if err := pa.WritePHY(w.reg, w.val); !errors.Is(err, nic.ErrLinkMode) {
				t.Errorf("WritePHY(%d, %#04x): %v, want nic.ErrLinkMode", w.reg, w.val, err)
			}
		}
		if b, c := phy.Read(sim.MIIBMCR), phy.Read(sim.MIICTRL1000); b != bmcr || c != c1000 {
			t.Errorf("after refused writes BMCR %#04x CTRL1000 %#04x, want %#04x %#04x unchanged", b, c, bmcr, c1000)
		}
		if err := pa.WritePHY(sim.MIICTRL1000, sim.Ctrl1000FD); err != nil {
			t.Errorf("WritePHY(CTRL1000, 1000 full only): %v", err)
		}
	})
}

// serdesOnlyGigabitFull is TestNoGigabitHalfDuplex on a SerDes port: the link
// is 1000BASE-X, 1000 full; CheckLinkMode refuses every other mode with
// nic.ErrLinkMode, and there is no PHY to write (nic.ErrNotSupported).
func serdesOnlyGigabitFull(t *testing.T, v variant, dev nic.Device) {
	p := openLinked(t, v, dev)
	defer p.Close()
	if l := p.Link(); l != (nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}) {
		t.Fatalf("link %+v, want 1000 full", l)
	}
	chk := p.(nic.LinkModeChecker)
	if err := chk.CheckLinkMode(1000, true); err != nil {
		t.Errorf("CheckLinkMode(1000, full): %v", err)
	}
	for _, bad := range [][2]int{{1000, 0}, {100, 0}, {100, 1}, {10, 0}, {10, 1}} {
		if err := chk.CheckLinkMode(bad[0], bad[1] == 1); !errors.Is(err, nic.ErrLinkMode) {
			t.Errorf("CheckLinkMode(%d, full=%v): %v, want nic.ErrLinkMode", bad[0], bad[1] == 1, err)
		}
	}
	if err := p.(nic.PHYAccess).WritePHY(sim.MIICTRL1000, sim.Ctrl1000FD); !errors.Is(err, nic.ErrNotSupported) {
		t.Errorf("WritePHY on a SerDes port: %v, want nic.ErrNotSupported", err)
	}
}
