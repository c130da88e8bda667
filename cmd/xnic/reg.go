package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/vfio"
)

// xnic reg: one register at a time, like devmem but by the names of the
// family's register table (the driver's register dump: every register there
// reads without side effects) and decoded as `xnic regs` decodes it.

func init() {
	register(&command{name: "reg", usage: portUsage + " NAME|OFFSET[=VALUE] ... [--control NAME|PATH] [--force] [--json]",
		summary: "read or write registers by name (from the family's register table) or offset, decoded; writes refused on read-only registers and on a running port unless --force",
		run:     runReg})
}

// regOp is one NAME, OFFSET, NAME=VALUE or OFFSET=VALUE argument.
// parseRegOps reads the register arguments.
func parseRegOps(args []string) ([]regOp, error) {
	if len(args) == 0 {
		return nil, usageErrorf("name a register (NAME, OFFSET, NAME=VALUE or OFFSET=VALUE)")
	}
	ops := make([]regOp, 0, len(args))
	for _, a := range args {
		name, val, isWrite := strings.Cut(a, "=")
		if name == "" {
			return nil, usageErrorf("register %q: no name or offset", a)
		}
		op := regOp{Reg: name}
		if isWrite {
			v, err := strconv.ParseUint(val, 0, 32)
			if err != nil {
				return nil, usageErrorf("register %s: value %q: want a 32-bit number (0x... hex, 0b..., or decimal)", name, val)
			}
			v32 := uint32(v)
			op.Value = &v32
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// regTarget is what reg works on: a family's registers and its dump.
type regTarget struct {
	fam  family
	regs nic.Regs
	dump func() (*nic.RegDump, error)
	// owned: a running `xnic run` drives the port; writes need force.
	owned bool
}

// portRegTarget is an open port's register window and its driver's dump.
func portRegTarget(op *openedPort, owned bool) (regTarget, error) {
	regs, err := op.Device.Regs(0)
	if err != nil {
		return regTarget{}, err
	}
	return regTarget{fam: op.Family, regs: regs, owned: owned, dump: func() (*nic.RegDump, error) {
		if op.driver == nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), nic.ErrClosed)
		}
		d, ok := op.driver.Dump().(*nic.RegDump)
		if !ok {
			return nil, fmt.Errorf("%s: the %s dump is not a register table: %w", op.Name(), op.Family, nic.ErrNotSupported)
		}
		return d, nil
	}}, nil
}

// lookupReg finds a register of the table by name (any case) or offset.
func lookupReg(d *nic.RegDump, spec string) (nic.RegValue, uint32, bool, error) {
	for _, r := range d.Registers {
		if strings.EqualFold(r.Name, spec) {
			return r, r.Offset, true, nil
		}
	}
	off, err := strconv.ParseUint(spec, 0, 32)
	if err != nil {
		return nic.RegValue{}, 0, false, usageErrorf("no register %q in the table (`xnic regs` lists them), and it is no offset", spec)
	}
	if off%4 != 0 {
		return nic.RegValue{}, 0, false, usageErrorf("offset %#x: registers are 32-bit and 4-byte aligned", off)
	}
	for _, r := range d.Registers {
		if r.Offset == uint32(off) {
			return r, r.Offset, true, nil
		}
	}
	return nic.RegValue{}, uint32(off), false, nil
}

// regExec checks every op, then runs them in order and returns each register
// as it reads after its op (a write is read back through the table). force
// allows what is otherwise refused: reading or writing an offset outside the
// table (its read may clear it: statistics, interrupt causes), writing a
// read-only register, writing while a run owns the port. Nothing is written
// when any op is refused.
func regExec(t regTarget, ops []regOp, force bool) ([]nic.RegValue, error) {
	d, err := t.dump()
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		if err := regCheck(t, d, op, force); err != nil {
			return nil, err
		}
	}
	var out []nic.RegValue
	for _, op := range ops {
		r, off, inTable, _ := lookupReg(d, op.Reg)
		if op.Value != nil {
			t.regs.Write32(off, *op.Value)
			if inTable {
				if d, err = t.dump(); err != nil {
					return out, err
				}
				r, _, _, _ = lookupReg(d, r.Name)
			}
		}
		if !inTable {
			r = nic.RegValue{Name: fmt.Sprintf("%#x", off), Offset: off, Value: t.regs.Read32(off)}
		}
		out = append(out, r)
	}
	return out, nil
}

// regCheck refuses an op that needs force and does not have it.
func regCheck(t regTarget, d *nic.RegDump, op regOp, force bool) error {
	r, off, inTable, err := lookupReg(d, op.Reg)
	switch {
	case err != nil:
		return err
	case force:
		return nil
	case !inTable:
		return fmt.Errorf("offset %#x is not in the %s register table: reading it may have side effects (clear-on-read counters and causes); --force accesses it", off, t.fam)
	case op.Value == nil:
		return nil
	case t.owned:
		return fmt.Errorf("%s: a running `xnic run` owns the port: a write changes what its driver set up under it; --force writes anyway", r.Name)
	}
	if why, ro := familyReadOnly(t.fam)[r.Name]; ro {
		return fmt.Errorf("%s is read-only (%s): the hardware ignores the write; --force sends it anyway", r.Name, why)
	}
	return nil
}

func printRegValues(w io.Writer, rs []nic.RegValue, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rs)
	}
	d := nic.RegDump{Registers: rs}
	_, err := io.WriteString(w, d.String())
	return err
}

func runReg(args []string, stdout, stderr io.Writer) error {
	var (
		o             portOptions
		asJSON, force bool
	)
	fs := newFlags("reg", stderr)
	portFlags(fs, &o, false)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&force, "force", false, "access offsets outside the table, write read-only registers, write while a run owns the port")
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
	ops, err := parseRegOps(pos)
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok {
		resp, err := control.Call(path, control.Request{Cmd: "reg", Ops: ops, Force: force})
		if err != nil {
			return err
		}
		if resp.Regs == nil {
			return fmt.Errorf("the run holding %s sent no registers", resp.Port)
		}
		return printRegValues(stdout, resp.Regs.Registers, asJSON)
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	t, err := portRegTarget(op, false)
	if err != nil {
		return errors.Join(err, op.Close())
	}
	rs, err := regExec(t, ops, force)
	if err == nil {
		err = printRegValues(stdout, rs, asJSON)
	}
	return errors.Join(err, op.Close())
}

// familyReadOnly is the read-only registers of family fam's table.
func familyReadOnly(fam family) map[string]string {
	if f := familyByName(fam); f != nil {
		return f.facts.ReadOnly
	}
	return nil
}

// regOp is one register access of xnic reg, as the control protocol carries it.
type regOp = control.RegOp
