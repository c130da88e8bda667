package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

func TestReferenceProgram(t *testing.T) {
	c := loadTestdata(t, "parse.o", nil)
	p, err := c.DefaultXDP()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "xdp_parse" || p.Section() != "xdp" {
		t.Fatalf("program %s section %s", p.Name(), p.Section())
	}
	r := NewRunner(0)
	arp := udpFrame(53)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	frag := udpFrame(9)
	frag[14+6] = 0x20 // more fragments
	for _, tc := range []struct {
		name string
		pkt  []byte
		want Action
	}{
		{"udp discard", udpFrame(9), ActionDrop},
		{"udp dns", udpFrame(53), ActionPass},
		{"arp", arp, ActionPass},
		{"fragment", frag, ActionPass},
		{"truncated ip", udpFrame(9)[:30], ActionDrop},
		{"truncated udp", udpFrame(9)[:40], ActionDrop},
		{"runt", []byte{1, 2, 3}, ActionDrop},
	} {
		f := newFrame(tc.pkt)
		if got := r.Run(p, f); got != tc.want {
			t.Errorf("%s: %v, want %v (fault %v)", tc.name, got, tc.want, r.Fault())
		}
	}
	if !strings.Contains(strings.ToLower(p.Disasm()), "exit") {
		t.Errorf("disassembly lacks exit:\n%s", p.Disasm())
	}
}

