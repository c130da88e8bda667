package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/sim"
)

// The arm64 tier: the fec driver's guest tests (fec/vm_test.go, TestVM*) and
// the CLI against QEMU's imx.enet on the imx8mp-evk machine, once per ENET
// variant. QEMU's model is the same for all three; the compatible string
// picks the driver's quirks: the i.MX8M Plus (enhanced 32-byte descriptors,
// three rings of which the driver uses one), the i.MX6UL's (enhanced, one
// ring) and the Vybrid mvf600's (legacy 8-byte descriptors, no ENET MAC
// quirks). The last two are those variants' code paths in an arm64 build on
// the i.MX8M Plus machine, which no i.MX6 or Vybrid board runs: the 32-bit
// i.MX6UL itself is TestFECIMX6UL (imx6ul_test.go).
var fecVariants = []struct{ Name, Compatible string }{
	{"imx8mp", "fsl,imx8mp-fec"},
	{"imx6ul-quirks-on-imx8mp", "fsl,imx6ul-fec"},
	{"mvf600-quirks-on-imx8mp", "fsl,mvf600-fec"},
}

const (
	// fecPhys is the ENET's register window on the i.MX8M Plus (imx8mp.dtsi
	// ethernet@30be0000), where QEMU's imx8mp-evk maps its imx.enet.
	fecPhys     = 0x30be0000
	fecGuestMAC = "52:54:00:12:34:57"
	// The pktgen check: this many frames of this size to the peer.
	fecPktgenCount = 300
	fecPktgenSize  = 128
	// The checksum check: this many frames with checksum requests
	// (fec/vm_test.go TestVMTxChecksum), a quarter of them IPv6.
	fecCsumCount = 64
	fecGuestTime = 4 * time.Minute // -test.timeout of the guest binary
)

