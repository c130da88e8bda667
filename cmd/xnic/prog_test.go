package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

const testObj = "../../dataplane/bpf/testdata/parse.o"
const featuresObj = "../../dataplane/bpf/testdata/features.o"

func progUDPFrame(dport uint16) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 50)
	ip[8] = 64
	ip[9] = 17
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 30)
	return f
}

func writeTestPcap(t *testing.T, frames ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func progCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestProgRunJSON(t *testing.T) {
	in := writeTestPcap(t, progUDPFrame(9), progUDPFrame(53), []byte{1, 2, 3})
	outPcap := filepath.Join(t.TempDir(), "out.pcap")
	stdout, stderr, code := progCmd(t, "prog", "run", testObj, "--in", in, "--json", "--out", outPcap)
	// The 3-byte frame cannot be run: exit 1, said once on stderr.
	if code != 1 || strings.Count(stderr, "1 of 3 frames could not be run") != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), stdout)
	}
	var res []runResult
	for _, l := range lines {
		var r runResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		res = append(res, r)
	}
	if res[0].Verdict != "XDP_DROP" || res[1].Verdict != "XDP_PASS" || res[0].Len != 64 {
		t.Errorf("verdicts %+v", res)
	}
	if res[1].Hex != hex.EncodeToString(progUDPFrame(53)) {
		t.Errorf("output frame %s", res[1].Hex)
	}
	if res[2].Error == "" || !strings.Contains(res[2].Error, "EINVAL") || res[2].Verdict != "" {
		t.Errorf("short frame: %+v, want an EINVAL error", res[2])
	}
	// The output pcap holds the two frames that ran.
	f, err := os.Open(outPcap)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := pcapgo.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		data, _, err := rd.ReadPacketData()
		if err != nil {
			break
		}
		if len(data) != 64 {
			t.Errorf("output frame %d: %d bytes", n, len(data))
		}
		n++
	}
	if n != 2 {
		t.Errorf("output pcap has %d frames, want 2", n)
	}
}

