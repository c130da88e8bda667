package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
)

// xnic phy: the PHY's registers through the family's MDIO (igb MDIC, dwmac
// MAC_MDIO_Address/Data, fec MMFR), decoded with the field names of IEEE 802.3
// clause 22 (22.2.4, 28.2.4, 40.5.1.1) as Linux's include/uapi/linux/mii.h
// spells them; single registers read and written like phytool.

func init() {
	register(&command{name: "phy", usage: portUsage + " [read REG | write REG VALUE] [--addr N] [--force] [--json]",
		summary: "decode the PHY (BMCR, BMSR, ID, advertisements, 1000BASE-T), or read or write one register (0-31, a name, or DEV.REG for clause 45)",
		run:     runPHY})
}

// phyReq is what `xnic phy` was asked to do.

// phyRegDef is one clause-22 register the command knows by name.
type phyRegDef struct {
	Name     string
	Reg      int
	ReadOnly bool // IEEE 802.3 22.2.4: RO in every PHY
	Decode   func(v uint16) []nic.Field
}

// phyFlag names one bit of a PHY register.
type phyFlag struct {
	Bit  uint
	Name string
}

func phyFlags(v uint16, fs []phyFlag) []nic.Field {
	out := make([]nic.Field, 0, len(fs))
	for _, f := range fs {
		out = append(out, nic.Field{Name: f.Name, Value: strconv.Itoa(int(v>>f.Bit) & 1)})
	}
	return out
}

var (
	bmcrFlags = []phyFlag{{15, "RESET"}, {14, "LOOPBACK"}, {12, "ANENABLE"}, {11, "PDOWN"}, {10, "ISOLATE"}, {9, "ANRESTART"}, {7, "CTST"}}
	bmsrFlags = []phyFlag{{15, "100BASE4"}, {14, "100FULL"}, {13, "100HALF"}, {12, "10FULL"}, {11, "10HALF"}, {10, "100FULL2"}, {9, "100HALF2"},
		{8, "ESTATEN"}, {6, "MFPRESUP"}, {5, "ANEGCOMPLETE"}, {4, "RFAULT"}, {3, "ANEGCAPABLE"}, {2, "LSTATUS"}, {1, "JCD"}, {0, "ERCAP"}}
	advFlags = []phyFlag{{15, "NPAGE"}, {14, "LPACK"}, {13, "RFAULT"}, {11, "PAUSE_ASYM"}, {10, "PAUSE_CAP"}, {9, "100BASE4"},
		{8, "100FULL"}, {7, "100HALF"}, {6, "10FULL"}, {5, "10HALF"}}
	anerFlags     = []phyFlag{{4, "MFAULTS"}, {3, "LPNPCAPABLE"}, {2, "NPCAPABLE"}, {1, "LCWP"}, {0, "NWAY"}}
	ctrl1000Flags = []phyFlag{{12, "MS_MANUAL"}, {11, "MS_MASTER"}, {10, "MULTIPORT"}, {9, "1000FULL"}, {8, "1000HALF"}}
	stat1000Flags = []phyFlag{{15, "MS_FAULT"}, {14, "MS_MASTER"}, {13, "LOCAL_RX_OK"}, {12, "REMOTE_RX_OK"}, {11, "LP_1000FULL"}, {10, "LP_1000HALF"}}
	estatusFlags  = []phyFlag{{15, "1000X_FULL"}, {14, "1000X_HALF"}, {13, "1000T_FULL"}, {12, "1000T_HALF"}}
)

// bmcrSpeed decodes BMCR's speed select (bit 6 MSB, bit 13 LSB).
func bmcrSpeed(v uint16) string {
	switch v>>6&1<<1 | v>>13&1 {
	case 0:
		return "10"
	case 1:
		return "100"
	case 2:
		return "1000"
	}
	return "reserved"
}

func duplexName(full bool) string {
	if full {
		return "full"
	}
	return "half"
}

