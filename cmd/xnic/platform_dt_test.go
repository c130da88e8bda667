package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeIMX6ULTree writes the fec part of imx6ul-14x14-evk.dtb: both PHYs on
// ENET2's MDIO bus, ENET1's at address 2.
func fakeIMX6ULTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(path string, b []byte) {
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cell := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	compat := []byte("fsl,imx6ul-fec\x00fsl,imx6q-fec\x00")
	write("soc/bus@2100000/ethernet@2188000/compatible", compat)
	write("soc/bus@2100000/ethernet@2188000/phy-handle", cell(7))
	write("soc/bus@2000000/ethernet@20b4000/compatible", compat)
	write("soc/bus@2000000/ethernet@20b4000/phy-handle", cell(8))
	write("soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@2/reg", cell(2))
	write("soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@2/phandle", cell(7))
	write("soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@1/reg", cell(1))
	write("soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@1/phandle", cell(8))
	return root
}

// TestParsePlatformDevicetree: fec@ADDR takes the variant, PHY address and
// MDIO bus owner from the MAC's devicetree node; options override them; with
// no devicetree, fec stays the i.MX8M Plus and the PHY the driver's default.
func TestParsePlatformDevicetree(t *testing.T) {
	old := platformDTRoot
	t.Cleanup(func() { platformDTRoot = old })
	platformDTRoot = fakeIMX6ULTree(t)
	for _, c := range []struct {
		in     string
		compat string
		phy    int
		mdio   uint64
		uphys  uint64
	}{
		{"fec@0x2188000", "fsl,imx6ul-fec", 2, 0x20b4000, 0},
		{"fec@0x20b4000", "fsl,imx6ul-fec", 1, 0, 0},
		{"fec@0x2188000,phy=3,mdio=0x2188000", "fsl,imx6ul-fec", 3, 0x2188000, 0},
		{"fsl,imx6q-fec@0x2188000,uncached=0x9c000000+0x400000", "fsl,imx6q-fec", 2, 0x20b4000, 0x9c000000},
		{"fec@0x30be0000", "fsl,imx8mp-fec", -1, 0, 0}, // no node there
	} {
		s, err := parsePlatform(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if s.Compatible != c.compat || s.PHYAddr != c.phy || s.MDIOPhys != c.mdio || s.UncachedPhys != c.uphys {
			t.Errorf("%s: %+v, want %s, PHY %d, MDIO %#x, uncached %#x", c.in, s, c.compat, c.phy, c.mdio, c.uphys)
		}
	}
	for _, bad := range []string{"fec@0x2188000,phy=32", "fec@0x2188000,mdio=0x3", "fec@0x2188000,speed=100", "fec@0x2188000,uncached=0x1"} {
		if _, err := parsePlatform(bad); err == nil || !strings.Contains(err.Error(), "--platform") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	platformDTRoot = filepath.Join(t.TempDir(), "none")
	s, err := parsePlatform("fec@0x2188000")
	if err != nil || s.Compatible != "fsl,imx8mp-fec" || s.PHYAddr != -1 || s.MDIOPhys != 0 {
		t.Fatalf("no devicetree: %+v, %v", s, err)
	}
}