func TestProgRunText(t *testing.T) {
	in := writeTestPcap(t, progUDPFrame(7))
	stdout, stderr, code := progCmd(t, "prog", "run", featuresObj, "--prog", "xdp_events", "--in", in, "--queue", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "0: XDP_PASS len 64") || !strings.Contains(stdout, "1 frames: XDP_PASS 1") {
		t.Errorf("stdout %q", stdout)
	}
	if !strings.Contains(stderr, "len 64 queue 5") {
		t.Errorf("trace_printk output %q, want it on stderr with queue 5", stderr)
	}
	// Several programs and no choice: the error lists them.
	_, stderr, code = progCmd(t, "prog", "run", featuresObj, "--in", in)
	if code != 1 || !strings.Contains(stderr, "xdp_main") || !strings.Contains(stderr, "xdp_jump") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	// A fault is reported with the verdict.
	_, _, code = progCmd(t, "prog", "run", featuresObj, "--sec", "xdp", "--prog", "xdp_oob", "--in", in)
	if code != 2 {
		t.Errorf("--sec with --prog: exit %d, want usage error 2", code)
	}
	stdout, _, code = progCmd(t, "prog", "run", featuresObj, "--prog", "xdp_oob", "--in", in)
	if code != 0 || !strings.Contains(stdout, "XDP_ABORTED") || !strings.Contains(stdout, "load outside") {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	_, _, code = progCmd(t, "prog", "run", featuresObj)
	if code != 2 {
		t.Errorf("without --in: exit %d, want 2", code)
	}
}

func TestProgBench(t *testing.T) {
	in := writeTestPcap(t, progUDPFrame(53), progUDPFrame(9))
	stdout, stderr, code := progCmd(t, "prog", "bench", testObj, "--in", in, "--repeat", "1000", "--rounds", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 4 || !strings.Contains(last, "median") || !strings.HasSuffix(last, "ns/run") {
		t.Errorf("stdout %q", stdout)
	}
}

func TestProgDisasmAndMaps(t *testing.T) {
	stdout, stderr, code := progCmd(t, "prog", "disasm", "--cilium", testObj)
	if code != 0 || !strings.Contains(stdout, "program xdp_parse, section xdp") || !strings.Contains(strings.ToLower(stdout), "exit") {
		t.Errorf("disasm --cilium exit %d: %q %q", code, stdout, stderr)
	}
	// By default the syntax of llvm-objdump and bpftool.
	stdout, stderr, code = progCmd(t, "prog", "disasm", testObj)
	if code != 0 || !strings.Contains(stdout, "<xdp_parse>:") || !strings.Contains(stdout, "\texit") || !strings.Contains(stdout, " = *(u32 *)(r1 + ") {
		t.Errorf("disasm exit %d: %q %q", code, stdout, stderr)
	}
	if _, _, code := progCmd(t, "prog", "disasm", "--prog", "xdp_parse", testObj); code != 2 {
		t.Errorf("--prog without --cilium: exit %d, want 2", code)
	}
	stdout, stderr, code = progCmd(t, "prog", "maps", featuresObj)
	if code != 0 {
		t.Fatalf("maps exit %d: %s", code, stderr)
	}
	for _, want := range []string{"counters", "Array", "seen", "Hash", ".rodata", ".bss", "jumps"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("maps output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestConformancePluginInProcess(t *testing.T) {
	// lddw r0, 0x1122334455667788; exit
	prog := "18 00 00 00 88 77 66 55 00 00 00 00 44 33 22 11 95 00 00 00 00 00 00 00"
	var out bytes.Buffer
	if err := conformancePlugin(nil, strings.NewReader(prog), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "1122334455667788\n" {
		t.Errorf("r0 %q", out.String())
	}
	// r0 = r2 (memory length); exit, with 8 bytes of memory.
	out.Reset()
	if err := conformancePlugin([]string{"00  01  02  03  04  05  06  07  "}, strings.NewReader("bf 20 00 00 00 00 00 00 95 00 00 00 00 00 00 00"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "8\n" {
		t.Errorf("r0 %q", out.String())
	}
	if err := conformancePlugin(nil, strings.NewReader("zz"), &out); err == nil {
		t.Error("bad hex accepted")
	}
}

// TestConformancePluginExec builds xnic and runs it as the suite's runner
// does, for a few corpus entries.
func TestConformancePluginExec(t *testing.T) {
	// shared/ sits beside the checkout (../shared from the module root, as in
	// CI), or at /work/shared; XNIC_CONFORMANCE overrides both.
	corpus := "../../../shared/conformance/corpus.jsonl"
	if _, err := os.Stat(corpus); err != nil {
		corpus = "/work/shared/conformance/corpus.jsonl"
	}
	if d := os.Getenv("XNIC_CONFORMANCE"); d != "" {
		corpus = filepath.Join(d, "corpus.jsonl")
	}
	data, err := os.ReadFile(corpus)
	if err != nil {
		t.Skipf("conformance corpus not available (%v)", err)
	}
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "xnic")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	want := map[string]bool{"ldxh-all.data": true, "lock_cmpxchg.data": true, "call_local.data": true, "mem-len.data": true, "sdiv64-intmin-by-negone-reg.data": true}
	ran := 0
	for _, line := range strings.Split(string(data), "\n") {
		var c struct {
			Name       string `json:"name"`
			ProgramHex string `json:"program_hex"`
			MemHex     string `json:"mem_hex"`
			Result     uint64 `json:"result"`
		}
		if line == "" || json.Unmarshal([]byte(line), &c) != nil || !want[c.Name] {
			continue
		}
		spaced := func(h string) string {
			var b strings.Builder
			for i := 0; i+2 <= len(h); i += 2 {
				b.WriteString(h[i:i+2] + "  ")
			}
			return b.String()
		}
		var args []string
		args = append(args, "prog", "conformance-plugin")
		if c.MemHex != "" {
			args = append(args, spaced(c.MemHex))
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(spaced(c.ProgramHex) + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		var got uint64
		if _, err := fmtSscanHex(strings.TrimSpace(string(out)), &got); err != nil || got != c.Result {
			t.Errorf("%s: printed %q, want %x", c.Name, out, c.Result)
		}
		ran++
	}
	if ran != len(want) {
		t.Errorf("ran %d of %d chosen corpus entries", ran, len(want))
	}
}

func fmtSscanHex(s string, v *uint64) (int, error) {
	b, err := hex.DecodeString(strings.Repeat("0", len(s)%2) + s)
	if err != nil {
		return 0, err
	}
	var x uint64
	for _, c := range b {
		x = x<<8 | uint64(c)
	}
	*v = x
	return len(b), nil
}

// prog run --map preloads an entry, as run --map does: an LPM key of bytes
// (prefix length 24, 10.1.2.0) makes the ACL drop a source it passed before.
func TestProgRunMap(t *testing.T) {
	f := progUDPFrame(53)
	copy(f[14+12:], []byte{10, 1, 2, 3}) // source address
	in := writeTestPcap(t, f)
	obj := filepath.Join("..", "..", "examples", "xdp", "xdp_lpm_acl.o")
	out, errs, code := progCmd(t, "prog", "run", obj, "--in", in)
	if code != 0 || !strings.Contains(out, "XDP_PASS") {
		t.Fatalf("without the entry: exit %d %q %q", code, out, errs)
	}
	out, errs, code = progCmd(t, "prog", "run", obj, "--in", in, "--map", "acl_v4:24 0 0 0 10 1 2 0=1")
	if code != 0 || !strings.Contains(out, "XDP_DROP") {
		t.Fatalf("with acl_v4 10.1.2.0/24: exit %d %q %q", code, out, errs)
	}
	if _, _, code := progCmd(t, "prog", "run", obj, "--in", in, "--map", "nosuch:1=1"); code != 2 {
		t.Errorf("--map of a map the object lacks: exit %d, want 2", code)
	}
}
