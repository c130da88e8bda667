package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/control"
)

// xnic prog load and prog show: the program of a running port, replaced
// (like `ip link set dev X xdp obj new.o`, xdp-loader load, or
// bpf_link_update) and shown (bpftool prog show, xdp-loader status). See
// runprog.go for what a replacement keeps.

func init() {
	register(&command{name: "prog load", usage: "--control PORT OBJ [--prog NAME] [--json] (or PORT OBJ)",
		summary: "replace the program of a running port between two bursts, keeping its maps by name", run: runProgLoad})
	register(&command{name: "prog show", usage: "--control PORT [--run-time D] [--json] (or PORT)",
		summary: "show a running port's program: id, name, tag, engine, load time, run count (run time with --run-time)", run: runProgShow})
}

func runProgLoad(args []string, stdout, stderr io.Writer) error {
	var ctl, sec string
	var asJSON bool
	fs := newFlags("prog load", stderr)
	controlFlag(fs, &ctl)
	fs.StringVar(&sec, "prog", "", "the program by section or function name (default: the object's XDP program)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 2 && ctl == "" { // xdp-loader's order: PORT OBJ
		ctl, pos = pos[0], pos[1:]
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program to replace")
	}
	obj, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	resp, err := control.Call(path, control.Request{Cmd: control.CmdProgLoad, Load: &control.LoadRequest{Object: obj, Name: pos[0], Program: sec}})
	if resp.Prog == nil {
		return err
	}
	if asJSON {
		if jerr := writeJSON(stdout, struct {
			Port string            `json:"port"`
			Prog *control.ProgInfo `json:"prog"`
			Kept []string          `json:"kept_maps"`
		}{resp.Port, resp.Prog, resp.Kept}); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Fprintf(stdout, "%s: now running %s (id %d, tag %s) from %s\n", resp.Port, resp.Prog.Name, resp.Prog.ID, resp.Prog.Tag, resp.Prog.Object)
	if len(resp.Kept) > 0 {
		fmt.Fprintf(stdout, "%s: kept maps: %s\n", resp.Port, strings.Join(resp.Kept, ", "))
	}
	return err
}

func runProgShow(args []string, stdout, stderr io.Writer) error {
	var ctl string
	var asJSON bool
	var runTime time.Duration
	fs := newFlags("prog show", stderr)
	controlFlag(fs, &ctl)
	fs.DurationVar(&runTime, "run-time", 0, "also measure the time in the program over this long (bpftool's run_time_ns; 0 to 1m)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && ctl == "" { // xdp-loader status PORT
		ctl, pos = pos[0], nil
	}
	if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	if runTime < 0 || runTime > time.Minute {
		return usageErrorf("--run-time %v: want 0 to 1m", runTime)
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program to show")
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	resp, err := control.Call(path, control.Request{Cmd: control.CmdProgShow, RunTime: runTime})
	if err != nil {
		return err
	}
	p := resp.Prog
	if asJSON {
		return writeJSON(stdout, struct {
			Port string            `json:"port"`
			Prog *control.ProgInfo `json:"prog"`
		}{resp.Port, p})
	}
	fmt.Fprintf(stdout, "%d: %s  name %s  tag %s\n", p.ID, p.Type, p.Name, p.Tag)
	fmt.Fprintf(stdout, "\tport %s  object %s  engine %s  loaded_at %s  loads %d\n", resp.Port, p.Object, p.Engine, p.LoadedAt, p.Loads)
	fmt.Fprintf(stdout, "\txlated %d insns  run_cnt %d", p.Insns, p.RunCnt)
	if p.RunTimeFor != "" {
		avg := 0.0
		if p.RunTimeCnt > 0 {
			avg = float64(p.RunTimeNanos) / float64(p.RunTimeCnt)
		}
		fmt.Fprintf(stdout, "  run_time_ns %d over %s (%d runs, %.1f ns each)", p.RunTimeNanos, p.RunTimeFor, p.RunTimeCnt, avg)
	}
	fmt.Fprintln(stdout)
	if len(p.Maps) > 0 {
		fmt.Fprintf(stdout, "\tmaps %s\n", strings.Join(p.Maps, ", "))
	}
	return nil
}
