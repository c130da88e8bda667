package physmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The devicetree of a MAC, as the kernel exports it (/proc/device-tree, a
// link to /sys/firmware/devicetree/base): one directory per node, one file
// per property, values as the DTB holds them (cells big-endian, strings
// NUL-terminated). The Ethernet binding (Documentation/devicetree/bindings/
// net/ethernet-controller.yaml) puts the PHY in phy-handle, a phandle of a
// node whose reg is its MDIO address; that PHY node sits under an mdio node
// whose parent is the MAC that drives the bus. On the i.MX6UL EVK both PHYs
// hang off ENET2's bus (imx6ul-14x14-evk.dtsi: &fec2 { mdio { ethphy0:
// ethernet-phy@2, ethphy1: ethernet-phy@1 } }), so ENET1 reaches its PHY at
// address 2 through ENET2's MMFR.

// DefaultDTRoot is where Linux exports the devicetree it booted with.
const DefaultDTRoot = "/proc/device-tree"

// ErrNoDTNode is returned by ReadMACNode when no node has the address.
var ErrNoDTNode = errors.New("physmem: no devicetree node at this address")

// MACNode is what xnic needs from a MAC's devicetree node.
type MACNode struct {
	Path       string   // the node's directory
	Compatible []string // its compatible list, most specific first
	// PHYAddr is the MDIO address of the node's phy-handle target; -1 when
	// the node has no phy-handle (fixed link, or a bus without a PHY).
	PHYAddr int
	// MDIOPhys is the register address of the MAC whose mdio node holds that
	// PHY: Phys of the node itself when it drives its own bus, 0 when unknown.
	MDIOPhys uint64
	Phys     uint64 // the node's first reg address
}

// ReadMACNode finds the node whose unit address (the part of its name after
// '@', hexadecimal) is phys under root (DefaultDTRoot when ""), and reads its
// compatible list, PHY address and MDIO bus owner. The unit address is the
// bus address, which the i.MX buses map one to one (ranges with no
// translation), as xnic's register windows assume.
func ReadMACNode(root string, phys uint64) (MACNode, error) {
	if root == "" {
		root = DefaultDTRoot
	}
	// /proc/device-tree is a symbolic link, which WalkDir would not enter.
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return MACNode{}, fmt.Errorf("physmem: devicetree: %w", err)
	}
	var nodePath string
	phandles := map[uint32]string{}
	unit := "@" + strconv.FormatUint(phys, 16)
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil //nolint:nilerr // unreadable corners of the tree do not stop the walk
		}
		if nodePath == "" && strings.HasSuffix(d.Name(), unit) {
			if _, err := os.Stat(filepath.Join(p, "compatible")); err == nil {
				nodePath = p
			}
		}
		if h, ok := readCell(filepath.Join(p, "phandle")); ok {
			phandles[h] = p
		}
		return nil
	})
	if err != nil {
		return MACNode{}, fmt.Errorf("physmem: walking the devicetree at %s: %w", root, err)
	}
	if nodePath == "" {
		return MACNode{}, fmt.Errorf("%w: %#x (no node named *%s with a compatible under %s)", ErrNoDTNode, phys, unit, root)
	}
	n := MACNode{Path: nodePath, Phys: phys, PHYAddr: -1}
	if b, err := os.ReadFile(filepath.Join(nodePath, "compatible")); err == nil {
		for _, c := range strings.Split(string(b), "\x00") {
			if c != "" {
				n.Compatible = append(n.Compatible, c)
			}
		}
	}
	h, ok := readCell(filepath.Join(nodePath, "phy-handle"))
	if !ok {
		return n, nil
	}
	phy, ok := phandles[h]
	if !ok {
		return n, fmt.Errorf("physmem: %s: phy-handle %#x names no node", nodePath, h)
	}
	addr, ok := readCell(filepath.Join(phy, "reg"))
	if !ok || addr > 31 {
		return n, fmt.Errorf("physmem: %s: the PHY node %s has no MDIO address in reg (want 0-31)", nodePath, phy)
	}
	n.PHYAddr = int(addr)
	// PHY -> mdio node -> the MAC that drives the bus.
	owner := filepath.Dir(filepath.Dir(phy))
	if _, at, ok := strings.Cut(filepath.Base(owner), "@"); ok {
		if a, err := strconv.ParseUint(at, 16, 64); err == nil {
			n.MDIOPhys = a
		}
	}
	return n, nil
}

// readCell reads a property holding one 32-bit cell (or the first of several).
func readCell(path string) (uint32, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}