func TestFeaturesMain(t *testing.T) {
	c := loadTestdata(t, "features.o", nil)
	p, err := c.Program("xdp_main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DefaultXDP(); err == nil || !strings.Contains(err.Error(), "xdp_jump") {
		t.Errorf("DefaultXDP on a multi-program object: %v, want an error listing the programs", err)
	}
	if _, err := c.Program("nope"); !errors.Is(err, ErrNoProgram) {
		t.Errorf("Program(nope): %v", err)
	}
	r := NewRunner(1)
	pkt := udpFrame(9)
	for i := 0; i < 3; i++ {
		f := newFrame(pkt)
		if got := r.Run(p, f); got != ActionPass {
			t.Fatalf("run %d: %v (fault %v)", i, got, r.Fault())
		}
	}
	counters, err := c.Map("counters")
	if err != nil {
		t.Fatal(err)
	}
	if got := mapU64(t, counters, 0); got != 3 {
		t.Errorf("counters[0] = %d, want 3 runs", got)
	}
	sum := uint64(0)
	for _, b := range pkt[:16] {
		sum += uint64(b)
	}
	if got := mapU64(t, counters, 1); got != sum {
		t.Errorf("counters[1] = %d, want byte sum %d (bpf-to-bpf call)", got, sum)
	}
	if got := mapU64(t, counters, 2); got != 45*1000+10 {
		t.Errorf("counters[2] = %d, want 45010 (bpf_loop: sum 0..9, 10 calls)", got)
	}
	if got := mapU64(t, counters, 3); got != 0x1234 {
		t.Errorf("counters[3] = %#x, want .data magic 0x1234", got)
	}
	bss, err := c.Map(".bss")
	if err != nil {
		t.Fatal(err)
	}
	if got := mapU64(t, bss, 0); got != 3 {
		t.Errorf(".bss runs = %d, want 3", got)
	}
	seen, _ := c.Map("seen")
	if v := seen.Lookup(u32key(uint32(pkt[0])), 0); v == nil || binary.LittleEndian.Uint32(v) != 1 {
		t.Errorf("seen[%d] = %x, want 1", pkt[0], v)
	}
	// The control plane changes .rodata: the program's verdict follows.
	ro, _ := c.Map(".rodata")
	val := append([]byte(nil), ro.Lookup(u32key(0), 0)...)
	if len(val) < 4 || binary.LittleEndian.Uint32(val) != uint32(ActionPass) {
		t.Fatalf(".rodata = %x, want cfg_action XDP_PASS first", val)
	}
	binary.LittleEndian.PutUint32(val, uint32(ActionDrop))
	if err := ro.Update(u32key(0), val, maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	if got := r.Run(p, newFrame(pkt)); got != ActionDrop {
		t.Errorf("after .rodata cfg_action=DROP: %v", got)
	}
}

func TestTailCall(t *testing.T) {
	c := loadTestdata(t, "features.o", nil)
	jump, _ := c.Program("xdp_jump")
	tx, _ := c.Program("xdp_tx")
	r := NewRunner(0)
	if got := r.Run(jump, newFrame(udpFrame(1))); got != ActionDrop {
		t.Fatalf("empty slot: %v, want XDP_DROP (fall through)", got)
	}
	if err := c.SetTailCall("jumps", 0, tx); err != nil {
		t.Fatal(err)
	}
	if got := r.Run(jump, newFrame(udpFrame(1))); got != ActionTX {
		t.Fatalf("slot 0 = xdp_tx: %v, want XDP_TX (fault %v)", got, r.Fault())
	}
	counters, _ := c.Map("counters")
	if got := mapU64(t, counters, 4); got != 1 {
		t.Errorf("xdp_tx ran %d times, want 1", got)
	}
	if err := c.SetTailCall("counters", 0, tx); err == nil {
		t.Error("SetTailCall on an array map succeeded")
	}
	c.Close()
	if got := r.Run(jump, newFrame(udpFrame(1))); got != ActionDrop {
		t.Errorf("after Close the program array is empty: %v, want XDP_DROP", got)
	}
}

func TestAdjustProgram(t *testing.T) {
	c := loadTestdata(t, "features.o", nil)
	p, _ := c.Program("xdp_adjust")
	r := NewRunner(0)
	pkt := udpFrame(7)
	f := newFrame(pkt)
	if got := r.Run(p, f); got != ActionPass {
		t.Fatalf("%v (fault %v)", got, r.Fault())
	}
	if f.Data != testHeadroom-4 || f.DataMeta != f.Data-8 || f.DataEnd != testHeadroom+len(pkt)-2 {
		t.Fatalf("offsets meta %d data %d end %d", f.DataMeta, f.Data, f.DataEnd)
	}
	if got := f.Buf[f.Data : f.Data+4]; !bytes.Equal(got, []byte{0xaa, 0xbb, 0xcc, 0xdd}) {
		t.Errorf("pushed header %x", got)
	}
	if got := binary.LittleEndian.Uint64(f.Buf[f.DataMeta:]); got != 0x1122334455667788 {
		t.Errorf("metadata %#x", got)
	}
	if !bytes.Equal(f.Buf[f.Data+4:f.DataEnd], pkt[:len(pkt)-2]) {
		t.Errorf("payload changed")
	}
}

func TestEventsProgram(t *testing.T) {
	var trace bytes.Buffer
	c := loadTestdata(t, "features.o", &Options{Trace: &trace})
	p, _ := c.Program("xdp_events")
	r := NewRunner(0)
	f := newFrame(udpFrame(7))
	f.RxQueueIndex = 3
	if got := r.Run(p, f); got != ActionPass {
		t.Fatalf("%v (fault %v)", got, r.Fault())
	}
	if got := trace.String(); got != "len 64 queue 3\n" {
		t.Errorf("trace %q", got)
	}
	m, _ := c.Map("events")
	rb, ok := m.(*maps.RingBuf)
	if !ok {
		t.Fatalf("events is a %T", m)
	}
	buf := make([]byte, 64)
	n, err := rb.Read(buf)
	if err != nil || n != 4 || binary.LittleEndian.Uint32(buf) != 64 {
		t.Errorf("first record %x, %v; want the reserved u32 64", buf[:n], err)
	}
	n, err = rb.Read(buf)
	if err != nil || n != 8 || binary.LittleEndian.Uint64(buf) != 64 {
		t.Errorf("second record %x, %v; want the output u64 64", buf[:n], err)
	}
	if _, err := rb.Read(buf); err == nil {
		t.Error("a third record")
	}
}

func TestOutOfBoundsAborts(t *testing.T) {
	c := loadTestdata(t, "features.o", nil)
	p, _ := c.Program("xdp_oob")
	r := NewRunner(0)
	if got := r.Run(p, newFrame(udpFrame(7))); got != ActionAborted {
		t.Fatalf("%v, want XDP_ABORTED", got)
	}
	err := r.Fault()
	var fe *Fault
	if !errors.As(err, &fe) || fe.Index < 0 || !strings.Contains(fe.Reason, "load outside") || !strings.Contains(fe.Insn, " = *(u") {
		t.Fatalf("fault %v", err)
	}
	t.Log(err)
	if runs, aborted := r.Runs(); runs != 1 || aborted != 1 {
		t.Errorf("runs %d aborted %d", runs, aborted)
	}
}

func BenchmarkReference(b *testing.B) {
	c := loadTestdata(b, "parse.o", nil)
	p, err := c.DefaultXDP()
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(53))
	if r.Run(p, f) != ActionPass {
		b.Fatal("wrong verdict")
	}
	cpuBench(b, func() { r.Run(p, f) })
}

