package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/nic"
)

// The control channel of a running `xnic run` (package control): the run
// serves a socket per port, and the commands that read or change a port it
// holds ask it instead of opening the port. This file answers the requests
// from the run's ports, engine and program; the commands' side is in each
// command's file.

// controlFlag registers --control.
func controlFlag(fs *flag.FlagSet, ctl *string) {
	fs.StringVar(ctl, "control", "", "ask the xnic run holding the port: `PORT`, its name as the run prints it (e.g. "+exampleSimPort()+"), or its socket's path")
}

// findControl returns the socket of the run to ask: the one --control names,
// or the socket of a run holding the port bdf or o names (a PCI address, a
// --sim or --platform port a run holds). It reports false when the command
// should open the port itself.
func findControl(bdf string, o portOptions, ctl string) (string, bool, error) {
	bdf, err := portDev(bdf, o)
	if err != nil {
		return "", false, err
	}
	if ctl != "" {
		if o.Sim != "" || o.Platform != "" || bdf != "" {
			return "", false, usageErrorf("--control asks a running port: give no PCI address, --sim or --platform with it")
		}
		path, err := control.Resolve(ctl)
		if err != nil {
			return "", false, err
		}
		return path, true, nil
	}
	if bdf != "" {
		path := control.Path(bdf)
		return path, control.Alive(path), nil
	}
	return findRunBySim(o)
}

// controlServer answers the control sockets of a run's ports.
type controlServer struct {
	*control.Server
	run *dpRunState // immutable
	mu  sync.Mutex  // serialises register, PHY, link and clock writes
}

// portHandler answers the requests of one port.
type portHandler struct {
	s *controlServer
	p *dpPort
}

// serveControl listens on a control socket for each port of r and prints the
// paths to w.
func serveControl(r *dpRunState, w io.Writer) (*controlServer, error) {
	s := &controlServer{Server: control.NewServer(), run: r}
	for _, p := range r.ports {
		path, err := s.Listen(p.port.Name(), string(p.op.Family), portHandler{s, p})
		if err != nil {
			s.Close()
			return nil, err
		}
		fmt.Fprintf(w, "xnic run: control socket for %s: %s\n", p.port.Name(), path)
	}
	return s, nil
}

// Close stops serving. A nil server is closed.
func (s *controlServer) Close() error {
	if s == nil {
		return nil
	}
	return s.Server.Close()
}

// program is the running program, or an error saying there is none.
func (s *controlServer) program() (*runProgram, error) {
	if s.run == nil {
		return nil, errors.New("the run has no program")
	}
	if rp := s.run.progs.cur.Load(); rp != nil {
		return rp, nil
	}
	return nil, errors.New("the run has no program")
}

func (h portHandler) Handle(req *control.Request, resp *control.Response) error {
	s, p := h.s, h.p
	switch req.Cmd {
	case control.CmdStats:
		return s.stats(p, resp)
	case control.CmdRegs:
		d, err := portDumpTable(p.op)
		resp.Regs = d
		return err
	case control.CmdReg:
		t, err := portRegTarget(p.op, true)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rs, err := regExec(t, req.Ops, req.Force)
		resp.Regs = &nic.RegDump{Registers: rs}
		return err
	case control.CmdPHY:
		return s.phy(p, req, resp)
	case control.CmdInfo:
		pi := describePort(p.op)
		resp.Info = &pi
		return nil
	case control.CmdLink, control.CmdPTP:
		s.mu.Lock()
		defer s.mu.Unlock()
		return portWords(p.op, req, resp)
	case control.CmdSelftest:
		return errors.New("a self-test resets the port and loops it back, which would take it from the run's traffic: stop `xnic run` first")
	}
	return h.handleProgram(req, resp)
}

// handleProgram answers the requests about the running program.
func (h portHandler) handleProgram(req *control.Request, resp *control.Response) error {
	s := h.s
	rp, err := s.program()
	if err != nil {
		return err
	}
	switch req.Cmd {
	case control.CmdMaps:
		ms, err := mapio.Dump(rp.coll, rp.spec.Maps, req.Map)
		resp.Maps = ms
		return err
	case control.CmdMapUpdate:
		return mapio.Update(rp.coll, req.Map, req.Key, req.Value)
	case control.CmdProgShow:
		if req.RunTime < 0 || req.RunTime > time.Minute {
			return fmt.Errorf("run time over %v: want 0 to a minute", req.RunTime)
		}
		resp.Prog = rp.info(s.run.e, req.RunTime)
		return nil
	case control.CmdProgLoad:
		if req.Load == nil || len(req.Load.Object) == 0 {
			return errors.New("prog-load without an object")
		}
		nrp, err := s.run.progs.replace(s.run.e, req.Load.Object, req.Load.Name, req.Load.Program)
		if nrp == nil {
			return err
		}
		resp.Prog, resp.Kept = nrp.info(s.run.e, 0), nrp.kept
		if s.run.events != nil { // follow the new program's ring buffers and perf arrays
			err = errors.Join(err, s.run.events.rebind(nrp))
		}
		return err
	}
	return fmt.Errorf("unknown control request %q", req.Cmd)
}

