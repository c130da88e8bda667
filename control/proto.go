package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"golang.org/x/net/bpf"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/nic"
)

// Commands a run answers (Request.Cmd).
const (
	CmdStats     = "stats"      // the port's counters
	CmdRegs      = "regs"       // its register dump
	CmdReg       = "reg"        // register reads and writes (Ops)
	CmdPHY       = "phy"        // PHY registers (PHY)
	CmdInfo      = "info"       // what `xnic info` shows (Info)
	CmdLink      = "link"       // the link, or new settings (Args; Result)
	CmdPTP       = "ptp"        // the PTP clock (Args; Result)
	CmdMaps      = "maps"       // a map dump (Map: one map, or all)
	CmdMapUpdate = "map-update" // one entry (Map, Key, Value)
	CmdProgShow  = "prog-show"  // the program and its statistics (Prog)
	CmdProgLoad  = "prog-load"  // replace the program (Load)
	CmdSelftest  = "selftest"   // refused: a self-test resets the port
	CmdTrace     = "trace"      // stream: bpf_printk lines (JSON strings)
	CmdCapture   = "capture"    // stream: frames (Frame) as the program left them
	CmdEvents    = "events"     // stream: ring buffer records and perf samples (events.Event)
)

// Stream reports whether cmd is answered with a stream.
func Stream(cmd string) bool {
	return cmd == CmdTrace || cmd == CmdCapture || cmd == CmdEvents
}

// Request is one request to a run.
type Request struct {
	Cmd   string      `json:"cmd"`
	Ops   []RegOp     `json:"ops,omitempty"`
	Force bool        `json:"force,omitempty"`
	PHY   *PHYRequest `json:"phy,omitempty"`
	// Args are a command's own words (link: ethtool -s settings; ptp: get,
	// set NS, adj time|freq N), parsed by the run as the command parses them.
	Args []string `json:"args,omitempty"`
	// maps and map-update
	Map   string `json:"map,omitempty"`
	Key   []byte `json:"key,omitempty"`
	Value []byte `json:"value,omitempty"`
	// capture
	Capture *CaptureRequest `json:"capture,omitempty"`
	// prog-load
	Load *LoadRequest `json:"load,omitempty"`
	// prog-show: measure the program's run time for this long (bpftool's
	// kernel.bpf_stats_enabled); 0: do not
	RunTime time.Duration `json:"run_time_ns,omitempty"`
}

// Response is a run's answer. Port and Family are always set.
type Response struct {
	Error    string            `json:"error,omitempty"`
	Port     string            `json:"port"`
	Family   string            `json:"family"`
	Counters Counters          `json:"counters,omitempty"`  // the port's hardware and driver counters
	Verdicts map[string]uint64 `json:"dataplane,omitempty"` // the dataplane's counters of the port
	Queues   []QueueStats      `json:"queues,omitempty"`    // per RX queue, with stats
	Regs     *nic.RegDump      `json:"regs,omitempty"`
	PHY      *PHYAnswer        `json:"phy,omitempty"`
	Info     *PortInfo         `json:"info,omitempty"`
	Result   json.RawMessage   `json:"result,omitempty"` // link, ptp: what the command prints with --json
	Maps     []mapio.Map       `json:"maps,omitempty"`
	Prog     *ProgInfo         `json:"prog,omitempty"`
	Kept     []string          `json:"kept_maps,omitempty"` // prog-load: maps carried over by name
	Warning  string            `json:"warning,omitempty"`
}

// Err is the error a Response carries, or nil.
func (r *Response) Err() error {
	if r.Error == "" {
		return nil
	}
	return fmt.Errorf("%s (answered by the run holding %s)", r.Error, r.Port)
}

// QueueStats is one RX queue's counters in the dataplane.
type QueueStats struct {
	Queue    int               `json:"queue"`
	Counters map[string]uint64 `json:"counters"`
}