// TestFECQEMU boots the imx8mp-evk once per variant and runs the fec guest
// tests there; each becomes a subtest, and the host checks what the wire
// carried: the peer's sessions (byte-exact both ways, the MAC-swapped echo
// replies) and, in the capture, every pktgen frame against the one built here.
func TestFECQEMU(t *testing.T) {
	root, dir := vmTier(t, "fec")
	begin := time.Now()
	assets, err := LocateARM64()
	if err != nil {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	// Build /init, the fec test binary and xnic for arm64.
	initPath, xnicPath := buildGuestTools(ctx, t, BuildARM64, root, dir)
	tb, err := BuildTestARM64(ctx, root, "./fec", "^TestVM", dir)
	if err != nil {
		t.Fatal(err)
	}
	high, err := BuildTestARM64(ctx, root, "./fec", "^TestHighMemVM$", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Tests) == 0 || len(high.Tests) != 1 {
		t.Fatalf("the fec package lists TestVM* tests %q and TestHighMemVM %q", tb.Tests, high.Tests)
	}
	obj := filepath.Join(root, "examples", "xdp", "xdp_macswap_tx.o")
	if !isFile(obj) {
		t.Fatalf("no %s", obj)
	}
	t.Logf("built /init, fec.test (%d guest tests) and xnic for arm64 in %v", len(tb.Tests), time.Since(begin).Round(time.Millisecond))

	seed := guestSeed()
	t.Logf("frame stream seed %d (rerun with -vmtest.seed=%d)", seed, seed)
	for _, v := range fecVariants {
		t.Run(v.Name, func(t *testing.T) {
			runFECVariant(ctx, t, assets, filepath.Join(dir, v.Name), fecBoot{Compatible: v.Compatible, Tests: tb, Run: "^TestVM", Wire: true},
				seed, initPath, xnicPath, obj)
		})
	}
	// With 6 GiB the kernel reserves the huge pages from the top of RAM, above
	// 4 GiB (RAM starts at 1 GiB): the driver's memory must be refused there.
	t.Run("above4G", func(t *testing.T) {
		runFECVariant(ctx, t, assets, filepath.Join(dir, "above4G"), fecBoot{Compatible: "fsl,imx8mp-fec", Tests: high,
			Run: "^TestHighMemVM$", MemMB: 6144, Env: map[string]string{"XNIC_VMTEST_HIGH_MEM": "1"}}, seed, initPath, xnicPath, obj)
	})
	t.Logf("arm64 fec tier took %v", time.Since(begin).Round(time.Millisecond))
}

// fecBoot is one boot of the arm64 tier.
type fecBoot struct {
	Compatible string            // the ENET variant the guest tests drive
	Tests      *TestBinary       // the fec test binary, listing the tests Run selects
	Run        string            // its -test.run
	MemMB      int               // guest RAM (0: IMXVM's default)
	Env        map[string]string // added to the guest tests' environment
	Wire       bool              // the tests exchange frames: check the peer and the pktgen capture
}

func runFECVariant(ctx context.Context, t *testing.T, assets ARM64Assets, dir string, boot fecBoot, seed int64,
	initPath, xnicPath, obj string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	compatible, tb := boot.Compatible, boot.Tests
	peer, err := traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	cfg := guestproto.Config{
		ResultsTTY: IMXResultsTTY,
		Env: map[string]string{
			"XNIC_FEC_PLATFORM":        fmt.Sprintf("%s@%#x", compatible, fecPhys),
			"XNIC_VMTEST_MAC":          fecGuestMAC,
			"XNIC_VMTEST_PEER_MAC":     peer.MAC().String(),
			"XNIC_VMTEST_SEED":         strconv.FormatInt(seed, 10),
			"XNIC_VMTEST_PKTGEN_COUNT": strconv.Itoa(fecPktgenCount),
			"XNIC_VMTEST_PKTGEN_SIZE":  strconv.Itoa(fecPktgenSize),
			"XNIC_VMTEST_CSUM_COUNT":   strconv.Itoa(fecCsumCount),
			"XNIC_BIN":                 "/bin/xnic",
			"XNIC_XDP_MACSWAP":         "/xdp/xdp_macswap_tx.o",
		},
		Tests: []guestproto.Test{{Name: tb.Name, Path: "/tests/fec.test",
			Args:       []string{"-test.v", "-test.timeout=" + fecGuestTime.String(), "-test.run=" + boot.Run},
			TimeoutSec: int(fecGuestTime/time.Second) + 30}},
		DmesgLines: 30,
	}
	for k, v := range boot.Env {
		cfg.Env[k] = v
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	writeGuestInitramfs(t, initrd, cfg, []InitramfsFile{
		{Name: "init", Src: initPath, Mode: 0o755},
		{Name: "bin/xnic", Src: xnicPath, Mode: 0o755},
		{Name: "tests/fec.test", Src: tb.Path, Mode: 0o755},
		{Name: "xdp/xdp_macswap_tx.o", Src: obj},
	})

	logger := &lineLogger{t: t}
	vm := &IMXVM{
		Assets: assets, Initramfs: initrd, MAC: fecGuestMAC,
		PeerAddr: peer.Addr().String(),
		Pcap:     filepath.Join(dir, "fec.pcap"),
		Results:  filepath.Join(dir, "results.log"),
		Console:  logger,
		MemMB:    boot.MemMB,
	}
	res, _ := bootGuest(ctx, t, vm, logger, vm.Results, dir, "guest", fecGuestTime+time.Minute)
	t.Run("guest", func(t *testing.T) { checkBinary(t, tb, res.Binaries[tb.Name], res) })
	if !boot.Wire {
		return
	}
	t.Run("peer", func(t *testing.T) { checkPeer(t, peer.Report()) })
	t.Run("pktgen", func(t *testing.T) {
		checkPktgen(t, vm.Pcap, fecGuestMAC, peer.MAC().String(), fecPktgenCount, fecPktgenSize)
	})
	t.Run("checksums", func(t *testing.T) {
		want := fecCsumCount
		if compatible == "fsl,mvf600-fec" {
			want = 0 // legacy BDs: the guest test checks the requests are refused
		}
		checkChecksums(t, vm.Pcap, fecGuestMAC, want)
	})
}

// checkChecksums finds in the capture the frames TestVMTxChecksum sent (to
// 198.51.100.9 or 2001:db8::9 from the ENET) and checks each one's TCP or UDP
// checksum, and its IPv4 header checksum, by recomputing them with sim's
// checksum engine on a copy: a frame that comes out changed had a wrong one.
// Every IPv4 frame must be right; QEMU's net_checksum_calculate does IPv4
// only, so IPv6 frames are counted and reported, not required.
func checkChecksums(t *testing.T, pcap, srcMAC string, want int) {
	mac, err := net.ParseMAC(srcMAC)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := readPcap(pcap)
	if err != nil {
		t.Fatal(err)
	}
	var v4ok, v4bad, v6ok, v6bad int
	var firstBad []byte
	for _, fr := range frames {
		v6, ok := csumTestFrame(fr, mac)
		if !ok {
			continue
		}
		c := bytes.Clone(fr)
		good := sim.InsertFull(c, !v6) == nil && bytes.Equal(c, fr)
		switch {
		case !v6 && good:
			v4ok++
		case !v6:
			v4bad++
			if firstBad == nil {
				firstBad = fr
			}
		case good:
			v6ok++
		default:
			v6bad++
		}
	}
	t.Logf("checksum frames: IPv4 %d right, %d wrong; IPv6 %d right, %d wrong", v4ok, v4bad, v6ok, v6bad)
	if got := v4ok + v4bad + v6ok + v6bad; got != want {
		t.Errorf("%d checksum test frames in the capture, want %d", got, want)
	}
	if v4bad != 0 {
		t.Errorf("%d IPv4 frames left with a wrong checksum; first: % x", v4bad, firstBad)
	}
	if v6bad != 0 {
		t.Logf("QEMU's imx.enet left %d IPv6 frames without a checksum (its net_checksum_calculate does IPv4 only)", v6bad)
	}
}

// csumTestFrame reports whether fr is one of TestVMTxChecksum's frames
// (from mac, at most one VLAN tag, to 198.51.100.9 or 2001:db8::9), and
// whether it is IPv6.
func csumTestFrame(fr []byte, mac net.HardwareAddr) (v6, ok bool) {
	if len(fr) < 18 || !bytes.Equal(fr[6:12], mac) {
		return false, false
	}
	l3, et := 14, uint16(fr[12])<<8|uint16(fr[13])
	if et == 0x8100 {
		l3, et = 18, uint16(fr[16])<<8|uint16(fr[17])
	}
	switch {
	case et == 0x0800 && len(fr) >= l3+20:
		return false, bytes.Equal(fr[l3+16:l3+20], []byte{198, 51, 100, 9})
	case et == 0x86DD && len(fr) >= l3+40:
		return true, bytes.Equal(fr[l3+24:l3+40], net.ParseIP("2001:db8::9"))
	}
	return false, false
}

// checkPktgen finds in the capture the frames `xnic pktgen` sent (the default
// UDP flow from the ENET to the peer) and compares every one, byte for byte,
// with the frame pktgen.Flow builds for the same parameters.
func checkPktgen(t *testing.T, pcap, srcMAC, dstMAC string, count, size int) {
	f := pktgen.DefaultFlow()
	f.Size = size
	var err error
	if f.SrcMAC, err = net.ParseMAC(srcMAC); err != nil {
		t.Fatal(err)
	}
	if f.DstMAC, err = net.ParseMAC(dstMAC); err != nil {
		t.Fatal(err)
	}
	want, err := f.UDP()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := readPcap(pcap)
	if err != nil {
		t.Fatal(err)
	}
	// The flow's frames: IPv4 from the ENET to the peer between the flow's
	// addresses (the echo replies are IPv4 too, between others).
	src, dst := f.SrcIP.As4(), f.DstIP.As4()
	same, other := 0, 0
	var firstBad []byte
	for _, fr := range frames {
		if len(fr) < 34 || !bytes.Equal(fr[0:6], f.DstMAC) || !bytes.Equal(fr[6:12], f.SrcMAC) || fr[12] != 0x08 || fr[13] != 0x00 ||
			!bytes.Equal(fr[26:30], src[:]) || !bytes.Equal(fr[30:34], dst[:]) {
			continue
		}
		if bytes.Equal(fr, want) {
			same++
			continue
		}
		other++
		if firstBad == nil {
			firstBad = fr
		}
	}
	if same != count || other != 0 {
		t.Errorf("capture has %d pktgen frames identical to the expected %d-byte frame and %d that differ, want %d and 0; first different: % x\nwant: % x",
			same, len(want), other, count, firstBad, want)
		return
	}
	t.Logf("all %d pktgen frames (%d bytes) on the wire byte-exact", same, len(want))
}

// readPcap returns the frames of a classic pcap file.
func readPcap(path string) ([][]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("pcap %s: %w", path, err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("pcap %s: record %d: %w", path, len(out), err)
		}
		out = append(out, data)
	}
}