// phyRegs are the clause-22 registers of IEEE 802.3 22.2.4 that the command
// decodes, in register order.
var phyRegs = []phyRegDef{
	{"BMCR", 0, false, func(v uint16) []nic.Field {
		return append(phyFlags(v, bmcrFlags), nic.Field{Name: "SPEED", Value: bmcrSpeed(v)}, nic.Field{Name: "DUPLEX", Value: duplexName(v&(1<<8) != 0)})
	}},
	{"BMSR", 1, true, func(v uint16) []nic.Field { return phyFlags(v, bmsrFlags) }},
	{"PHYID1", 2, true, func(v uint16) []nic.Field {
		return []nic.Field{{Name: "OUI_3_18", Value: fmt.Sprintf("0x%04x", v)}}
	}},
	{"PHYID2", 3, true, func(v uint16) []nic.Field {
		return []nic.Field{{Name: "OUI_19_24", Value: fmt.Sprintf("0x%02x", v>>10)}, {Name: "MODEL", Value: fmt.Sprintf("0x%02x", v>>4&0x3F)},
			{Name: "REV", Value: strconv.Itoa(int(v & 0xF))}}
	}},
	{"ADVERTISE", 4, false, advDecode},
	{"LPA", 5, true, advDecode},
	{"EXPANSION", 6, true, func(v uint16) []nic.Field { return phyFlags(v, anerFlags) }},
	{"CTRL1000", 9, false, func(v uint16) []nic.Field {
		return append(phyFlags(v, ctrl1000Flags), nic.Field{Name: "TEST_MODE", Value: strconv.Itoa(int(v >> 13))})
	}},
	{"STAT1000", 10, true, func(v uint16) []nic.Field {
		return append(phyFlags(v, stat1000Flags), nic.Field{Name: "IDLE_ERRORS", Value: strconv.Itoa(int(v & 0xFF))})
	}},
	{"ESTATUS", 15, true, func(v uint16) []nic.Field { return phyFlags(v, estatusFlags) }},
}

// advDecode decodes ADVERTISE and LPA (IEEE 802.3 28.2.4.1.3, annex 28B).
func advDecode(v uint16) []nic.Field {
	sel := strconv.Itoa(int(v & 0x1F))
	if v&0x1F == 1 {
		sel = "802.3"
	}
	return append(phyFlags(v, advFlags), nic.Field{Name: "SELECTOR", Value: sel})
}

// phyRegAliases are other names people type for the same registers.
var phyRegAliases = map[string]string{"ANAR": "ADVERTISE", "ANLPAR": "LPA", "ANER": "EXPANSION", "GBCR": "CTRL1000", "GBSR": "STAT1000",
	"ESR": "ESTATUS", "BMCR": "BMCR", "BMSR": "BMSR", "ID1": "PHYID1", "ID2": "PHYID2"}

func phyRegByName(name string) (phyRegDef, bool) {
	n := strings.ToUpper(name)
	if a, ok := phyRegAliases[n]; ok {
		n = a
	}
	for _, d := range phyRegs {
		if d.Name == n {
			return d, true
		}
	}
	return phyRegDef{}, false
}

func phyRegByNum(reg int) (phyRegDef, bool) {
	for _, d := range phyRegs {
		if d.Reg == reg {
			return d, true
		}
	}
	return phyRegDef{}, false
}

// parsePHYReg reads a register: a clause-22 number (0-31, decimal or 0x
// hex), a name (BMCR, ADVERTISE or ANAR, ...), or DEV.REG for clause 45.
func parsePHYReg(s string) (phyRegSpec, error) {
	if d, ok := phyRegByName(s); ok {
		return phyRegSpec{Reg: d.Reg}, nil
	}
	if dev, reg, ok := strings.Cut(s, "."); ok {
		dv, err1 := strconv.ParseUint(dev, 0, 5)
		rv, err2 := strconv.ParseUint(reg, 0, 16)
		if err1 != nil || err2 != nil {
			return phyRegSpec{}, usageErrorf("PHY register %q: DEV.REG wants an MMD of 0 to 31 and a register of 0 to 0xffff", s)
		}
		return phyRegSpec{C45: true, Dev: int(dv), Reg: int(rv)}, nil
	}
	v, err := strconv.ParseUint(s, 0, 5)
	if err != nil {
		names := make([]string, len(phyRegs))
		for i, d := range phyRegs {
			names[i] = d.Name
		}
		return phyRegSpec{}, usageErrorf("PHY register %q: want 0 to 31, DEV.REG (clause 45) or a name (%s)", s, strings.Join(names, ", "))
	}
	return phyRegSpec{Reg: int(v)}, nil
}

