package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xnic-dev/xnic/vfio"
)

// Commands that find PCI network devices and hand them to vfio-pci and back:
// list, bind, unbind. They only read and write sysfs; none opens a device.

func init() {
	register(&command{name: "list", usage: "[--json]",
		summary: "list PCI network controllers: driver, IOMMU group, NUMA node, xnic driver", run: runList})
	register(&command{name: "bind", usage: "BDF [--state-dir DIR]",
		summary: "hand a device to vfio-pci for xnic, remembering its driver", run: runBind})
	register(&command{name: "unbind", usage: "BDF [--state-dir DIR]",
		summary: "give a device bound with `xnic bind` back to its previous driver", run: runUnbind})
}

// devSysfsWrite is how these commands write sysfs attributes: nil for the real
// thing; tests put a fake kernel here.
var devSysfsWrite func(path string, data []byte) error

// devOptions are the flags list, bind and unbind share.
type devOptions struct {
	root     string // --sysfs (hidden; for tests)
	stateDir string // --state-dir
	json     bool   // --json (list only)
}

func (o devOptions) sysfs() vfio.Sysfs {
	return vfio.Sysfs{Root: o.root, StateDir: o.stateDir, Write: devSysfsWrite}
}

// devFlags parses args for one of these commands and returns the positionals.
// -h prints the usage (without the hidden flags) and returns flag.ErrHelp.
func devFlags(name, usage string, args []string, stderr io.Writer, o *devOptions) ([]string, error) {
	fs := newFlags(name, stderr)
	fs.StringVar(&o.root, "sysfs", vfio.Default.Root, "sysfs root (for tests)")
	fs.StringVar(&o.stateDir, "state-dir", vfio.Default.StateDir, "where bind records each device's previous driver")
	if name == "list" {
		fs.BoolVar(&o.json, "json", false, "print JSON")
	}
	hidden := map[string]bool{"sysfs": true}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: xnic %s %s\n", name, usage)
		fs.VisitAll(func(f *flag.Flag) {
			if !hidden[f.Name] {
				fmt.Fprintf(stderr, "  --%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
			}
		})
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.Usage()
			return nil, flag.ErrHelp
		}
	}
	return parseInterspersed(fs, args)
}

// oneAddr checks that pos holds exactly one well-formed PCI address.
func oneAddr(pos []string) (string, error) {
	if len(pos) != 1 {
		return "", usageErrorf("want one PCI address (such as 0000:03:00.0), got %d arguments", len(pos))
	}
	a, err := vfio.ParseAddr(pos[0])
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	return a.String(), nil
}

// listEntry is one row of `xnic list --json`.
type listEntry struct {
	Address    string `json:"address"`
	Vendor     string `json:"vendor"` // "0x8086"
	Device     string `json:"device"`
	SubVendor  string `json:"subsystem_vendor"`
	SubDevice  string `json:"subsystem_device"`
	Class      string `json:"class"` // "0x020000"
	Driver     string `json:"driver"`
	IOMMUGroup *int   `json:"iommu_group"` // null without an IOMMU
	NUMANode   int    `json:"numa_node"`   // -1 when unknown
	Xnic       string `json:"xnic"`        // driver family, "" when unsupported
}

func runList(args []string, stdout, stderr io.Writer) error {
	var o devOptions
	pos, err := devFlags("list", "[--json]", args, stderr, &o)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("list takes no arguments, got %q", strings.Join(pos, " "))
	}
	ds, err := o.sysfs().ListNetDevices()
	if err != nil {
		return err
	}
	entries := make([]listEntry, 0, len(ds))
	for _, d := range ds {
		e := listEntry{
			Address: d.Addr, Vendor: fmt.Sprintf("0x%04x", d.Vendor), Device: fmt.Sprintf("0x%04x", d.Device),
			SubVendor: fmt.Sprintf("0x%04x", d.SubVendor), SubDevice: fmt.Sprintf("0x%04x", d.SubDevice),
			Class: fmt.Sprintf("0x%06x", d.Class), Driver: d.Driver, NUMANode: d.NUMANode,
		}
		if d.IOMMUGroup >= 0 {
			g := d.IOMMUGroup
			e.IOMMUGroup = &g
		}
		if f, ok := supported(d.Vendor, d.Device); ok {
			e.Xnic = string(f)
		}
		entries = append(entries, e)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	if len(entries) == 0 {
		fmt.Fprintf(stderr, "no PCI network controllers under %s\n", filepath.Join(o.root, "bus", "pci", "devices"))
		return nil
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BDF\tVENDOR:DEVICE\tDRIVER\tIOMMU\tNUMA\tXNIC")
	for _, e := range entries {
		grp, numa := "-", "-"
		if e.IOMMUGroup != nil {
			grp = strconv.Itoa(*e.IOMMUGroup)
		}
		if e.NUMANode >= 0 {
			numa = strconv.Itoa(e.NUMANode)
		}
		fmt.Fprintf(tw, "%s\t%s:%s\t%s\t%s\t%s\t%s\n", e.Address, e.Vendor[2:], e.Device[2:], dash(e.Driver), grp, numa, dash(e.Xnic))
	}
	return tw.Flush()
}

func runBind(args []string, stdout, stderr io.Writer) error {
	var o devOptions
	pos, err := devFlags("bind", "BDF [--state-dir DIR]", args, stderr, &o)
	if err != nil {
		return err
	}
	bdf, err := oneAddr(pos)
	if err != nil {
		return err
	}
	s := o.sysfs()
	prev, err := s.Bind(bdf)
	if err != nil {
		return err
	}
	switch prev {
	case "vfio-pci":
		fmt.Fprintf(stdout, "%s: already bound to vfio-pci\n", bdf)
	case "":
		fmt.Fprintf(stdout, "%s: bound to vfio-pci (it had no driver); `xnic unbind %s` releases it\n", bdf, bdf)
	default:
		fmt.Fprintf(stdout, "%s: bound to vfio-pci (was %s); `xnic unbind %s` gives it back\n", bdf, prev, bdf)
	}
	// Warn about what would still keep VFIO from opening it.
	if d, err := s.Device(bdf); err == nil {
		if _, ok := supported(d.Vendor, d.Device); !ok {
			fmt.Fprintf(stderr, "note: xnic has no driver for %04x:%04x\n", d.Vendor, d.Device)
		}
		if ms, err := s.GroupMembers(d.IOMMUGroup); err == nil {
			for _, m := range ms {
				if m.Addr != bdf && !m.Harmless() {
					fmt.Fprintf(stderr, "warning: IOMMU group %d also holds %s (bound to %s): bind it too (`xnic bind %s`) or unbind it, or VFIO will refuse the group\n",
						d.IOMMUGroup, m.Addr, m.Driver, m.Addr)
				}
			}
		}
	}
	return nil
}

func runUnbind(args []string, stdout, stderr io.Writer) error {
	var o devOptions
	pos, err := devFlags("unbind", "BDF [--state-dir DIR]", args, stderr, &o)
	if err != nil {
		return err
	}
	bdf, err := oneAddr(pos)
	if err != nil {
		return err
	}
	now, err := o.sysfs().Unbind(bdf)
	if err != nil {
		if errors.Is(err, vfio.ErrNotBound) {
			return fmt.Errorf("%w (only devices bound to vfio-pci can be unbound)", err)
		}
		return err
	}
	if now == "" {
		fmt.Fprintf(stdout, "%s: released from vfio-pci; no driver bound\n", bdf)
	} else {
		fmt.Fprintf(stdout, "%s: bound to %s\n", bdf, now)
	}
	return nil
}