func (h portHandler) Stream(req *control.Request, sc *control.StreamConn) error {
	switch req.Cmd {
	case control.CmdTrace:
		if h.s.run == nil || h.s.run.trace == nil {
			return errors.New("the run keeps no bpf_printk output")
		}
		if rp, err := h.s.program(); err == nil && !specPrints(rp.spec) {
			return fmt.Errorf("%s calls neither bpf_printk (bpf_trace_printk) nor bpf_trace_vprintk: there is nothing to follow", rp.prog.Name())
		}
		return h.s.run.trace.streamTrace(sc)
	case control.CmdEvents:
		if h.s.run == nil || h.s.run.events == nil {
			return errors.New("the run follows no events")
		}
		return h.s.run.events.stream(sc)
	case control.CmdCapture:
		return h.s.capture(h.p, req.Capture, sc) // capture.go
	}
	return fmt.Errorf("unknown control request %q", req.Cmd)
}

// stats answers with the port's counters from the engine's snapshot: the same
// call the run's own rate lines and summary make.
func (s *controlServer) stats(p *dpPort, resp *control.Response) error {
	snap := s.run.e.Snapshot()
	for i := range snap.Ports {
		ps := &snap.Ports[i]
		if ps.Name != p.port.Name() {
			continue
		}
		resp.Counters = control.Counters(ps.Hardware)
		resp.Verdicts = ps.Counters.Map()
		for _, q := range ps.Queues {
			resp.Queues = append(resp.Queues, control.QueueStats{Queue: q.Queue, Counters: q.Counters.Map()})
		}
		return nil
	}
	return fmt.Errorf("port %s is not in the dataplane", p.port.Name())
}

func (s *controlServer) phy(p *dpPort, req *control.Request, resp *control.Response) error {
	if req.PHY == nil {
		return errors.New("phy request without a phy operation")
	}
	pa, ok := p.op.Port.(nic.PHYAccess)
	if !ok {
		return fmt.Errorf("the %s driver gives no access to its PHY: %w", p.op.Family, nic.ErrNotSupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := *req.PHY
	switch r.Op {
	case "":
		d, err := phyDecode(p.op, pa)
		resp.PHY = &control.PHYAnswer{Decode: &d}
		return err
	case "read":
		v, err := phyRead(p.op, pa, r)
		if err != nil {
			return err
		}
		rv := phyValue(r, pa, v)
		resp.PHY = &control.PHYAnswer{Reg: &rv}
		return nil
	case "write":
		if !req.Force {
			return errors.New("a running `xnic run` owns the port: a PHY write changes the link under its driver; --force writes anyway")
		}
		return phyWrite(p.op, pa, r)
	}
	return fmt.Errorf("phy: unknown operation %q", r.Op)
}

// portDumpTable is an open port's register dump as a table.
func portDumpTable(op *openedPort) (*nic.RegDump, error) {
	t, err := portRegTarget(op, true)
	if err != nil {
		return nil, err
	}
	return t.dump()
}

// controlStats prints the counters a run reports for its port, as `xnic
// stats` prints a port's.
func controlStats(path string, asJSON bool, w io.Writer) error {
	resp, err := control.Call(path, control.Request{Cmd: control.CmdStats})
	if err != nil {
		return err
	}
	return printStats(w, resp.Port, resp.Counters, asJSON)
}

// controlRegs prints a running port's register dump.
func controlRegs(path string, asJSON bool, w io.Writer) error {
	resp, err := control.Call(path, control.Request{Cmd: control.CmdRegs})
	if err != nil {
		return err
	}
	if resp.Regs == nil {
		return fmt.Errorf("the run holding %s sent no registers", resp.Port)
	}
	if asJSON {
		return writeJSON(w, resp.Regs)
	}
	_, err = io.WriteString(w, resp.Regs.String())
	return err
}

// exampleSimPort is the name a run gives its first simulated port of the
// first family, for help texts.
func exampleSimPort() string {
	if len(families) == 0 {
		return "PORT"
	}
	return string(families[0].name) + "sim0"
}

// findRunBySim finds the run holding the --sim port o names: a run names its
// simulated ports KINDsimN, so a --sim KIND port beside a run of that kind
// is the run's port 0 (KINDsim0). A command on it then asks the run rather
// than opening a second, fresh model.
func findRunBySim(o portOptions) (string, bool, error) {
	if o.Sim == "" {
		return "", false, nil
	}
	spec, err := parseSim(o.Sim)
	if err != nil {
		return "", false, err
	}
	name := o.SimName
	if name == "" {
		name = string(spec.Fam) + "sim0"
	}
	path := control.Path(name)
	if !control.Alive(path) {
		return "", false, nil
	}
	resp, err := control.Call(path, control.Request{Cmd: control.CmdInfo})
	if err != nil {
		return "", false, err
	}
	if resp.Info != nil && resp.Info.Sim != "" && resp.Info.Sim != spec.String() {
		return "", false, fmt.Errorf("%w: a running `xnic run` holds %s, a simulated %s, and --sim %s names another model: ask the run with --control %s, or stop it first",
			errHeld, name, resp.Info.Sim, o.Sim, name)
	}
	return path, true, nil
}

// portWords runs link or ptp on a port a run holds, with the command's own
// words, and answers with what the command prints with --json. A link change
// waits for the link; the run's link monitor then lets the driver follow it
// with the queues parked (dataplane linkadjust.go).
func portWords(op *openedPort, req *control.Request, resp *control.Response) error {
	var out any
	switch req.Cmd {
	case control.CmdLink:
		lr, err := parseLinkWords(req.Args)
		if err != nil {
			return err
		}
		ls, err := linkExecRunning(op, lr, 5*time.Second)
		if err != nil {
			return err
		}
		out = ls
	case control.CmdPTP:
		r, err := parsePTPWords(req.Args)
		if err != nil {
			return err
		}
		po, err := ptpExec(op, r)
		if err != nil {
			return err
		}
		out = po
	}
	b, err := json.Marshal(out)
	resp.Result = b
	return err
}
