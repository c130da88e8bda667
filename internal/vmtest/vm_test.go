package vmtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

var (
	flagVM      = flag.Bool("vmtest", false, "run the VM tier: boot QEMU and run the driver tests in the guest (also XNIC_VMTEST=1)")
	flagPkgs    = flag.String("vmtest.pkgs", "./vfio,./igb,./dataplane", "comma-separated packages whose tests run in the guest")
	flagRun     = flag.String("vmtest.run", "", "-test.run pattern for the guest test binaries (default: guestRun's, else all)")
	flagTimeout = flag.Duration("vmtest.timeout", 5*time.Minute, "deadline for building and running the guest (QEMU is killed after it)")
	flagDir     = flag.String("vmtest.dir", "", "keep the initramfs, console log and pcap in this directory (default: a temporary one, removed)")
	flagCPUs    = flag.Int("vmtest.smp", 2, "guest vCPUs")
	flagThread  = flag.String("vmtest.tcg-thread", "single", "QEMU tcg thread=: single (default; see VM.TCGThread) or multi")
	flagSeed    = flag.Int64("vmtest.seed", 0, "seed for the guest's frame streams (XNIC_VMTEST_SEED; 0: from the clock)")
)

const (
	guestMAC      = "52:54:00:12:34:56"
	igbVendor     = 0x8086
	igb82576      = 0x10c9
	guestTestTime = 3 * time.Minute // -test.timeout of each guest test binary
)

// guestRun is the -test.run pattern of a package's binary in the guest when
// -vmtest.run does not set one. The dataplane's other tests run it on device
// models, which the unit tier does already (and much faster than TCG); in the
// guest only the tests against the device run.
var guestRun = map[string]string{"./dataplane": "^TestVM"}

// guestCommands are commands the guest tests of a package run: built when the
// package's tests are, put in the initramfs at Path and named to the tests by
// the environment variable Env. The dataplane's tests run `xnic run --dev` on
// the NIC.
var guestCommands = map[string][]guestCommand{
	"./dataplane": {{Pkg: "./cmd/xnic", Path: "bin/xnic", Env: "XNIC_BIN"}},
}

type guestCommand struct {
	Pkg  string // to build, relative to the module root
	Path string // in the initramfs
	Env  string // variable holding "/"+Path in the tests' environment
}

// runPattern is the -test.run pattern for pkg's binary ("" runs everything).
func runPattern(pkg string) string {
	if *flagRun != "" {
		return *flagRun
	}
	return guestRun["./"+strings.TrimPrefix(path.Clean(pkg), "./")]
}

// lineLogger forwards the console line by line to t.Logf, so a slow or stuck
// guest shows its progress.
type lineLogger struct {
	mu      sync.Mutex
	t       *testing.T
	partial []byte
	done    bool
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(l.partial[:i]), "\r")
		l.partial = l.partial[i+1:]
		if !l.done && line != "" {
			l.t.Logf("guest: %s", line)
		}
	}
	return len(p), nil
}

func (l *lineLogger) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

