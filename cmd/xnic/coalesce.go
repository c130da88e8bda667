package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/vfio"
)

// xnic coalesce: ethtool -c / -C rx-usecs, on an open port or, through its
// control socket, on a running one (the moderation registers may be written
// while traffic runs). igb: EITR's interval (bits 14:2, in microseconds;
// 82576 datasheet 8.8.12) is the minimum time between two interrupts of a
// vector. fec: RXICn holds a ring's RX interrupt for up to the interval, or
// until its frame threshold (fec/coalesce.go); the i.MX6 ENET has none.
// dwmac: RIWTn, the RX watchdog, holds the interrupt of frames whose
// descriptors leave IOC clear, which only a port opened with --rx-usecs
// does (dwmac/coalesce.go, cmd/xnic/dwmac.go).

func init() {
	register(&command{name: "coalesce", usage: portUsage + " [rx-usecs N] [--control PORT|PATH] [--json]",
		summary: "like ethtool -c/-C: show or set the RX interrupt interval (the family's moderation register), also on a running port", run: runCoalesce})
}

// coalesceQueue is one queue's setting.
type coalesceQueue struct {
	Queue   int `json:"queue"`
	RxUsecs int `json:"rx_usecs"`
}

type coalesceOut struct {
	Port   string          `json:"port"`
	Queues []coalesceQueue `json:"queues"`
}

// coalesceRegs names the moderation register of each queue in the table,
// with the family's interval field.
func coalesceRegs(fam family, d *nic.RegDump) (*interruptModeration, []nic.RegValue, error) {
	f := familyByName(fam)
	switch {
	case f == nil:
		return nil, nil, fmt.Errorf("no %s family: %w", fam, nic.ErrNotSupported)
	case f.moderation == nil && f.noModeration != "":
		return nil, nil, fmt.Errorf("%s: %w", f.noModeration, nic.ErrNotSupported)
	case f.moderation == nil:
		return nil, nil, fmt.Errorf("no interrupt moderation known for the %s family: %w", fam, nic.ErrNotSupported)
	}
	m := f.moderation
	if m.forPort != nil {
		m = m.forPort(d)
	}
	var rs []nic.RegValue
	for q := 0; ; q++ {
		r, ok := d.Reg(fmt.Sprintf(m.reg, q))
		if !ok {
			break
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, nil, fmt.Errorf("this %s port has no %s register, so no interrupt moderation: %w", fam, fmt.Sprintf(m.reg, 0), nic.ErrNotSupported)
	}
	return m, rs, nil
}

// checkSet refuses an interval (usecs >= 0) the port's moderation cannot
// take; usecs < 0 (show only) passes.
func (m *interruptModeration) checkSet(fam family, usecs int) error {
	switch {
	case usecs < 0:
		return nil
	case usecs > m.max():
		return usageErrorf("rx-usecs %d: the %s family's interval holds at most %d", usecs, fam, m.max())
	case m.refuse != nil:
		if why := m.refuse(usecs); why != "" {
			return usageErrorf("rx-usecs %d: %s", usecs, why)
		}
	}
	return nil
}

func coalesceShow(m *interruptModeration, rs []nic.RegValue) []coalesceQueue {
	out := make([]coalesceQueue, len(rs))
	for i, r := range rs {
		out[i] = coalesceQueue{Queue: i, RxUsecs: m.usecs(r.Value)}
	}
	return out
}

// coalesceOps are the register writes that set every queue to usecs.
func coalesceOps(m *interruptModeration, rs []nic.RegValue, usecs int) []regOp {
	ops := make([]regOp, len(rs))
	for i, r := range rs {
		v := m.with(r.Value, usecs)
		ops[i] = regOp{Reg: r.Name, Value: &v}
	}
	return ops
}

// coalesceExec sets (usecs >= 0) and reads the setting of a port's queues.
func coalesceExec(t regTarget, usecs int) ([]coalesceQueue, error) {
	d, err := t.dump()
	if err != nil {
		return nil, err
	}
	m, rs, err := coalesceRegs(t.fam, d)
	if err != nil {
		return nil, err
	}
	if err := m.checkSet(t.fam, usecs); err != nil {
		return nil, err
	}
	if usecs >= 0 {
		if rs, err = regExec(t, coalesceOps(m, rs, usecs), true); err != nil {
			return nil, err
		}
	}
	return coalesceShow(m, rs), nil
}

func parseCoalesceWords(ws []string) (int, error) {
	switch {
	case len(ws) == 0:
		return -1, nil
	case len(ws) == 2 && ws[0] == "rx-usecs":
		n, err := strconv.Atoi(ws[1])
		if err != nil || n < 0 {
			return 0, usageErrorf("rx-usecs %q: want a number of microseconds, 0 for no moderation", ws[1])
		}
		return n, nil
	}
	return 0, usageErrorf("want rx-usecs N, got %q", ws)
}

func runCoalesce(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON bool
	fs := newFlags("coalesce", stderr)
	portFlags(fs, &o, false)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	bdf := ""
	if len(pos) > 0 && o.Sim == "" && o.Platform == "" && o.Control == "" {
		if _, err := vfio.ParseAddr(pos[0]); err == nil {
			bdf, pos = pos[0], pos[1:]
		}
	}
	usecs, err := parseCoalesceWords(pos)
	if err != nil {
		return err
	}
	var out coalesceOut
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok {
		if out, err = coalesceViaControl(path, usecs); err != nil {
			return err
		}
	} else {
		op, err := openPort(bdf, o)
		if err != nil {
			return err
		}
		t, err := portRegTarget(op, false)
		if err == nil {
			out.Port = op.Name()
			out.Queues, err = coalesceExec(t, usecs)
		}
		if err = errors.Join(err, op.Close()); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(stdout, out)
	}
	for _, q := range out.Queues {
		fmt.Fprintf(stdout, "%s queue %d: rx-usecs %d\n", out.Port, q.Queue, q.RxUsecs)
	}
	return nil
}

// coalesceViaControl reads (and sets) a running port's moderation through
// its run: a dump, then the writes as one forced reg request (moderation may
// change under traffic).
func coalesceViaControl(path string, usecs int) (coalesceOut, error) {
	resp, err := control.Call(path, control.Request{Cmd: "regs"})
	if err != nil {
		return coalesceOut{}, err
	}
	if resp.Regs == nil {
		return coalesceOut{}, fmt.Errorf("the run holding %s sent no registers", resp.Port)
	}
	m, rs, err := coalesceRegs(family(resp.Family), resp.Regs)
	if err != nil {
		return coalesceOut{}, err
	}
	if err := m.checkSet(family(resp.Family), usecs); err != nil {
		return coalesceOut{}, err
	}
	if usecs >= 0 {
		resp, err = control.Call(path, control.Request{Cmd: "reg", Ops: coalesceOps(m, rs, usecs), Force: true})
		if err != nil {
			return coalesceOut{}, err
		}
		if resp.Regs == nil {
			return coalesceOut{}, fmt.Errorf("the run holding %s sent no registers", resp.Port)
		}
		rs = resp.Regs.Registers
	}
	return coalesceOut{Port: resp.Port, Queues: coalesceShow(m, rs)}, nil
}
