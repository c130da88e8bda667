package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/physmem"
	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

// famCase is one simulated model and what its commands must show.
type famCase struct {
	sim       string
	driver    string
	model     string // prefix of info's model
	variant   string // substring of info's variant
	maxQueues int
	phyID     string
	// A register and one decoded field of it, as the brought-up port has
	// them; and the same field as the model has it at power-on (regs --raw).
	reg, field, up, raw string
	counter             string // a counter only this family's stats have
}

var famCases = []famCase{
	{sim: "igb", driver: "igb", model: "82576", maxQueues: 16, phyID: "",
		reg: "RCTL", field: "EN", up: "1", raw: "0", counter: "rx_missed_errors"},
	{sim: "igb:i211", driver: "igb", model: "I211", maxQueues: 2, phyID: "0x01410c00",
		reg: "RCTL", field: "EN", up: "1", raw: "0", counter: "rx_missed_errors"},
	{sim: "dwmac", driver: "dwmac", model: "Alder Lake-S mGbE", variant: "intel-mgbe, DWC EQoS 5.20", maxQueues: 4, phyID: "0x01410dd0",
		reg: "MAC_CONFIG", field: "RE", up: "1", raw: "0", counter: "mmc_rx_framecount_gb"},
	{sim: "dwmac:imx8mp", driver: "dwmac", model: "i.MX8M Plus EQOS", variant: "imx8mp-eqos, DWC EQoS 5.10, 34-bit DMA", maxQueues: 5, phyID: "0x001cc916",
		reg: "MAC_CONFIG", field: "RE", up: "1", raw: "0", counter: "mmc_rx_framecount_gb"},
	{sim: "fec", driver: "fec", model: "i.MX8M Plus ENET", variant: "fsl,imx8mp-fec", maxQueues: 3, phyID: "0x001cc916",
		reg: "ECR", field: "ETHEREN", up: "1", raw: "0", counter: "IEEE_rx_frame_ok"},
	{sim: "fec:imx6", driver: "fec", model: "i.MX6Q ENET", variant: "fsl,imx6q-fec", maxQueues: 1, phyID: "0x004dd074",
		reg: "ECR", field: "ETHEREN", up: "1", raw: "0", counter: "IEEE_rx_frame_ok"},
}