// RegOp is one register access: a read when Value is nil.
type RegOp struct {
	Reg   string  `json:"reg"`             // a name from the table, or an offset (0x...)
	Value *uint32 `json:"value,omitempty"` // nil: read
}

// PHYReg names one PHY register: clause 22 (Reg 0-31) or clause 45 (MMD
// Dev, Reg 0-65535).
type PHYReg struct {
	C45 bool
	Dev int
	Reg int
}

// PHYRequest is a PHY operation.
type PHYRequest struct {
	Op    string // "" (decode all), "read" or "write"
	Reg   PHYReg
	Value uint16 // for write
	Force bool   // write a read-only register anyway
	Addr  int    // clause-45 MDIO address; -1: the port's PHY
}

// PHYRegValue is one PHY register read, decoded when the reader knows it.
type PHYRegValue struct {
	Name   string      `json:"name,omitempty"`
	Addr   int         `json:"addr"`
	MMD    *int        `json:"mmd,omitempty"` // clause 45 only
	Reg    int         `json:"reg"`
	Value  uint16      `json:"value"`
	Fields []nic.Field `json:"fields,omitempty"`
}

func (r PHYRegValue) String() string {
	var b strings.Builder
	switch {
	case r.MMD != nil:
		fmt.Fprintf(&b, "%-10s 0x%04x", fmt.Sprintf("%d.0x%04x", *r.MMD, r.Reg), r.Value)
	case r.Name != "":
		fmt.Fprintf(&b, "%-10s [%2d] 0x%04x", r.Name, r.Reg, r.Value)
	default:
		fmt.Fprintf(&b, "%-10s [%2d] 0x%04x", "reg", r.Reg, r.Value)
	}
	for _, f := range r.Fields {
		fmt.Fprintf(&b, " %s=%s", f.Name, f.Value)
	}
	return b.String()
}

// PHYDecode is the PHY's identity and standard registers (xnic phy PORT).
type PHYDecode struct {
	Port      string        `json:"port"`
	Addr      int           `json:"addr"`
	ID        string        `json:"id"`
	OUI       string        `json:"oui"`
	Vendor    string        `json:"vendor,omitempty"` // the OUI's owner, when known
	Model     int           `json:"model"`
	Revision  int           `json:"revision"`
	Link      Link          `json:"link"` // what the driver resolves
	Registers []PHYRegValue `json:"registers"`
}

// PHYAnswer is the PHY part of a response.
type PHYAnswer struct {
	Decode *PHYDecode   `json:"decode,omitempty"`
	Reg    *PHYRegValue `json:"reg,omitempty"`
}

// Link is a port's link as the driver resolved it.
type Link struct {
	Up         bool `json:"up"`
	SpeedMbps  int  `json:"speed_mbps"`
	FullDuplex bool `json:"full_duplex"`
}

func (l Link) String() string {
	if !l.Up {
		return "down"
	}
	d := "half"
	if l.FullDuplex {
		d = "full"
	}
	return fmt.Sprintf("up %d Mb/s %s duplex", l.SpeedMbps, d)
}

