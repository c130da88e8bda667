package preflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tree reads the kernel's files under Root, by Linux's own paths.
type tree struct{ root string }

func (t tree) path(p string) string { return filepath.Join(t.root, filepath.FromSlash(p)) }

// read returns a file's content without surrounding space.
func (t tree) read(p string) (string, error) {
	b, err := os.ReadFile(t.path(p))
	return strings.TrimSpace(string(b)), err
}

// link returns the last element of a symlink's target, "" when there is none.
func (t tree) link(p string) (string, error) {
	s, err := os.Readlink(t.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(s), nil
}

// dtBase is the directory of the flattened device tree: the kernel exports it
// at /sys/firmware/devicetree/base, and /proc/device-tree links there.
func (t tree) dtBase() string {
	for _, p := range []string{"sys/firmware/devicetree/base", "proc/device-tree"} {
		if fi, err := os.Stat(t.path(p)); err == nil && fi.IsDir() {
			return t.path(p)
		}
	}
	return ""
}

// strings reads a devicetree property of NUL-terminated strings.
func dtStrings(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		if len(s) > 0 {
			out = append(out, string(s))
		}
	}
	return out, nil
}

// dtCells reads a devicetree property of big-endian 32-bit cells.
func dtCells(file string) ([]uint32, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not whole 32-bit cells", file, len(b))
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return out, nil
}

// machine returns the root node's compatible strings.
func (t tree) machine() []string {
	base := t.dtBase()
	if base == "" {
		return nil
	}
	c, _ := dtStrings(filepath.Join(base, "compatible"))
	return c
}

// nodeDir resolves a platform device's of_node link to a directory, and its
// path in the devicetree ("/soc@0/bus@30800000/ethernet@30be0000").
func (t tree) nodeDir(dev string) (dir, dtPath string, err error) {
	dir, err = filepath.EvalSymlinks(t.path("sys/bus/platform/devices/" + dev + "/of_node"))
	if err != nil {
		return "", "", err
	}
	base := t.dtBase()
	if base != "" {
		if b, e := filepath.EvalSymlinks(base); e == nil {
			if rel, e := filepath.Rel(b, dir); e == nil && !strings.HasPrefix(rel, "..") {
				return dir, "/" + filepath.ToSlash(rel), nil
			}
		}
	}
	return dir, "", nil
}

// findPhandle finds the node whose phandle is ph: first under near (a
// MAC's PHY sits in its mdio child), then in the whole tree.
func (t tree) findPhandle(near string, ph uint32) string {
	var found string
	walk := func(top string) {
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || found != "" {
				return filepath.SkipDir
			}
			if d.IsDir() || d.Name() != "phandle" {
				return nil
			}
			if c, e := dtCells(p); e == nil && len(c) == 1 && c[0] == ph {
				found = filepath.Dir(p)
				return filepath.SkipAll
			}
			return nil
		})
	}
	if near != "" {
		walk(near)
	}
	if found == "" && t.dtBase() != "" {
		walk(t.dtBase())
	}
	return found
}

// iomemLine is one line of /proc/iomem.
type iomemLine struct {
	Lo, Hi uint64
	Name   string
	Depth  int // indentation: 0 for top-level resources
}

// iomem parses /proc/iomem. Without CAP_SYS_ADMIN the kernel prints zeros.
func (t tree) iomem() ([]iomemLine, error) {
	b, err := os.ReadFile(t.path("proc/iomem"))
	if err != nil {
		return nil, err
	}
	return parseIOMem(b), nil
}

// parseIOMem parses /proc/iomem's text ("lo-hi : name", two spaces of
// indentation per level; kernel/resource.c r_show), skipping what is not such
// a line.
func parseIOMem(b []byte) []iomemLine {
	var out []iomemLine
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		rng, name, ok := strings.Cut(strings.TrimSpace(trimmed), " : ")
		if !ok {
			continue
		}
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		a, e1 := strconv.ParseUint(lo, 16, 64)
		z, e2 := strconv.ParseUint(hi, 16, 64)
		if e1 != nil || e2 != nil {
			continue
		}
		if z < a {
			continue
		}
		out = append(out, iomemLine{Lo: a, Hi: z, Name: name, Depth: (len(line) - len(trimmed)) / 2})
	}
	return out
}

// kernelConfig returns the value of CONFIG_name ("y", "m", "" when unset) from
// /boot/config-RELEASE, and whether the configuration was found.
func (t tree) kernelConfig(name string) (string, bool) {
	rel, err := t.read("proc/sys/kernel/osrelease")
	if err != nil || rel == "" {
		return "", false
	}
	b, err := os.ReadFile(t.path("boot/config-" + rel))
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CONFIG_"+name+"="); ok {
			return v, true
		}
	}
	return "", true
}

// boardDTB finds the board's DTB where Debian's flash-kernel installs it
// (/boot/dtbs/RELEASE/VENDOR/BOARD.dtb, /boot/dtb-RELEASE), named after the
// board part of the root node's first compatible ("fsl,imx8mp-evk":
// imx8mp-evk.dtb, as Linux names the EVK's). The path as seen from Root is
// returned with Root stripped; "" when none is there.
func (t tree) boardDTB() string {
	m := t.machine()
	rel, err := t.read("proc/sys/kernel/osrelease")
	if len(m) == 0 || err != nil || rel == "" {
		return ""
	}
	_, board, ok := strings.Cut(m[0], ",")
	if !ok || board == "" || strings.ContainsAny(board, "/*?[") {
		return ""
	}
	patterns := []string{"boot/dtbs/" + rel + "/*/" + board + ".dtb", "boot/dtbs/" + rel + "/" + board + ".dtb", "boot/dtb-" + rel}
	for _, pat := range patterns {
		if found, _ := filepath.Glob(t.path(pat)); len(found) > 0 {
			rel, err := filepath.Rel(t.root, found[0])
			if err == nil {
				return "/" + filepath.ToSlash(rel)
			}
		}
	}
	return ""
}
