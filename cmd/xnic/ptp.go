package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
)

// xnic ptp: a port's IEEE 1588 hardware clock (nic.PHC), for bring-up, in
// the manner of the kernel's testptp tool on /dev/ptpN: read it, set it, step
// it by an offset (ptp_clock_info.adjtime) and run it fast or slow by parts
// per billion (adjfine). The clock is the one the port's RX and TX timestamps
// come from.

func init() {
	register(&command{name: "ptp", usage: portUsage + " get | set NS | adj time DELTA_NS | adj freq PPB [--json]",
		summary: "read, set, step or tune a port's hardware clock (PHC)", run: runPTP})
}

// ptpOp is one ptp request.
type ptpOp struct {
	Op    string // "get", "set", "adj time", "adj freq"
	Value int64  // the time, offset or ppb
}

// ptpOut is what `xnic ptp` prints: the clock read after the request.
type ptpOut struct {
	Port   string `json:"port"`
	Driver string `json:"driver"`
	Op     string `json:"op"`
	Value  *int64 `json:"value,omitempty"` // the NS, DELTA_NS or PPB given
	TimeNS int64  `json:"time_ns"`         // the clock read after the request
}

// errNoPHC says a port's driver has no hardware clock.
var errNoPHC = errors.New("no hardware clock")

// portPHC is the port's clock, or a clear error naming the driver that has
// none. A family adapter (igbPort, ...) embeds its driver's port, so the
// driver's PHC method shows through it.
func portPHC(op *openedPort) (nic.PHC, error) {
	pp, ok := op.Port.(nic.PHCPort)
	if !ok {
		return nil, fmt.Errorf("%s: the %s driver has %w: %w", op.Name(), op.Family, errNoPHC, nic.ErrNotSupported)
	}
	c, err := pp.PHC()
	if err != nil {
		return nil, fmt.Errorf("%s: the %s driver's clock: %w", op.Name(), op.Family, err)
	}
	if c == nil {
		return nil, fmt.Errorf("%s: the %s driver has %w: %w", op.Name(), op.Family, errNoPHC, nic.ErrNotSupported)
	}
	return c, nil
}

// parsePTPWords reads the request words after the port.
func parsePTPWords(ws []string) (ptpOp, error) {
	num := func(what, s string) (int64, error) {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, usageErrorf("%s %q: want an integer", what, s)
		}
		return v, nil
	}
	switch {
	case len(ws) == 1 && ws[0] == "get":
		return ptpOp{Op: "get"}, nil
	case len(ws) == 2 && ws[0] == "set":
		v, err := num("set", ws[1])
		if err != nil {
			return ptpOp{}, err
		}
		if v < 0 {
			return ptpOp{}, usageErrorf("set %d: the clock holds no time before its epoch", v)
		}
		return ptpOp{Op: "set", Value: v}, nil
	case len(ws) == 3 && ws[0] == "adj" && (ws[1] == "time" || ws[1] == "freq"):
		v, err := num("adj "+ws[1], ws[2])
		if err != nil {
			return ptpOp{}, err
		}
		if ws[1] == "freq" && (v >= 1e9 || v <= -1e9) {
			return ptpOp{}, usageErrorf("adj freq %d: a clock runs at most a little faster or slower than its nominal rate; %d ppb is %d%% of it (Linux's drivers allow well under 1e9 ppb)", v, v, v/1e7)
		}
		return ptpOp{Op: "adj " + ws[1], Value: v}, nil
	}
	return ptpOp{}, usageErrorf("want get, set NS, adj time DELTA_NS or adj freq PPB (got %q)", ws)
}

// ptpExec runs r on the port's clock and reads it afterwards.
func ptpExec(op *openedPort, r ptpOp) (ptpOut, error) {
	c, err := portPHC(op)
	if err != nil {
		return ptpOut{}, err
	}
	out := ptpOut{Port: op.Name(), Driver: string(op.Family), Op: r.Op}
	if r.Op != "get" {
		v := r.Value
		out.Value = &v
	}
	switch r.Op {
	case "get":
	case "set":
		err = c.SetTime(r.Value)
	case "adj time":
		err = c.AdjTime(r.Value)
	case "adj freq":
		err = c.AdjFreq(r.Value)
	default:
		return ptpOut{}, fmt.Errorf("ptp: no request %q", r.Op)
	}
	if err != nil {
		return ptpOut{}, fmt.Errorf("%s: %s: %w", op.Name(), r.Op, err)
	}
	if out.TimeNS, err = c.Time(); err != nil {
		return ptpOut{}, fmt.Errorf("%s: reading the clock: %w", op.Name(), err)
	}
	return out, nil
}

// splitPTPArgs takes the request words out of args before the flags are
// parsed, so that a negative offset or ppb ("adj time -500") is a value and
// not a flag. The words start at the first get, set or adj; a PCI address may
// stand before them.
func splitPTPArgs(args []string) (rest, words []string) {
	for i, a := range args {
		if a != "get" && a != "set" && a != "adj" {
			continue
		}
		n := map[string]int{"get": 1, "set": 2, "adj": 3}[a]
		end := min(i+n, len(args))
		words = append(words, args[i:end]...)
		rest = append(append(rest, args[:i]...), args[end:]...)
		return rest, words
	}
	return args, nil
}

func runPTP(args []string, stdout, stderr io.Writer) error {
	rest, words := splitPTPArgs(args)
	var o portOptions
	var asJSON bool
	bdf, err := parsePortArgs("ptp", rest, stderr, &o, &asJSON, nil)
	if err != nil {
		return err
	}
	r, err := parsePTPWords(words)
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok { // a run holds the port: ask it (control.go)
		resp, err := control.Call(path, control.Request{Cmd: control.CmdPTP, Args: words})
		if err != nil {
			return err
		}
		var out ptpOut
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			return fmt.Errorf("the run's answer: %w", err)
		}
		return printPTP(stdout, out, asJSON)
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	defer op.Close()
	out, err := ptpExec(op, r)
	if err != nil {
		return err
	}
	return printPTP(stdout, out, asJSON)
}

func printPTP(stdout io.Writer, out ptpOut, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "%s: %s clock %d ns (%s)\n", out.Port, out.Driver, out.TimeNS,
		time.Unix(0, out.TimeNS).UTC().Format(time.RFC3339Nano))
	return nil
}
