package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/nic"
)

// The control channel of a running `xnic run`: one Unix socket per port, owner
// only (0600, in a 0700 directory), at $XDG_RUNTIME_DIR/xnic/PORT.sock, or
// /run/xnic/PORT.sock without XDG_RUNTIME_DIR. The run prints each path when
// it starts. Other commands (stats, regs, reg, phy, prog map) go through it
// instead of opening the port, which would reset the device under the run or
// fail (VFIO hands a device to one process).
//
// The protocol is one JSON request line and one JSON response per connection.
// The server answers in its own goroutine per connection; what it calls
// (Port.Stats, the driver's dump, Engine.Snapshot, map lookups) is safe
// alongside the poll goroutines.

// controlTimeout bounds one request: connecting, sending, answering.
const controlTimeout = 5 * time.Second

// controlMaxRequest bounds a request line.
const controlMaxRequest = 1 << 20

// ctlRequest is one request to a run.
type ctlRequest struct {
	Cmd   string  `json:"cmd"` // stats, regs, reg, phy, maps, map-update
	Ops   []regOp `json:"ops,omitempty"`
	Force bool    `json:"force,omitempty"`
	PHY   *phyReq `json:"phy,omitempty"`
	// maps and map-update
	Map   string `json:"map,omitempty"`
	Key   string `json:"key,omitempty"`   // hex bytes
	Value string `json:"value,omitempty"` // hex bytes
}

// ctlResponse is a run's answer.
type ctlResponse struct {
	Error    string            `json:"error,omitempty"`
	Port     string            `json:"port"`
	Family   string            `json:"family"`
	Counters []ctlCounter      `json:"counters,omitempty"`  // the port's hardware and driver counters
	Verdicts map[string]uint64 `json:"dataplane,omitempty"` // the dataplane's counters of the port
	Regs     *nic.RegDump      `json:"regs,omitempty"`
	PHY      *phyCtlAnswer     `json:"phy,omitempty"`
	Maps     []ctlMap          `json:"maps,omitempty"`
}

type ctlCounter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// phyCtlAnswer is the PHY part of a response.
type phyCtlAnswer struct {
	Decode *phyDecodeOut `json:"decode,omitempty"`
	Reg    *phyRegValue  `json:"reg,omitempty"`
}

// controlDir is where runs put their sockets.
func controlDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "xnic")
	}
	return "/run/xnic"
}

// controlPath is the socket of the port called name.
func controlPath(name string) string {
	return filepath.Join(controlDir(), strings.NewReplacer("/", "_", "\x00", "_").Replace(name)+".sock")
}

// controlFlag registers --control.
func controlFlag(fs *flag.FlagSet, ctl *string) {
	fs.StringVar(ctl, "control", "", "ask the running `xnic run` holding the port: its port name (as run prints it, e.g. igbsim0) or its socket's path")
}

// findControl returns the socket of the run to ask: the one --control names,
// or, for a PCI address, the socket a run holding that device serves. It
// reports false when the command should open the port itself.
func findControl(bdf string, o portOptions, ctl string) (string, bool, error) {
	if ctl != "" {
		if o.Sim != "" || o.Platform != "" || bdf != "" {
			return "", false, usageErrorf("--control asks a running port: give no PCI address, --sim or --platform with it")
		}
		path := ctl
		if !strings.Contains(ctl, "/") {
			path = controlPath(ctl)
		}
		if _, err := os.Stat(path); err != nil {
			return "", false, fmt.Errorf("--control %s: no control socket at %s (is `xnic run` running, and is XDG_RUNTIME_DIR the same as its?): %w", ctl, path, err)
		}
		return path, true, nil
	}
	if bdf == "" {
		return "", false, nil
	}
	path := controlPath(bdf)
	if !controlAlive(path) {
		return "", false, nil
	}
	return path, true, nil
}