// PortInfo is what `xnic info` shows of a port. Vendor and DeviceID are
// "0x" and four hex digits (PCI IDs); empty for a platform device.
type PortInfo struct {
	Name     string `json:"name"`
	Bus      string `json:"bus"`
	Vendor   string `json:"vendor,omitempty"`
	DeviceID string `json:"device_id,omitempty"`
	// Compatible is a platform device's devicetree compatible string.
	Compatible string `json:"compatible,omitempty"`
	// Sim is a simulated port's model, KIND:VARIANT.
	Sim       string `json:"sim,omitempty"`
	Driver    string `json:"driver"`
	Model     string `json:"model"`
	Variant   string `json:"variant,omitempty"`
	MAC       string `json:"mac"`
	Link      Link   `json:"link"`
	PHYID     string `json:"phy_id,omitempty"`
	Queues    int    `json:"queues"`
	MaxQueues int    `json:"max_queues,omitempty"`
	// Rings are the descriptors per RX and TX ring and the most a ring may
	// have (ethtool -g); zero when the driver does not say.
	// RxMeta is the per-frame metadata the port reports to the XDP
	// metadata kfuncs (timestamp, hash, vlan): none unless the port was
	// opened asking for it (xnic run does when its program calls one).
	RxMeta   []string `json:"rx_meta,omitempty"`
	RxRing   int      `json:"rx_ring,omitempty"`
	TxRing   int      `json:"tx_ring,omitempty"`
	MaxRing  int      `json:"max_ring,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// CaptureRequest asks for the frames a port's program saw: those of the
// verdicts in Verdicts ("" or "all": every one; else a comma list of
// aborted, drop, pass, tx, redirect), of RX queue Queue (-1: every queue),
// at most Count (0: until the client hangs up), at most Snap bytes of each
// (0: whole frames).
type CaptureRequest struct {
	Verdicts string `json:"verdicts,omitempty"`
	Queue    int    `json:"queue"`
	Count    uint64 `json:"count,omitempty"`
	Snap     int    `json:"snap,omitempty"`
	// Filter is a classic BPF program (struct sock_filter, as tcpdump -dd
	// prints it) run on each frame; frames it returns 0 for are left out.
	Filter []bpf.RawInstruction `json:"filter,omitempty"`
}

// Frame is one captured frame of a capture stream.
type Frame struct {
	Nanos   int64  `json:"ts"`      // Unix nanoseconds when captured
	Queue   int    `json:"queue"`   // RX queue
	Verdict string `json:"verdict"` // XDP_DROP, ...
	Action  uint32 `json:"action"`  // the verdict's number (bpf.Action)
	Len     int    `json:"len"`     // the frame's length (Data may be shorter: snap)
	Data    []byte `json:"data"`
	// Lost is how many frames the run dropped before this one because the
	// client did not keep up.
	Lost uint64 `json:"lost,omitempty"`
}

// LoadRequest replaces the running program by Program of the ELF object
// Object ("" Program: its XDP program), keeping the maps that match.
type LoadRequest struct {
	Object  []byte `json:"object"`
	Name    string `json:"name,omitempty"` // the object's file name, for messages
	Program string `json:"program,omitempty"`
}

// ProgInfo is the running program, as `bpftool prog show` shows one.
type ProgInfo struct {
	ID       uint32   `json:"id"`
	Name     string   `json:"name"`
	Tag      string   `json:"tag"`
	Type     string   `json:"type"`
	Engine   string   `json:"engine"`
	Object   string   `json:"object"`
	LoadedAt string   `json:"loaded_at"` // RFC 3339
	Insns    int      `json:"xlated_insns"`
	Maps     []string `json:"map_names,omitempty"`
	Loads    int      `json:"loads"`   // 1 + replacements
	RunCnt   uint64   `json:"run_cnt"` // frames run since it was loaded
	// Run time, when asked for: measured over RunTimeFor (bpftool's
	// run_time_ns and run_cnt, counted only while kernel.bpf_stats_enabled
	// is on), RunTimeCnt frames taking RunTimeNanos in the program.
	RunTimeNanos uint64 `json:"run_time_ns,omitempty"`
	RunTimeCnt   uint64 `json:"run_time_cnt,omitempty"`
	RunTimeFor   string `json:"run_time_for,omitempty"`
}

// Counters are named counters in the order the driver gives them. In JSON
// they are one object, {"name": value, ...}, in that order: the shape every
// counter set of xnic's JSON has.
type Counters []nic.Counter

// MarshalJSON writes the counters as one object, in order.
func (cs Counters) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c.Name)
		b.Write(k)
		fmt.Fprintf(&b, ":%d", c.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of counters, keeping their order.
func (cs *Counters) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("control: counters: want an object")
	}
	*cs = (*cs)[:0]
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var v uint64
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("control: counter %s: %w", name, err)
		}
		*cs = append(*cs, nic.Counter{Name: name, Value: v})
	}
	_, err := dec.Token()
	return err
}