func TestReferenceNoAllocs(t *testing.T) {
	c := loadTestdata(t, "parse.o", nil)
	p, _ := c.DefaultXDP()
	r := NewRunner(0)
	f := newFrame(udpFrame(53))
	if n := testing.AllocsPerRun(1000, func() { r.Run(p, f) }); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
	fm := loadTestdata(t, "features.o", nil)
	pm, _ := fm.Program("xdp_main")
	pkt := udpFrame(53)
	if n := testing.AllocsPerRun(1000, func() { resetFrame(f, pkt); r.Run(pm, f) }); n != 0 {
		t.Errorf("features xdp_main: %v allocations per run", n)
	}
}

func BenchmarkFeaturesMain(b *testing.B) {
	c := loadTestdata(b, "features.o", nil)
	p, _ := c.Program("xdp_main")
	r := NewRunner(0)
	f := newFrame(udpFrame(53))
	pkt := udpFrame(53)
	cpuBench(b, func() { resetFrame(f, pkt); r.Run(p, f) })
}

func TestProgramSelection(t *testing.T) {
	c := loadTestdata(t, "parse.o", nil)
	p, err := c.ProgramBySection("xdp")
	if err != nil || p.Name() != "xdp_parse" {
		t.Fatalf("ProgramBySection(xdp): %v %v", p, err)
	}
	if _, err := c.ProgramBySection("tc"); !errors.Is(err, ErrNoProgram) {
		t.Errorf("ProgramBySection(tc): %v", err)
	}
	f := loadTestdata(t, "features.o", nil)
	if _, err := f.ProgramBySection("xdp"); err == nil || !strings.Contains(err.Error(), "xdp_main") {
		t.Errorf("several programs in section xdp: %v", err)
	}
	if len(f.Programs()) != 6 {
		t.Errorf("%d programs", len(f.Programs()))
	}
	if _, err := f.Map("nope"); err == nil || !strings.Contains(err.Error(), "counters") {
		t.Errorf("Map(nope): %v", err)
	}
	if m := f.Maps(); len(m) < 7 || m["jumps"] == nil {
		t.Errorf("Maps: %v", m)
	}
	if p, _ := f.Program("xdp_main"); p.ID() == 0 {
		t.Error("program id 0")
	}
}

// TestVariables: constants and globals changed in the spec before loading
// (VariableSpec.Set) are what the program sees.
func TestVariables(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("testdata/features.o")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["cfg_action"].Set(uint32(ActionTX)); err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["magic"].Set(uint32(0x4321)); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("xdp_main")
	r := NewRunner(0)
	if got := r.Run(p, newFrame(udpFrame(1))); got != ActionTX {
		t.Errorf("cfg_action set to XDP_TX: %v", got)
	}
	counters, _ := c.Map("counters")
	if got := mapU64(t, counters, 3); got != 0x4321 {
		t.Errorf("magic %#x, want 0x4321", got)
	}
}

// A file that is no complete ELF object gets a sentence, not the reader's
// bare "EOF", and wraps ErrNotELF.
func TestNotAnELFObject(t *testing.T) {
	obj, err := os.ReadFile(filepath.Join("testdata", "parse.o"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := map[string][]byte{
		"empty":     {},
		"text":      []byte("garbage\n"),
		"bad magic": bytes.Repeat([]byte{'x'}, 128),
		"header":    obj[:64],
		"half":      obj[:len(obj)/2],
	}
	for name, b := range cases {
		_, err := LoadBytes(b, nil)
		if !errors.Is(err, ErrNotELF) || strings.HasSuffix(err.Error(), "EOF") {
			t.Errorf("%s: LoadBytes: %v", name, err)
		}
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".o")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadFile(path, nil); !errors.Is(err, ErrNotELF) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: LoadFile: %v", name, err)
		}
	}
}
