package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// carries checks that a frame from the wire reaches RX queue 0 and one sent
// on TX queue 0 reaches the wire: the MAC runs at the PHY's speed and duplex
// (dwmacsim drops frames on a mismatch, fecsim refuses to send).
func carries(t *testing.T, op *openedPort) {
	t.Helper()
	var wire atomic.Int32
	op.Sim.Peer.SetReceiver(func([]byte) { wire.Add(1) })
	defer op.Sim.Peer.SetReceiver(nil)
	f := selftestFrame(op.MAC(), 64, 99)
	if err := op.Sim.Peer.Send(f); err != nil {
		t.Fatal(err)
	}
	bufs := make([]*dma.Buf, 4)
	got := 0
	for deadline := time.Now().Add(2 * time.Second); got == 0 && time.Now().Before(deadline); {
		got = op.RxQueue(0).Recv(bufs)
		time.Sleep(time.Millisecond)
	}
	if got != 1 || !bytes.Equal(bufs[0].Data(), f) {
		t.Fatalf("a frame from the wire: %d received", got)
	}
	if op.TxQueue(0).Send(bufs[:1]) != 1 {
		t.Fatal("TX refused the frame")
	}
	for deadline := time.Now().Add(2 * time.Second); wire.Load() == 0 && time.Now().Before(deadline); {
		op.TxQueue(0).Reclaim()
		time.Sleep(time.Millisecond)
	}
	op.TxQueue(0).Reclaim()
	if wire.Load() != 1 {
		t.Fatalf("a frame sent: %d on the wire", wire.Load())
	}
}

// TestLinkSettingsReachModel: on every model, advertising 100 Mb/s full
// duplex only renegotiates to 100 full and forcing 10 Mb/s half duplex
// forces it (both seen in the model's PHY and through the driver), the
// registers hold what ethtool -s semantics ask, and frames still pass both
// ways afterwards: the MAC followed the PHY.
func TestLinkSettingsReachModel(t *testing.T) {
	for _, v := range simVariants {
		t.Run(v, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: v})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			phy := modelPHY(t, op)
			set := func(words ...string) linkSettings {
				t.Helper()
				req, err := parseLinkWords(words)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := linkExec(op, req, 3*time.Second)
				if err != nil {
					t.Fatalf("%q: %v", words, err)
				}
				return ls
			}
			ls := set()
			if len(ls.Supported) != 5 || len(ls.Advertised) != 5 || !ls.Autoneg || ls.Link.SpeedMbps != 1000 ||
				slices.Contains(ls.Supported, "1000baseT/Half") || slices.Contains(ls.Advertised, "1000baseT/Half") {
				t.Fatalf("initial %+v", ls)
			}
			// 1000 half: the driver refuses it (nic.ErrLinkMode) before
			// any register is written.
			anar, c1000 := phy.Read(sim.MIIANAR), phy.Read(sim.MIICTRL1000)
			for _, words := range [][]string{{"speed", "1000", "duplex", "half"}, {"advertise", "1000baseT/Half"}, {"advertise", "0x3f"}} {
				req, err := parseLinkWords(words)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := linkExec(op, req, time.Second); !errors.Is(err, nic.ErrLinkMode) || !strings.Contains(err.Error(), "1000BASE-T half duplex") {
					t.Fatalf("%q: %v, want the driver's refusal", words, err)
				}
				if phy.Read(sim.MIIANAR) != anar || phy.Read(sim.MIICTRL1000) != c1000 {
					t.Fatalf("%q changed the PHY's advertisement", words)
				}
			}

			ls = set("speed", "100", "duplex", "full")
			want := nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}
			if phy.Link() != want || op.Link() != want || strings.Join(ls.Advertised, ",") != "100baseT/Full" {
				t.Fatalf("advertise 100 full: model %+v driver %+v settings %+v", phy.Link(), op.Link(), ls)
			}
			if a, c := phy.Read(sim.MIIANAR)&0x1E0, phy.Read(sim.MIICTRL1000)&0x300; a != sim.AN100FD || c != 0 {
				t.Fatalf("ADVERTISE %#x CTRL1000 %#x", a, c)
			}
			carries(t, op)

			ls = set("autoneg", "off", "speed", "10", "duplex", "half")
			want = nic.LinkState{Up: true, SpeedMbps: 10}
			if phy.Link() != want || op.Link() != want || ls.Autoneg || ls.Forced != "10/half" {
				t.Fatalf("forced 10 half: model %+v driver %+v settings %+v", phy.Link(), op.Link(), ls)
			}
			if phy.Read(sim.MIIBMCR)&(sim.BMCRANEnable|sim.BMCRSpeed100|sim.BMCRSpeed1000|sim.BMCRFullDplx) != 0 {
				t.Fatalf("BMCR %#x", phy.Read(sim.MIIBMCR))
			}
			carries(t, op)

			ls = set("autoneg", "on", "advertise", "0x20")
			want = nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}
			if phy.Link() != want || strings.Join(ls.Advertised, ",") != "1000baseT/Full" {
				t.Fatalf("back to 1000 full: %+v %+v", phy.Link(), ls)
			}
			carries(t, op)
			if err := op.Close(); err != nil {
				t.Fatalf("model faults: %v", err)
			}
		})
	}
}