// TestFamilyInfo: info shows every family's model, variant, MAC, link, PHY id
// and queues, as JSON and as text.
func TestFamilyInfo(t *testing.T) {
	for _, c := range famCases {
		t.Run(c.sim, func(t *testing.T) {
			rc, out, errs := runPort(t, "info", "--sim", c.sim, "--json")
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			var pi portInfo
			if err := json.Unmarshal([]byte(out), &pi); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if pi.Driver != c.driver || !strings.HasPrefix(pi.Model, c.model) || !strings.Contains(pi.Variant, c.variant) {
				t.Errorf("driver %q model %q variant %q: want %s, %s..., ...%s...", pi.Driver, pi.Model, pi.Variant, c.driver, c.model, c.variant)
			}
			if !pi.Link.Up || pi.Link.SpeedMbps != 1000 || !pi.Link.FullDuplex {
				t.Errorf("link %+v: want up 1000 full", pi.Link)
			}
			if pi.MAC != "02:00:00:00:00:01" || pi.Queues != 1 || pi.MaxQueues != c.maxQueues {
				t.Errorf("MAC %s queues %d of %d: want the model's MAC, 1 of %d", pi.MAC, pi.Queues, pi.MaxQueues, c.maxQueues)
			}
			if pi.PHYID == "" || pi.PHYID == "0x00000000" || (c.phyID != "" && pi.PHYID != c.phyID) {
				t.Errorf("PHY id %q, want %q", pi.PHYID, c.phyID)
			}
			rc, out, errs = runPort(t, "info", "--sim", c.sim)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			for _, want := range []string{"driver:  " + c.driver, "model:   " + c.model, "link:    up 1000 Mb/s full duplex", "mac:     02:00:00:00:00:01"} {
				if !strings.Contains(out, want) {
					t.Errorf("text lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// regsJSON is the JSON shape all three drivers' dumps share.
type regsJSON struct {
	Registers []struct {
		Name   string `json:"name"`
		Offset uint32 `json:"offset"`
		Value  uint32 `json:"value"`
		Fields []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"fields"`
	} `json:"registers"`
}

func (d regsJSON) field(reg, field string) (string, bool) {
	for _, r := range d.Registers {
		if r.Name != reg {
			continue
		}
		for _, f := range r.Fields {
			if f.Name == field {
				return f.Value, true
			}
		}
	}
	return "", false
}

// TestFamilyRegs: regs prints the family's own dump (its register names and
// decoded fields), as text and JSON; --raw shows the power-on state.
func TestFamilyRegs(t *testing.T) {
	for _, c := range famCases {
		t.Run(c.sim, func(t *testing.T) {
			rc, out, errs := runPort(t, "regs", "--sim", c.sim)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			if !strings.Contains(out, c.reg) || !strings.Contains(out, " "+c.field+"="+c.up) {
				t.Errorf("text dump lacks %s with %s=%s:\n%s", c.reg, c.field, c.up, out)
			}
			for _, other := range famCases {
				if other.driver != c.driver && strings.Contains(out, other.reg+" ") {
					t.Errorf("%s dump shows %s's register %s", c.driver, other.driver, other.reg)
				}
			}
			for _, raw := range []bool{false, true} {
				args := []string{"regs", "--sim", c.sim, "--json"}
				want := c.up
				if raw {
					args, want = append(args, "--raw"), c.raw
				}
				rc, out, errs := runPort(t, args...)
				if rc != 0 {
					t.Fatalf("%v: rc %d: %s", args, rc, errs)
				}
				var d regsJSON
				if err := json.Unmarshal([]byte(out), &d); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				if v, ok := d.field(c.reg, c.field); !ok || v != want {
					t.Errorf("%v: %s.%s = %q (present %v), want %q", args, c.reg, c.field, v, ok, want)
				}
			}
		})
	}
}

// TestFamilyStats: stats lists the family's counters, and they count the
// frames that went through the port.
func TestFamilyStats(t *testing.T) {
	for _, c := range famCases {
		t.Run(c.sim, func(t *testing.T) {
			rc, out, errs := runPort(t, "stats", "--sim", c.sim)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			for _, n := range []string{"rx_packets", "tx_packets", c.counter} {
				if !strings.Contains(out, n) {
					t.Errorf("stats lack %s:\n%s", n, out)
				}
			}
			// Traffic both ways through the port's wire, then the counters.
			op, err := openPort("", portOptions{Sim: c.sim, RequireLink: true})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			const n = 5
			f := pktgen.DefaultFlow()
			f.DstMAC = op.MAC()
			frame, err := f.UDP()
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				if err := op.Sim.Peer.Send(frame); err != nil {
					t.Fatal(err)
				}
			}
			got := 0
			bufs := make([]*dma.Buf, 8)
			for end := time.Now().Add(2 * time.Second); got < n && time.Now().Before(end); {
				k := op.RxQueue(0).Recv(bufs)
				if k > 0 && op.TxQueue(0).Send(bufs[:k]) != k {
					t.Fatal("TX ring full")
				}
				got += k
				time.Sleep(time.Millisecond)
			}
			for end := time.Now().Add(2 * time.Second); op.TxQueue(0).Free() < 8 && time.Now().Before(end); {
				op.TxQueue(0).Reclaim()
				time.Sleep(time.Millisecond)
			}
			op.TxQueue(0).Reclaim()
			var js bytes.Buffer
			if err := printStats(&js, op.Name(), op.Stats(), true); err != nil {
				t.Fatal(err)
			}
			var s struct {
				Counters map[string]uint64 `json:"counters"`
			}
			if err := json.Unmarshal(js.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			vals := s.Counters
			if got != n || vals["rx_packets"] != n || vals["tx_packets"] != n {
				t.Errorf("received %d of %d; counters rx_packets %d tx_packets %d: want %d each", got, n, vals["rx_packets"], vals["tx_packets"], n)
			}
		})
	}
}

// TestFamilyRun: `xnic run` on two simulated ports of each family drops every
// frame the generator sends, and says so in its final JSON counters.
func TestFamilyRun(t *testing.T) {
	obj := examplePath(t, "xdp_drop_count")
	for _, c := range famCases[2:] { // igb: run_test.go
		t.Run(c.sim, func(t *testing.T) {
			rc, out, errs := runPort(t, "run", "--sim", c.sim+":2", "--prog", obj, "--duration", "300ms", "--interval", "100ms",
				"--tap", "none", "--json")
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var final struct {
				Ports []struct {
					Name     string            `json:"name"`
					Counters map[string]uint64 `json:"counters"`
				} `json:"ports"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil {
				t.Fatalf("%v in %q", err, lines[len(lines)-1])
			}
			if len(final.Ports) != 2 {
				t.Fatalf("%d ports, want 2", len(final.Ports))
			}
			p := final.Ports[0].Counters
			if p["rx_packets"] == 0 || p["rx_xdp_drop"] != p["rx_packets"] {
				t.Errorf("port 0 counters %v: want frames received, every one dropped", p)
			}
			if strings.Contains(errs, "fault") || strings.Contains(errs, "not back") {
				t.Errorf("stderr: %s", errs)
			}
		})
	}
}

// TestFamilyDemo: the demo runs its four programs on every family, every
// frame getting the phase's verdict.
func TestFamilyDemo(t *testing.T) {
	for _, fam := range []string{"dwmac", "fec:imx6"} {
		t.Run(fam, func(t *testing.T) {
			rc, out, errs := runPort(t, "demo", "--family", fam, "--phase", "150ms", "--json")
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			var res struct {
				Phases []demoResult `json:"phases"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if len(res.Phases) != 4 {
				t.Fatalf("%d phases", len(res.Phases))
			}
			for _, r := range res.Phases {
				want := r.Verdicts
				if r.Verdict == "XDP_DROP" {
					want = 0
				}
				if r.Rx == 0 || r.Verdicts != r.Rx || r.Aborted != 0 || r.Errors != 0 || r.WireOut != want {
					t.Errorf("%s: %+v", r.Phase, r)
				}
			}
		})
	}
	rc, out, _ := runPort(t, "demo", "--family", "fec", "--phase", "100ms")
	if rc != 0 || !strings.Contains(out, "two simulated fec:imx8mp ports") {
		t.Errorf("text demo rc %d:\n%s", rc, out)
	}
}

// TestFamilyPktgen: pktgen puts every frame on the wire of each family's model.
func TestFamilyPktgen(t *testing.T) {
	for _, sim := range []string{"dwmac:imx8mp", "fec"} {
		rc, out, errs := runPort(t, "pktgen", "--sim", sim, "--count", "3000", "--json")
		if rc != 0 {
			t.Fatalf("%s: rc %d: %s", sim, rc, errs)
		}
		var r dpPktgenResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Sent != 3000 || r.Wire != 3000 {
			t.Errorf("%s: %+v: want 3000 frames sent and on the wire", sim, r)
		}
	}
}

// TestFamilyUsageErrors: unknown families, variants and platform devices are
// usage errors (exit 2) that list the choices.
func TestFamilyUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"info", "--sim", "e1000"}, []string{`no simulated "e1000"`, "igb (82576, i350, i210, i211, 82576-serdes, i350-serdes, i210-serdes)", "dwmac (intel, imx8mp)", "fec (imx8mp, imx6)"}},
		{[]string{"regs", "--sim", "fec:imx7"}, []string{`no fec variant "imx7"`, "imx8mp, imx6"}},
		{[]string{"stats", "--sim", "dwmac:bogus"}, []string{"intel, imx8mp"}},
		{[]string{"info", "--sim", "igb:2"}, []string{"opens one port"}},
		{[]string{"info", "--sim", "igb:0"}, []string{"from 1 to 16"}},
		{[]string{"run", "--sim", "ixgbe:2", "--prog", "x.o"}, []string{"igb (82576, i350, i210, i211, 82576-serdes, i350-serdes, i210-serdes)"}},
		{[]string{"pktgen", "--sim", "fec:imx9"}, []string{"imx8mp, imx6"}},
		{[]string{"demo", "--family", "e1000"}, []string{"--family", "dwmac (intel, imx8mp)"}},
		{[]string{"demo", "--family", "fec:2"}, []string{"two ports"}},
		{[]string{"info", "--platform", "fec"}, []string{"NAME@ADDR", "eqos@0x30bf0000"}},
		{[]string{"info", "--platform", "fec@nowhere"}, []string{"not a register window address"}},
		{[]string{"info", "--platform", "fsl,imx9-fec@0x30be0000"}, []string{"no device xnic drives", "fsl,imx8mp-fec", "nxp,imx8mp-dwmac-eqos"}},
		{[]string{"info", "--platform", "fec@0x30be0000", "--sim", "fec"}, []string{"not several"}},
		{[]string{"run", "--platform", "fec@0x30be0000", "--sim", "fec", "--prog", "x.o"}, []string{"give one of"}},
	} {
		rc, _, errs := runPort(t, c.args...)
		if rc != 2 {
			t.Errorf("%v: rc %d, want 2 (stderr %q)", c.args, rc, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
	}
	var help bytes.Buffer
	run([]string{"help"}, &help, &bytes.Buffer{})
	if !strings.Contains(help.String(), "--sim KIND[:VARIANT]") || !strings.Contains(help.String(), "--platform NAME@ADDR") ||
		!strings.Contains(help.String(), "igb (82576, i350, i210, i211, 82576-serdes, i350-serdes, i210-serdes); dwmac (intel, imx8mp); fec (imx8mp, imx6)") {
		t.Errorf("help does not document --sim KIND[:VARIANT] and --platform:\n%s", help.String())
	}
}

func TestParseSim(t *testing.T) {
	for _, c := range []struct {
		in   string
		want simSpec
	}{
		{"igb", simSpec{family("igb"), "82576", 1}},
		{"igb:2", simSpec{family("igb"), "82576", 2}},
		{"igb:82576:3", simSpec{family("igb"), "82576", 3}},
		{"igb:i211", simSpec{family("igb"), "i211", 1}},
		{"dwmac", simSpec{family("dwmac"), "intel", 1}},
		{"dwmac:imx8mp", simSpec{family("dwmac"), "imx8mp", 1}},
		{"dwmac/imx8mp:2", simSpec{family("dwmac"), "imx8mp", 2}},
		{"fec", simSpec{family("fec"), "imx8mp", 1}},
		{"fec:imx6:4", simSpec{family("fec"), "imx6", 4}},
	} {
		got, err := parseSim(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseSim(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", ":", "fec:imx6:imx8mp", "igb:2:3", "igb:17", "fec:x:2", "a:b:c:d"} {
		if _, err := parseSim(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseSim(%q): %v, want a usage error", bad, err)
		}
	}
}

// noHugePages is a page source with no pages, as a kernel with none reserved.
type noHugePages struct{}

func (noHugePages) PageSize() int { return 2 << 20 }
func (noHugePages) Map(int) ([]byte, error) {
	return nil, physmem.ErrNoHugePages
}
func (noHugePages) Unmap([]byte) error               { return nil }
func (noHugePages) Phys([]byte, int) (uint64, error) { return 0, errors.New("no pages") }

// TestPlatformDevMemErrors: --platform surfaces why /dev/mem cannot be used,
// without touching the real one (platformMemPath points elsewhere).
func TestPlatformDevMemErrors(t *testing.T) {
	dir := t.TempDir()
	platformPages = noHugePages{}
	t.Cleanup(func() { platformMemPath, platformPages = "", nil })

	platformMemPath = filepath.Join(dir, "no-such-mem")
	rc, _, errs := runPort(t, "info", "--platform", "fec@0x30be0000")
	if rc != 1 || !strings.Contains(errs, "--platform fec@0x30be0000") || !strings.Contains(errs, "fsl,imx8mp-fec at 0x30be0000") ||
		!strings.Contains(errs, "CONFIG_DEVMEM") {
		t.Errorf("missing /dev/mem: rc %d, stderr %q", rc, errs)
	}
	rc, _, errs = runPort(t, "regs", "--raw", "--platform", "eqos@0x30bf0000")
	if rc != 1 || !strings.Contains(errs, "nxp,imx8mp-dwmac-eqos at 0x30bf0000") || !strings.Contains(errs, "no-such-mem") {
		t.Errorf("regs --raw, missing /dev/mem: rc %d, stderr %q", rc, errs)
	}

	// A path the process may not open read-write: a mode-0 file for a
	// normal user; for root, a read-only sysfs attribute (sysfs refuses write
	// opens of it even to root).
	denied := filepath.Join(dir, "mem")
	if os.Geteuid() == 0 {
		denied = "/sys/kernel/notes"
		if f, err := os.OpenFile(denied, os.O_RDWR, 0); err == nil || !errors.Is(err, os.ErrPermission) {
			if f != nil {
				f.Close()
			}
			t.Skipf("running as root and %s does not refuse a read-write open (%v): no path to test the permission error with", denied, err)
		}
	} else if err := os.WriteFile(denied, nil, 0); err != nil {
		t.Fatal(err)
	}
	platformMemPath = denied
	platformEUID = func() int { return 1000 }
	t.Cleanup(func() { platformEUID = os.Geteuid })
	rc, _, errs = runPort(t, "stats", "--platform", "fec@0x30be0000")
	if rc != 1 || !strings.Contains(errs, "no permission to open /dev/mem") || !strings.Contains(errs, "run as root") ||
		!strings.Contains(errs, "xnic runs as uid 1000") {
		t.Errorf("/dev/mem not permitted: rc %d, stderr %q", rc, errs)
	}
	// Root who is refused anyway gets no uid hint.
	platformEUID = func() int { return 0 }
	rc, _, errs = runPort(t, "info", "--platform", "fsl,imx8mm-fec@0x30be0000")
	if rc != 1 || !strings.Contains(errs, "no permission") || strings.Contains(errs, "runs as uid") {
		t.Errorf("/dev/mem refused to root: rc %d, stderr %q", rc, errs)
	}
}

// TestPlatformPicksDriver: --platform maps the window (here from a sparse file
// standing in for /dev/mem, all registers zero) and hands it to the driver its
// name selects, whose bring-up then fails on the empty window in its own
// words: fec finds no PHY on MDIO, dwmac no DWC core version. The variant's
// quirks come with the compatible string: an i.MX8MP FEC resets by writing ECR
// = 0 (multi-queue parts), an i.MX6Q by ECR.RESET, which memory never clears.
func TestPlatformPicksDriver(t *testing.T) {
	mem := filepath.Join(t.TempDir(), "mem")
	f, err := os.Create(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0x30c00000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	platformMemPath, platformPages = mem, noHugePages{}
	t.Cleanup(func() { platformMemPath, platformPages = "", nil })
	for _, c := range []struct{ dev, want string }{
		{"fec@0x30be0000", "fec: 30be0000.ethernet: PHY: no PHY answers at MDIO address 1"},
		{"fsl,imx6q-fec@0x30be0000", "fec: 30be0000.ethernet: ECR.RESET still set"},
		{"eqos@0x30bf0000", "dwmac: 30bf0000.ethernet: MAC_Version SNPSVER 0x00"},
	} {
		rc, _, errs := runPort(t, "info", "--platform", c.dev, "--link-timeout", "10ms")
		if rc != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: rc %d, stderr %q, want %q", c.dev, rc, errs, c.want)
		}
	}
}

// TestListMarksDWMAC: list names the family of Intel mGbE functions from the
// dwmac driver's own table, and not of Intel IDs absent from it.
func TestListMarksDWMAC(t *testing.T) {
	f := vfiotest.New(t)
	f.AddDriver("vfio-pci", "intel-eth-pci")
	f.AddDevice(vfiotest.Device{Addr: "0000:00:1e.4", Vendor: 0x8086, Device: 0x7aac, Class: 0x020000, Driver: "intel-eth-pci", Group: 4})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:1e.5", Vendor: 0x8086, Device: 0x4b31, Class: 0x020000, Driver: "intel-eth-pci", Group: 5})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:1e.6", Vendor: 0x8086, Device: 0x4b33, Class: 0x020000, Group: 6})
	rc, out, errs := runCmd("list", "--json", "--sysfs", f.Root)
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var es []listEntry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Address] = e.Xnic
	}
	want := map[string]string{"0000:00:1e.4": "dwmac", "0000:00:1e.5": "dwmac", "0000:00:1e.6": ""}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("%s: xnic %q, want %q (all: %v)", a, got[a], w, got)
		}
	}
	for _, m := range dwmac.Models() {
		if m.Device == 0 {
			continue
		}
		if fam, ok := supported(dwmac.VendorIntel, m.Device); !ok || fam != family("dwmac") {
			t.Errorf("%04x (%s): supported = %q %v", m.Device, m.Name, fam, ok)
		}
	}
}