// controlAlive reports whether something answers on the socket at path.
func controlAlive(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// controlCall sends one request to the run at path and returns its answer; an
// answer carrying an error becomes the error.
func controlCall(path string, req ctlRequest) (ctlResponse, error) {
	c, err := net.DialTimeout("unix", path, controlTimeout)
	if err != nil {
		return ctlResponse{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(controlTimeout)); err != nil {
		return ctlResponse{}, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return ctlResponse{}, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return ctlResponse{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	var resp ctlResponse
	if err := json.NewDecoder(io.LimitReader(c, 64<<20)).Decode(&resp); err != nil {
		return ctlResponse{}, fmt.Errorf("control socket %s: reading the answer: %w", path, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("%s (answered by the run holding %s)", resp.Error, resp.Port)
	}
	return resp, nil
}

// controlServer serves the control sockets of a run's ports.
type controlServer struct {
	engine *dataplane.Engine        // immutable
	coll   *bpf.Collection          // immutable; nil: no program
	specs  map[string]*ebpf.MapSpec // immutable: the object's maps, with their BTF
	trace  *traceHub                // immutable; nil: bpf_printk output is not kept
	stop   chan struct{}            // closed by Close: ends trace streams
	lns    []net.Listener           // immutable after serveControl
	paths  []string                 // immutable after serveControl
	wg     sync.WaitGroup           // accept loops and connections
	mu     sync.Mutex               // serialises register and PHY writes
	ports  map[string]*dpPort       // by name; immutable
}

// serveControl listens on a control socket for each port and prints the
// paths to w. A socket left by a run that is gone is replaced; a port name a
// live run already serves (two runs of the same --sim kind) gets the socket
// PORT.PID.sock instead.
func serveControl(ports []*dpPort, coll *bpf.Collection, specs map[string]*ebpf.MapSpec, trace *traceHub, e *dataplane.Engine, w io.Writer) (*controlServer, error) {
	s := &controlServer{engine: e, coll: coll, specs: specs, trace: trace, stop: make(chan struct{}), ports: map[string]*dpPort{}}
	dir := controlDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // one made before with wider permissions
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	for _, p := range ports {
		name := p.port.Name()
		path := controlPath(name)
		if controlAlive(path) {
			path = strings.TrimSuffix(path, ".sock") + fmt.Sprintf(".%d.sock", os.Getpid())
		}
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				s.Close()
				return nil, fmt.Errorf("control socket for %s: %s exists and is no socket", name, path)
			}
			_ = os.Remove(path) // a socket nobody answers on: a run that is gone
		}
		ln, err := listenOwnerOnly(path)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("control socket for %s: %w", name, err)
		}
		s.lns, s.paths = append(s.lns, ln), append(s.paths, path)
		s.ports[name] = p
		fmt.Fprintf(w, "xnic run: control socket for %s: %s\n", name, path)
		s.wg.Add(1)
		go s.accept(ln, p)
	}
	return s, nil
}

// listenOwnerOnly listens on a Unix socket that only its owner may connect to
// (connect(2) needs write permission on the socket file).
func listenOwnerOnly(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Close stops serving and removes the sockets. A nil server is closed.
func (s *controlServer) Close() error {
	if s == nil {
		return nil
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	var errs []error
	for i, ln := range s.lns {
		errs = append(errs, ln.Close())
		_ = os.Remove(s.paths[i])
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// accept runs in its own goroutine per socket until the listener closes.
func (s *controlServer) accept(ln net.Listener, p *dpPort) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c, p)
		}()
	}
}

// serve answers one request on c.
func (s *controlServer) serve(c net.Conn, p *dpPort) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(controlTimeout))
	r := bufio.NewReader(io.LimitReader(c, controlMaxRequest))
	line, err := r.ReadBytes('\n')
	resp := ctlResponse{Port: p.port.Name(), Family: string(p.op.Family)}
	var req ctlRequest
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil && req.Cmd == "trace" && s.trace != nil {
		s.trace.streamTrace(c, s.stop)
		return
	}
	if err == nil && req.Cmd == "trace" {
		err = errors.New("the run keeps no bpf_printk output")
	}
	if err == nil {
		err = s.handle(p, req, &resp)
	}
	if err != nil {
		resp.Error = err.Error()
	}
	b, _ := json.Marshal(resp)
	_, _ = c.Write(append(b, '\n'))
}

func (s *controlServer) handle(p *dpPort, req ctlRequest, resp *ctlResponse) error {
	switch req.Cmd {
	case "stats":
		return s.stats(p, resp)
	case "regs":
		d, err := portDumpTable(p.op)
		resp.Regs = d
		return err
	case "reg":
		t, err := portRegTarget(p.op, true)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rs, err := regExec(t, req.Ops, req.Force)
		resp.Regs = &nic.RegDump{Registers: rs}
		return err
	case "phy":
		return s.phy(p, req, resp)
	case "maps":
		ms, err := dumpMaps(s.coll, s.specs, req.Map)
		resp.Maps = ms
		return err
	case "map-update":
		return updateMap(s.coll, req.Map, req.Key, req.Value)
	}
	return fmt.Errorf("unknown control request %q", req.Cmd)
}

// stats answers with the port's counters from the engine's snapshot: the same
// call the run's own rate lines and summary make.
func (s *controlServer) stats(p *dpPort, resp *ctlResponse) error {
	snap := s.engine.Snapshot()
	for i := range snap.Ports {
		ps := &snap.Ports[i]
		if ps.Name != p.port.Name() {
			continue
		}
		for _, c := range ps.Hardware {
			resp.Counters = append(resp.Counters, ctlCounter{c.Name, c.Value})
		}
		resp.Verdicts = ps.Counters.Map()
		return nil
	}
	return fmt.Errorf("port %s is not in the dataplane", p.port.Name())
}

func (s *controlServer) phy(p *dpPort, req ctlRequest, resp *ctlResponse) error {
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
		resp.PHY = &phyCtlAnswer{Decode: &d}
		return err
	case "read":
		v, err := phyRead(p.op, pa, r)
		if err != nil {
			return err
		}
		rv := phyValue(r, pa, v)
		resp.PHY = &phyCtlAnswer{Reg: &rv}
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
	resp, err := controlCall(path, ctlRequest{Cmd: "stats"})
	if err != nil {
		return err
	}
	cs := make([]nic.Counter, len(resp.Counters))
	for i, c := range resp.Counters {
		cs[i] = nic.Counter{Name: c.Name, Value: c.Value}
	}
	return printStats(w, resp.Port, cs, asJSON)
}

// controlRegs prints a running port's register dump.
func controlRegs(path string, asJSON bool, w io.Writer) error {
	resp, err := controlCall(path, ctlRequest{Cmd: "regs"})
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
