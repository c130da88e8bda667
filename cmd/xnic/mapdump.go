package main

import (
	"io"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane/mapio"
)

// xnic prog map dump / update: a running program's maps through the run's
// control socket, printed as `bpftool map dump` prints them (hex bytes of key
// and value, one "value (CPU NN)" line per slot of a per-CPU map), and one
// entry updated as `bpftool map update` takes it.

func init() {
	register(&command{name: "prog map dump", usage: "--control PORT [NAME] [--json]",
		summary: "dump the maps (or one map) of the program a running `xnic run` runs, bpftool style", run: runMapDump})
	register(&command{name: "prog map update", usage: "--control PORT NAME key [hex] BYTES... value [hex] BYTES...",
		summary: "set one entry of a running program's map (bytes as bpftool takes them)", run: runMapUpdate})
}

func runMapDump(args []string, stdout, stderr io.Writer) error {
	var ctl string
	var asJSON bool
	fs := newFlags("prog map dump", stderr)
	controlFlag(fs, &ctl)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErrorf("one map name at most, got %q", pos)
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program's maps to dump")
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	req := control.Request{Cmd: control.CmdMaps}
	if len(pos) == 1 {
		req.Map = pos[0]
	}
	resp, err := control.Call(path, req)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, resp.Maps)
	}
	mapio.WriteText(stdout, resp.Maps)
	return nil
}

func runMapUpdate(args []string, stdout, stderr io.Writer) error {
	var ctl string
	fs := newFlags("prog map update", stderr)
	controlFlag(fs, &ctl)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program's map to update")
	}
	if len(pos) < 5 || pos[1] != "key" {
		return usageErrorf("want NAME key BYTES... value BYTES...")
	}
	key, rest, err := mapio.ParseBytes(pos[2:], "value")
	if err != nil {
		return usageErrorf("key: %v", err)
	}
	if len(rest) == 0 {
		return usageErrorf("no value: want NAME key BYTES... value BYTES...")
	}
	val, rest, err := mapio.ParseBytes(rest[1:], "")
	if err != nil {
		return usageErrorf("value: %v", err)
	}
	if len(rest) != 0 {
		return usageErrorf("unexpected %q after the value", rest)
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	_, err = control.Call(path, control.Request{Cmd: control.CmdMapUpdate, Map: pos[0], Key: key, Value: val})
	return err
}
