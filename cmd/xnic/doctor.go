package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/xnic-dev/xnic/preflight"
	"github.com/xnic-dev/xnic/vfio"
)

func init() {
	register(&command{name: "doctor", usage: "BDF | --platform NAME@ADDR | NAME@ADDR [--json]",
		summary: "check, without touching a register, that xnic may take the port: each check PASS, FAIL with the fix, or UNKNOWN with why (exit 1 on a FAIL)",
		run:     runDoctor})
}

// runDoctor prints package preflight's report for a PCI function or a
// platform MAC. It reads files only.
func runDoctor(args []string, stdout, stderr io.Writer) error {
	var o devOptions
	var platform string
	var asJSON bool
	fs := newFlags("doctor", stderr)
	fs.StringVar(&platform, "platform", "", "a platform MAC: "+platformExamples()+" or COMPATIBLE@ADDR")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&o.root, "sysfs", vfio.Default.Root, "sysfs root of PCI devices (for tests)")
	fs.StringVar(&o.stateDir, "state-dir", vfio.Default.StateDir, "where bind records each device's previous driver")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && platform == "" && strings.Contains(pos[0], "@"):
		platform = pos[0]
	case len(pos) > 1, len(pos) == 1 && platform != "", len(pos) == 0 && platform == "":
		return usageErrorf("name one port: a PCI address or a platform MAC")
	}
	var r *preflight.Report
	if platform != "" {
		spec, err := parsePlatform(platform)
		if err != nil {
			return err
		}
		r = platformPreflight(spec).Inspect()
	} else {
		r = preflight.PCI{Sysfs: o.sysfs(), Addr: pos[0], Driver: func(v, d uint16) (string, bool) {
			f, ok := supported(v, d)
			return string(f), ok
		}}.Inspect()
	}
	if asJSON {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if f := r.Failed(); len(f) > 0 {
		return fmt.Errorf("%s: %d check(s) failed", r.Port, len(f))
	}
	return nil
}
