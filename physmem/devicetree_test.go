package physmem

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dtFake writes a devicetree directory: props maps node path/property to its
// value (string: a NUL-terminated string list joined by "|"; uint32: a cell).
func dtFake(t *testing.T, props map[string]any) string {
	t.Helper()
	root := t.TempDir()
	for k, v := range props {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		switch v := v.(type) {
		case string:
			b = []byte(strings.ReplaceAll(v, "|", "\x00") + "\x00")
		case uint32:
			b = binary.BigEndian.AppendUint32(nil, v)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// imx6ulEVK is the part of imx6ul-14x14-evk.dtb the fec needs: both PHYs on
// ENET2's MDIO bus, ENET1's at address 2, ENET2's at 1.
func imx6ulEVK(t *testing.T) string {
	return dtFake(t, map[string]any{
		"soc/bus@2100000/ethernet@2188000/compatible":                        "fsl,imx6ul-fec|fsl,imx6q-fec",
		"soc/bus@2100000/ethernet@2188000/phy-handle":                        uint32(0x40),
		"soc/bus@2000000/ethernet@20b4000/compatible":                        "fsl,imx6ul-fec|fsl,imx6q-fec",
		"soc/bus@2000000/ethernet@20b4000/phy-handle":                        uint32(0x41),
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@2/reg":           uint32(2),
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@2/phandle":       uint32(0x40),
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@1/reg":           uint32(1),
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@1/phandle":       uint32(0x41),
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@1/compatible":    "ethernet-phy-id0022.1560",
		"soc/bus@30800000/ethernet@30be0000/compatible":                      "fsl,imx8mp-fec|fsl,imx8mq-fec",
		"soc/bus@30800000/ethernet@30be0000/phy-handle":                      uint32(0x50),
		"soc/bus@30800000/ethernet@30be0000/mdio/ethernet-phy@1/reg":         uint32(1),
		"soc/bus@30800000/ethernet@30be0000/mdio/ethernet-phy@1/phandle":     uint32(0x50),
		"soc/bus@30800000/ethernet@30bf0000/compatible":                      "nxp,imx8mp-dwmac-eqos|snps,dwmac-5.10a",
		"soc/bus@30800000/ethernet@30bf0000/phy-handle":                      uint32(0x99),
		"soc/bus@2000000/serial@2020000/compatible":                          "fsl,imx6ul-uart",
		"soc/bus@2000000/ethernet@20b4000/mdio/ethernet-phy@2/unrelated-dir": "x",
	})
}

func TestReadMACNode(t *testing.T) {
	root := imx6ulEVK(t)
	for _, c := range []struct {
		phys     uint64
		compat   string
		phy      int
		mdioPhys uint64
	}{
		{0x2188000, "fsl,imx6ul-fec", 2, 0x20b4000}, // ENET1: its PHY on ENET2's bus
		{0x20b4000, "fsl,imx6ul-fec", 1, 0x20b4000}, // ENET2: its own bus
		{0x30be0000, "fsl,imx8mp-fec", 1, 0x30be0000},
	} {
		n, err := ReadMACNode(root, c.phys)
		if err != nil {
			t.Fatalf("%#x: %v", c.phys, err)
		}
		if len(n.Compatible) != 2 || n.Compatible[0] != c.compat || n.PHYAddr != c.phy || n.MDIOPhys != c.mdioPhys {
			t.Errorf("%#x: %+v, want %s, PHY %d on the bus of %#x", c.phys, n, c.compat, c.phy, c.mdioPhys)
		}
	}
	// A dangling phy-handle is an error, not a guess.
	if _, err := ReadMACNode(root, 0x30bf0000); err == nil || !strings.Contains(err.Error(), "names no node") {
		t.Errorf("dangling phy-handle: %v", err)
	}
	// A node without phy-handle: no PHY address.
	if n, err := ReadMACNode(root, 0x2020000); err != nil || n.PHYAddr != -1 || n.MDIOPhys != 0 {
		t.Errorf("node without phy-handle: %+v, %v", n, err)
	}
	if _, err := ReadMACNode(root, 0x1234000); !errors.Is(err, ErrNoDTNode) {
		t.Errorf("no node: %v", err)
	}
	// Reached through a symbolic link, as /proc/device-tree is.
	link := filepath.Join(t.TempDir(), "device-tree")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if n, err := ReadMACNode(link, 0x2188000); err != nil || n.PHYAddr != 2 || n.MDIOPhys != 0x20b4000 {
		t.Errorf("through a symlink: %+v, %v", n, err)
	}
	if _, err := ReadMACNode(filepath.Join(root, "absent"), 0x2188000); err == nil {
		t.Error("a missing tree read without error")
	}
}