func TestLinkCommand(t *testing.T) {
	var ls linkSettings
	cliJSON(t, &ls, "link", "--sim", "fec:imx6", "speed", "100", "--json")
	if ls.Link.SpeedMbps != 100 || !ls.Link.FullDuplex || strings.Join(ls.Advertised, ",") != "100baseT/Half,100baseT/Full" {
		t.Fatalf("%+v", ls)
	}
	rc, out, _ := runPort(t, "link", "--sim", "igb")
	if rc != 0 || !strings.Contains(out, "link:        up 1000 Mb/s full duplex") {
		t.Fatalf("rc %d\n%s", rc, out)
	}
	for _, bad := range [][]string{
		{"link", "--sim", "igb", "speed"},
		{"link", "--sim", "igb", "speed", "33"},
		{"link", "--sim", "igb", "duplex", "x"},
		{"link", "--sim", "igb", "autoneg", "maybe"},
		{"link", "--sim", "igb", "advertise", "0x40"},
		{"link", "--sim", "igb", "advertise", "10baseT/Quarter"},
		{"link", "--sim", "igb", "mtu", "9000"},
		{"link", "--sim", "igb", "autoneg", "off", "speed", "1000"},
	} {
		if rc, _, _ := runPort(t, bad...); rc != 2 {
			t.Errorf("%q: rc %d, want 2", bad, rc)
		}
	}
	var modes []linkMode
	modes, err := parseModes("100baseT/Full,1000baseT/Full")
	if err != nil || len(modes) != 2 || modes[0].Ethtool != 0x08 || modes[1].Ethtool != 0x20 {
		t.Fatalf("%+v %v", modes, err)
	}
	b, _ := json.Marshal(ls)
	if !bytes.Contains(b, []byte(`"autoneg":true`)) {
		t.Fatalf("%s", b)
	}
}

// TestLinkMACModes: no family offers 1000BASE-T half duplex, and asking to
// advertise it fails with the driver's reason (nic.LinkModeChecker: Linux's
// igb and fec never support it, stmmac drops half duplex with several TX
// queues).
func TestLinkMACModes(t *testing.T) {
	for _, fam := range []string{"igb", "fec", "dwmac"} {
		var ls linkSettings
		cliJSON(t, &ls, "link", "--sim", fam, "--json")
		if slices.Contains(ls.Supported, "1000baseT/Half") || !slices.Contains(ls.Supported, "1000baseT/Full") {
			t.Errorf("%s supports %v", fam, ls.Supported)
		}
		rc, _, errs := runPort(t, "link", "--sim", fam, "advertise", "1000baseT/Half")
		if rc != 1 || !strings.Contains(errs, "1000BASE-T half duplex") {
			t.Errorf("%s: advertise 1000baseT/Half: rc %d %s", fam, rc, errs)
		}
	}
}

// TestLinkOnSerDes: on a SerDes port xnic link shows the PCS's link
// (1000BASE-X, fibre) instead of failing on the absent PHY, and refuses every
// other speed, half duplex, a change of the PCS's autonegotiation and a
// copper advertisement with the reason, after which frames still pass.
func TestLinkOnSerDes(t *testing.T) {
	for _, v := range []string{"igb:82576-serdes", "igb:i350-serdes", "igb:i210-serdes"} {
		t.Run(v, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: v})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			ls, err := linkExec(op, linkRequest{}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if ls.Media != "fibre" || strings.Join(ls.Supported, ",") != "1000baseX/Full" || !ls.Link.Up || ls.Link.SpeedMbps != 1000 || !ls.Link.FullDuplex {
				t.Fatalf("settings %+v", ls)
			}
			if ls.Autoneg != (len(ls.Advertised) == 1) || !ls.Autoneg && ls.Forced != "1000/full" {
				t.Fatalf("autoneg %v with advertised %v forced %q", ls.Autoneg, ls.Advertised, ls.Forced)
			}
			flip := "off"
			if !ls.Autoneg {
				flip = "on"
			}
			for _, c := range []struct {
				words []string
				want  error
			}{
				{[]string{"speed", "100"}, nic.ErrLinkMode},
				{[]string{"duplex", "half"}, nic.ErrLinkMode},
				{[]string{"advertise", "100baseT/Full"}, nic.ErrLinkMode},
				{[]string{"autoneg", flip}, nic.ErrNotSupported},
			} {
				req, err := parseLinkWords(c.words)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := linkExec(op, req, time.Second); !errors.Is(err, c.want) {
					t.Fatalf("%q: %v, want %v", c.words, err, c.want)
				}
			}
			req, _ := parseLinkWords([]string{"speed", "1000", "duplex", "full"})
			if _, err := linkExec(op, req, time.Second); err != nil {
				t.Fatalf("speed 1000 duplex full: %v", err)
			}
			carries(t, op)
		})
	}
}