func parsePHYArgs(pos []string, req *phyReq) (string, error) {
	bdf := ""
	if len(pos) > 0 && pos[0] != "read" && pos[0] != "write" {
		bdf, pos = pos[0], pos[1:]
	}
	if len(pos) == 0 {
		return bdf, nil
	}
	req.Op = pos[0]
	want := map[string]int{"read": 2, "write": 3}[req.Op]
	if len(pos) != want {
		return "", usageErrorf("phy %s: want %s", req.Op, map[string]string{"read": "read REG", "write": "write REG VALUE"}[req.Op])
	}
	var err error
	if req.Reg, err = parsePHYReg(pos[1]); err != nil {
		return "", err
	}
	if req.Op == "write" {
		v, err := strconv.ParseUint(pos[2], 0, 16)
		if err != nil {
			return "", usageErrorf("PHY register value %q: want 0 to 0xffff", pos[2])
		}
		req.Value = uint16(v)
	}
	return bdf, nil
}

func runPHY(args []string, stdout, stderr io.Writer) error {
	var (
		o      portOptions
		asJSON bool
		req    = phyReq{Addr: -1}
	)
	fs := newFlags("phy", stderr)
	portFlags(fs, &o, false)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&req.Force, "force", false, "write a register IEEE 802.3 defines as read-only")
	fs.IntVar(&req.Addr, "addr", -1, "MDIO address of a clause-45 access (default: the port's PHY)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	bdf, err := parsePHYArgs(pos, &req)
	if err != nil {
		return err
	}
	if req.Addr != -1 && !req.Reg.C45 {
		return usageErrorf("--addr is for clause-45 accesses (DEV.REG); clause-22 accesses go to the port's PHY")
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok {
		return phyViaControl(path, req, asJSON, stdout)
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	err = phyExec(op, req, asJSON, stdout)
	return errors.Join(err, op.Close())
}

// phyExec runs req on an open port's PHY and prints the result.
func phyExec(op *openedPort, req phyReq, asJSON bool, w io.Writer) error {
	pa, ok := op.Port.(nic.PHYAccess)
	if !ok {
		return fmt.Errorf("%s: the %s driver gives no access to its PHY: %w", op.Name(), op.Family, nic.ErrNotSupported)
	}
	switch req.Op {
	case "":
		d, err := phyDecode(op, pa)
		if err != nil {
			return err
		}
		return printPHYDecode(w, d, asJSON)
	case "read":
		v, err := phyRead(op, pa, req)
		if err != nil {
			return err
		}
		return printPHYReg(w, phyValue(req, pa, v), asJSON)
	case "write":
		if err := phyWrite(op, pa, req); err != nil {
			return err
		}
		return nil
	}
	return usageErrorf("phy: unknown operation %q (read or write)", req.Op)
}

// phyC45 returns the port's clause-45 access, or an error saying the
// family's MDIO has none.
func phyC45(op *openedPort) (nic.PHYAccessC45, error) {
	c, ok := op.Port.(nic.PHYAccessC45)
	if !ok {
		return nil, fmt.Errorf("%s: the %s driver sends clause-22 MDIO frames only (no DEV.REG access): %w", op.Name(), op.Family, nic.ErrNotSupported)
	}
	return c, nil
}

func c45Addr(r phyReq, pa nic.PHYAccess) int {
	if r.Addr >= 0 {
		return r.Addr
	}
	return pa.PHYAddr()
}

func phyRead(op *openedPort, pa nic.PHYAccess, req phyReq) (uint16, error) {
	if !req.Reg.C45 {
		return pa.ReadPHY(req.Reg.Reg)
	}
	c, err := phyC45(op)
	if err != nil {
		return 0, err
	}
	return c.ReadPHYC45(c45Addr(req, pa), req.Reg.Dev, req.Reg.Reg)
}

func phyWrite(op *openedPort, pa nic.PHYAccess, req phyReq) error {
	if req.Reg.C45 {
		c, err := phyC45(op)
		if err != nil {
			return err
		}
		return c.WritePHYC45(c45Addr(req, pa), req.Reg.Dev, req.Reg.Reg, req.Value)
	}
	if d, ok := phyRegByNum(req.Reg.Reg); ok && d.ReadOnly && !req.Force {
		return fmt.Errorf("%s (register %d) is read-only in IEEE 802.3 22.2.4; the PHY ignores the write (--force sends it anyway)", d.Name, d.Reg)
	}
	return pa.WritePHY(req.Reg.Reg, req.Value)
}

func phyValue(req phyReq, pa nic.PHYAccess, v uint16) phyRegValue {
	if req.Reg.C45 {
		dev := req.Reg.Dev
		return phyRegValue{Addr: c45Addr(req, pa), MMD: &dev, Reg: req.Reg.Reg, Value: v}
	}
	rv := phyRegValue{Addr: pa.PHYAddr(), Reg: req.Reg.Reg, Value: v}
	if d, ok := phyRegByNum(req.Reg.Reg); ok {
		rv.Name, rv.Fields = d.Name, d.Decode(v)
	}
	return rv
}

func printPHYReg(w io.Writer, r phyRegValue, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	_, err := fmt.Fprintln(w, r)
	return err
}

// phyDecode reads the standard registers once each, in register order.
// BMSR's link status latches low (22.2.4.2.13): this read clears a latched
// drop, as any BMSR read does. The 1000BASE-T and extended status registers
// exist only when BMSR says so (ESTATEN, 22.2.4.2.16).
func phyDecode(op *openedPort, pa nic.PHYAccess) (phyDecodeOut, error) {
	out := phyDecodeOut{Port: op.Name(), Addr: pa.PHYAddr()}
	var bmsr, id1, id2 uint16
	for _, d := range phyRegs {
		if d.Reg >= 9 && bmsr&(1<<8) == 0 {
			continue
		}
		v, err := pa.ReadPHY(d.Reg)
		if err != nil {
			return out, fmt.Errorf("reading %s: %w", d.Name, err)
		}
		switch d.Reg {
		case 1:
			bmsr = v
		case 2:
			id1 = v
		case 3:
			id2 = v
		}
		out.Registers = append(out.Registers, phyRegValue{Name: d.Name, Addr: out.Addr, Reg: d.Reg, Value: v, Fields: d.Decode(v)})
	}
	out.ID = fmt.Sprintf("0x%04x%04x", id1, id2)
	out.OUI = phyOUI(id1, id2)
	out.Model, out.Revision = int(id2>>4&0x3F), int(id2&0xF)
	l := op.Link()
	out.Link = linkInfo{Up: l.Up, SpeedMbps: l.SpeedMbps, FullDuplex: l.FullDuplex}
	return out, nil
}

// phyOUI assembles the OUI from PHYID1 (OUI bits 3-18) and PHYID2 15:10 (bits
// 19-24), IEEE 802.3 22.2.4.3.1, and prints it as three octets: the
// 88E1111's 0x0141:0x0cc0 gives Marvell's 00:50:43, Intel's IGP PHY's
// 0x02a8:0x0390 Intel's 00:aa:00. (Some vendors' datasheets print their OUI
// bit-reversed within each octet; the register bits are what is shown.)
func phyOUI(id1, id2 uint16) string {
	oui := uint32(id1)<<6 | uint32(id2>>10)
	return fmt.Sprintf("%02x:%02x:%02x", oui>>16&0xFF, oui>>8&0xFF, oui&0xFF)
}

func printPHYDecode(w io.Writer, d phyDecodeOut, asJSON bool) error {
	if asJSON {
		return writeJSON(w, d)
	}
	fmt.Fprintf(w, "port:   %s\n", d.Port)
	fmt.Fprintf(w, "phy:    address %d, id %s (OUI %s, model 0x%02x, revision %d)\n", d.Addr, d.ID, d.OUI, d.Model, d.Revision)
	fmt.Fprintf(w, "link:   %s\n", d.Link)
	for _, r := range d.Registers {
		fmt.Fprintln(w, r)
	}
	return nil
}

// phyViaControl asks the run holding the port to run req on its PHY.
func phyViaControl(path string, req phyReq, asJSON bool, w io.Writer) error {
	resp, err := control.Call(path, control.Request{Cmd: "phy", PHY: &req, Force: req.Force})
	switch {
	case err != nil:
		return err
	case req.Op == "write":
		return nil
	case resp.PHY != nil && resp.PHY.Decode != nil:
		return printPHYDecode(w, *resp.PHY.Decode, asJSON)
	case resp.PHY != nil && resp.PHY.Reg != nil:
		return printPHYReg(w, *resp.PHY.Reg, asJSON)
	}
	return fmt.Errorf("the run holding %s sent no PHY registers", resp.Port)
}

// The PHY's requests and answers, as the control protocol carries them.
type (
	phyReq       = control.PHYRequest
	phyRegSpec   = control.PHYReg
	phyRegValue  = control.PHYRegValue
	phyDecodeOut = control.PHYDecode
)