func TestVM(t *testing.T) {
	root, dir := vmTier(t, "")
	begin := time.Now()
	assets, err := Locate()
	if err != nil {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()

	// Build /init and the test binaries.
	initPath := filepath.Join(dir, "init")
	if err := BuildInit(ctx, root, initPath); err != nil {
		t.Fatal(err)
	}
	var bins []*TestBinary
	for _, pkg := range strings.Split(*flagPkgs, ",") {
		pkg = strings.TrimSpace(pkg)
		if pkg == "" {
			continue
		}
		tb, why, err := BuildTest(ctx, root, pkg, dir)
		switch {
		case err != nil:
			t.Errorf("guest tests of %s cannot run: %v", pkg, err)
		case tb == nil:
			t.Logf("NOTE: %s; its guest tests are skipped until it exists", why)
		default:
			bins = append(bins, tb)
		}
	}
	var cmds []guestCommand
	for _, b := range bins {
		for _, gc := range guestCommands["./"+strings.TrimPrefix(path.Clean(b.Pkg), "./")] {
			if slices.Contains(cmds, gc) {
				continue
			}
			if err := BuildCommand(ctx, root, gc.Pkg, filepath.Join(dir, filepath.Base(gc.Path))); err != nil {
				t.Errorf("the guest tests of %s need %s: %v", b.Pkg, gc.Pkg, err)
				continue
			}
			cmds = append(cmds, gc)
		}
	}
	t.Logf("built /init, %d test binaries and %d commands in %v", len(bins), len(cmds), time.Since(begin).Round(time.Millisecond))

	mods, err := ModuleOrder(assets.Modules, VFIOModules)
	if err != nil {
		t.Fatal(err)
	}

	// The host end of the wire.
	peer, err := traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	seed := guestSeed()
	t.Logf("frame stream seed %d (rerun with -vmtest.seed=%d)", seed, seed)
	cfg := guestproto.Config{
		Vendor: igbVendor, Device: igb82576, MAC: guestMAC,
		Env: map[string]string{
			"XNIC_VMTEST_PEER_MAC": peer.MAC().String(),
			"XNIC_VMTEST_SEED":     strconv.FormatInt(seed, 10),
		},
		DmesgLines: 40,
	}
	files := []InitramfsFile{{Name: "init", Src: initPath, Mode: 0o755}}
	for _, m := range mods {
		p := "lib/modules/" + filepath.Base(m)
		files = append(files, InitramfsFile{Name: p, Src: filepath.Join(assets.Modules, m)})
		cfg.Modules = append(cfg.Modules, guestproto.Module{Path: "/" + p})
	}
	for _, gc := range cmds {
		files = append(files, InitramfsFile{Name: gc.Path, Src: filepath.Join(dir, filepath.Base(gc.Path)), Mode: 0o755})
		cfg.Env[gc.Env] = "/" + gc.Path
	}
	for _, b := range bins {
		p := "tests/" + b.Name + ".test"
		files = append(files, InitramfsFile{Name: p, Src: b.Path, Mode: 0o755})
		args := []string{"-test.v", "-test.timeout=" + guestTestTime.String()}
		if re := runPattern(b.Pkg); re != "" {
			args = append(args, "-test.run="+re)
		}
		cfg.Tests = append(cfg.Tests, guestproto.Test{Name: b.Name, Path: "/" + p, Args: args,
			TimeoutSec: int(guestTestTime/time.Second) + 30})
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	writeGuestInitramfs(t, initrd, cfg, files)
	if st, err := os.Stat(initrd); err == nil {
		t.Logf("initramfs %s: %d MiB, modules %v", initrd, st.Size()>>20, mods)
	}

	// Boot.
	logger := &lineLogger{t: t}
	vm := &VM{
		Assets: assets, Initramfs: initrd, MAC: guestMAC,
		PeerAddr: peer.Addr().String(),
		Pcap:     filepath.Join(dir, "igb.pcap"),
		Results:  filepath.Join(dir, "results.log"),
		CPUs:     *flagCPUs, TCGThread: *flagThread,
		Console: logger,
	}
	if *flagDir == "" {
		defer func() {
			if t.Failed() {
				t.Logf("rerun with -vmtest.dir=DIR to keep the initramfs, console log and pcap")
			}
		}()
	}
	res, _ := bootGuest(ctx, t, vm, logger, vm.Results, dir, "guest", 0)
	t.Logf("total so far %v", time.Since(begin).Round(time.Millisecond))
	if n, m, err := PcapCount(vm.Pcap); err == nil {
		t.Logf("pcap %s: %d frames both ways, largest %d bytes", vm.Pcap, n, m)
	} else {
		t.Logf("pcap: %v", err)
	}

	// One subtest per guest binary and test.
	expect := append([]*TestBinary{{Name: guestproto.SmokeBinary, Tests: []string{"TestVFIOGroupViable", "TestVFIODeviceAnswers"}}}, bins...)
	for _, b := range expect {
		t.Run(b.Name, func(t *testing.T) { checkBinary(t, b, res.Binaries[b.Name], res) })
	}
	t.Run("peer", func(t *testing.T) { checkPeer(t, peer.Report()) })
	t.Run("igb-tx-checksum", func(t *testing.T) { checkTxChecksums(t, vm.Pcap, res.Binaries["igb"]) })
	t.Logf("VM tier took %v", time.Since(begin).Round(time.Millisecond))
}

func checkBinary(t *testing.T, tb *TestBinary, br *BinaryResult, res *ConsoleResult) {
	if br == nil || !br.Started {
		t.Fatalf("%s never ran in the guest (guest /init: fatal %q, failed steps %q)", tb.Name, res.Fatal, res.Failed)
	}
	names := slices.Clone(tb.Tests)
	if run := runPattern(tb.Pkg); run != "" && tb.Name != guestproto.SmokeBinary {
		top := strings.Split(run, "/")[0]
		re, err := regexp.Compile(top)
		if err == nil {
			names = slices.DeleteFunc(names, func(n string) bool { return !re.MatchString(n) })
		}
	}
	for _, n := range br.Order {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	anyFailed := false
	for _, name := range names {
		tr := br.Tests[name]
		t.Run(name, func(t *testing.T) {
			switch {
			case tr == nil || tr.Status == StatusNotRun:
				anyFailed = true
				out := ""
				if tr != nil {
					out = strings.Join(tr.Output, "\n")
				}
				t.Errorf("never finished in the guest (binary exit %d); its output:\n%s", br.ExitCode, out)
			case tr.Status == StatusFail:
				anyFailed = true
				t.Errorf("failed in the guest (%s):\n%s", tr.Seconds, strings.Join(tr.Output, "\n"))
			case tr.Status == StatusSkip:
				t.Skipf("skipped in the guest: %s", strings.Join(tr.Output, " | "))
			default:
				t.Logf("passed in the guest (%s)", tr.Seconds)
			}
		})
	}
	if !br.Exited {
		t.Errorf("%s did not exit (the VM ended first); output tail:\n%s", tb.Name, strings.Join(lastN(br.Output, 30), "\n"))
	} else if br.ExitCode != 0 && !anyFailed {
		t.Errorf("%s exited %d without a failing test (panic, timeout or a TestMain failure); output tail:\n%s",
			tb.Name, br.ExitCode, strings.Join(lastN(br.Output, 30), "\n"))
	}
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// checkPeer asserts the host's side of every frame stream the guest started.
func checkPeer(t *testing.T, r traffic.Report) {
	t.Logf("peer: %d datagrams received, %d sent, %d stray, guest MAC %s", r.Received, r.Sent, r.Stray, r.GuestMAC)
	for _, s := range r.Sessions {
		switch {
		case (s.Verb == traffic.VerbExpect || s.Verb == traffic.VerbEcho) && !s.Reported:
			t.Errorf("%v: the guest never asked for the report (its test ended early?)", s)
		case !s.OK():
			t.Errorf("%v", s)
		default:
			t.Logf("%v: ok", s)
		}
	}
	switch {
	case r.RemoteDrops > 0:
		t.Errorf("QEMU's socket dropped %d datagrams from the peer (sent faster than the guest took them)", r.RemoteDrops)
	case r.RemoteDrops < 0:
		t.Logf("QEMU's socket drop counter could not be read")
	}
	switch {
	case r.LocalDrops > 0:
		t.Errorf("the peer's own socket dropped %d datagrams from QEMU (the peer was descheduled while the guest sent a burst)", r.LocalDrops)
	case r.LocalDrops < 0:
		t.Logf("the peer's socket drop counter could not be read")
	}
	if r.Throttled > 0 {
		t.Logf("the peer waited %d times for QEMU's socket to drain", r.Throttled)
	}
	for _, e := range r.Errors {
		t.Errorf("peer: %s", e)
	}
	if len(r.Sessions) == 0 {
		t.Skip("no guest test used the peer (the driver tests that exchange frames have not run)")
	}
}

// checkTxChecksums is the host's half of igb's TestVMTxChecksum: the guest
// sent frames asking QEMU's igb to insert their TCP/UDP checksums, each to
// port 0x5843 with "xnic-csum" and its index after the L4 header, and logged
// how many ("xnic-csum frames: N"). Each of them must be in QEMU's pcap (what
// its igb put on the wire) once, with a valid L4 checksum (pseudo-header
// included) and, for IPv4, a valid header checksum.
func checkTxChecksums(t *testing.T, pcapPath string, br *BinaryResult) {
	var tr *TestResult
	if br != nil {
		tr = br.Tests["TestVMTxChecksum"]
	}
	if tr == nil || tr.Status != StatusPass {
		t.Skip("igb's TestVMTxChecksum did not pass in the guest: nothing to check")
	}
	want := -1
	for _, l := range tr.Output {
		if i := strings.Index(l, "xnic-csum frames: "); i >= 0 {
			want, _ = strconv.Atoi(strings.Fields(l[i+len("xnic-csum frames: "):])[0])
		}
	}
	if want <= 0 {
		t.Fatalf("TestVMTxChecksum logged no frame count: %q", tr.Output)
	}
	seen := make([]int, want)
	bad := 0
	err := pcapEach(pcapPath, func(f []byte) {
		idx, ok, marked := csumMarked(f)
		switch {
		case !marked:
		case idx >= uint32(want):
			t.Errorf("a marked frame with index %d of %d", idx, want)
		case !ok:
			bad++
			if bad <= 5 {
				t.Errorf("frame %d: bad checksum on the wire: %x", idx, f)
			}
			seen[idx]++
		default:
			seen[idx]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for i, n := range seen {
		if n != 1 && missing < 5 {
			t.Errorf("frame %d seen %d times in the pcap", i, n)
		}
		if n == 0 {
			missing++
		}
	}
	if bad != 0 || missing != 0 {
		t.Fatalf("%d of %d frames with a bad checksum, %d missing", bad, want, missing)
	}
	t.Logf("%d frames (IPv4/IPv6 x TCP/UDP) left QEMU's igb with correct checksums", want)
}

// pcapEach calls f with every packet of a classic pcap file.
func pcapEach(path string, f func([]byte)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		return fmt.Errorf("pcap %s: %w", path, err)
	}
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pcap %s: %w", path, err)
		}
		f(data)
	}
}

// csumMarked parses f as Ethernet (one optional 802.1Q tag), IPv4 or IPv6,
// TCP or UDP to port 0x5843 with "xnic-csum" and an index after the L4
// header; it reports the index, whether the checksums are valid, and whether
// the frame is one of those at all.
func csumMarked(f []byte) (idx uint32, ok, marked bool) {
	const mark = "xnic-csum"
	if len(f) < 14 {
		return 0, false, false
	}
	l3, et := 14, binary.BigEndian.Uint16(f[12:])
	if et == 0x8100 && len(f) >= 18 {
		l3, et = 18, binary.BigEndian.Uint16(f[16:])
	}
	var pseudo uint32
	var l4, end int
	var proto byte
	ipOK := true
	switch {
	case et == 0x0800 && len(f) >= l3+20:
		ihl := int(f[l3]&15) * 4
		end = l3 + int(binary.BigEndian.Uint16(f[l3+2:]))
		proto, l4 = f[l3+9], l3+ihl
		pseudo = csumAdd(0, f[l3+12:l3+20])
		ipOK = ihl >= 20 && end <= len(f) && csumFold(csumAdd(0, f[l3:l3+ihl])) == 0xffff
	case et == 0x86DD && len(f) >= l3+40:
		proto, l4 = f[l3+6], l3+40
		end = l4 + int(binary.BigEndian.Uint16(f[l3+4:]))
		pseudo = csumAdd(0, f[l3+8:l3+40])
	default:
		return 0, false, false
	}
	hdr := map[byte]int{6: 20, 17: 8}[proto]
	if hdr == 0 || end > len(f) || end < l4+hdr+len(mark)+4 || binary.BigEndian.Uint16(f[l4+2:]) != 0x5843 {
		return 0, false, false
	}
	if proto == 6 {
		hdr = int(f[l4+12]>>4) * 4
	}
	pl := f[l4+hdr : end]
	if len(pl) < len(mark)+4 || string(pl[:len(mark)]) != mark {
		return 0, false, false
	}
	idx = binary.BigEndian.Uint32(pl[len(mark):])
	seg := f[l4:end]
	l4OK := csumFold(csumAdd(pseudo+uint32(proto)+uint32(len(seg)), seg)) == 0xffff
	return idx, ipOK && l4OK, true
}

func csumAdd(s uint32, b []byte) uint32 {
	for ; len(b) >= 2; b = b[2:] {
		s += uint32(binary.BigEndian.Uint16(b))
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func csumFold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestCsumMarked: the host's checksum check finds the marked frames and fails
// a wrong checksum, in IPv4/UDP and tagged IPv6/TCP frames built by gopacket.
func TestCsumMarked(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ls := []gopacket.SerializableLayer{eth}
		if v6 {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolTCP, HopLimit: 9, SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv6}, ip)
			tcp := &layers.TCP{SrcPort: 1, DstPort: 0x5843, DataOffset: 5, Window: 1}
			_ = tcp.SetNetworkLayerForChecksum(ip)
			ls = append(ls, tcp)
		} else {
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 9, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
			udp := &layers.UDP{SrcPort: 1, DstPort: 0x5843}
			_ = udp.SetNetworkLayerForChecksum(ip)
			ls = append(ls, ip, udp)
		}
		ls = append(ls, gopacket.Payload(append([]byte("xnic-csum"), 0, 0, 0, 42, 7, 7, 7)))
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}, ls...); err != nil {
			t.Fatal(err)
		}
		f := buf.Bytes()
		if idx, ok, marked := csumMarked(f); !marked || !ok || idx != 42 {
			t.Fatalf("v6 %v: index %d ok %v marked %v, want 42 true true", v6, idx, ok, marked)
		}
		bad := bytes.Clone(f)
		bad[bytes.Index(bad, []byte("xnic-csum"))+13] ^= 1 // a payload byte (the frame may be padded)
		if _, ok, marked := csumMarked(bad); !marked || ok {
			t.Fatalf("v6 %v: a flipped payload bit passes (ok %v marked %v)", v6, ok, marked)
		}
	}
}

func ExampleTail() {
	fmt.Println(Tail("a\nb\nc\n", 2))
	// Output:
	// b
	// c
}
