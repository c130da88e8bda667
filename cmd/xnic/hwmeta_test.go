package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// portRxMeta opens the variant as hwmeta does and returns what its driver
// says it reports (0 without nic.RxMetaPort), so the tests hold whatever the
// drivers do yet.
func portRxMeta(t *testing.T, sim string, queues int) nic.RxMetaCaps {
	t.Helper()
	op, err := openPort("", portOptions{Sim: sim, Queues: queues, RxMeta: true, Promisc: true, SimDetached: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if mp, ok := op.Port.(nic.RxMetaPort); ok {
		return mp.RxMeta()
	}
	return 0
}

// portTxMeta is what TX queue 0 of the variant does with TX metadata (0
// without nic.TxMetaQueue).
func portTxMeta(t *testing.T, sim string, queues int) nic.TxMetaCaps {
	t.Helper()
	op, err := openPort("", portOptions{Sim: sim, Queues: queues, RxMeta: true, Promisc: true, SimDetached: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if q, ok := op.Port.TxQueue(0).(nic.TxMetaQueue); ok {
		return q.TxMeta()
	}
	return 0
}

// checkReply holds one frame's answer to what the TX queue offers: the
// checksum offloaded where the queue inserts checksums (software
// elsewhere) and right on the simulated wire either way; a TX timestamp in
// the completion where the queue takes them, never before the frame's RX
// timestamp.
func checkReply(t *testing.T, f hwMetaFrame, caps nic.TxMetaCaps) {
	t.Helper()
	r := f.Reply
	if r == nil {
		t.Fatalf("frame %d: no reply", f.Seq)
	}
	wantCsum := "software"
	if caps&nic.TxMetaChecksum != 0 {
		wantCsum = "offload"
	}
	if r.Checksum != wantCsum || r.WireChecksum == nil || *r.WireChecksum != "ok" {
		t.Fatalf("frame %d: reply checksum %q, on the wire %v; want %s and ok", f.Seq, r.Checksum, r.WireChecksum, wantCsum)
	}
	switch {
	case caps&nic.TxMetaTimestamp == 0 && r.TimestampResult != "-EOPNOTSUPP":
		t.Fatalf("frame %d: no TX timestamps offered, result %q", f.Seq, r.TimestampResult)
	case caps&nic.TxMetaTimestamp != 0 && r.TimestampResult != "ok":
		t.Fatalf("frame %d: TX timestamp result %q", f.Seq, r.TimestampResult)
	case r.TimestampResult == "ok" && f.TimestampResult == "ok" && (r.RxToTxNs == nil || *r.RxToTxNs < 0 || *r.RxToTxNs > 5e9):
		t.Fatalf("frame %d: TX timestamp %d against RX %d", f.Seq, r.Timestamp, f.Timestamp)
	}
}

// decodeFrames reads hwmeta's JSON lines.
func decodeFrames(t *testing.T, out string) []hwMetaFrame {
	t.Helper()
	var fs []hwMetaFrame
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var f hwMetaFrame
		if err := dec.Decode(&f); err == io.EOF {
			return fs
		} else if err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		fs = append(fs, f)
	}
}

// TestHWMetaCommand: on every variant hwmeta prints one record per frame the
// simulated partner sent to the UDP port, and each kfunc result is what the
// driver's capabilities allow: -EOPNOTSUPP for what it does not report; for
// what it does, the timestamps never run backwards and precede the device
// clock's read at the consumer, hashes are IPv4 hashes that differ between
// the flows, and a VLAN tag is the one that frame was sent with. While the
// loader refuses the kfuncs, the command must say so.
func TestHWMetaCommand(t *testing.T) {
	const n, udpPort = 12, 4242
	loads := true
	if coll, _, err := loadHWMetaProgram(udpPort, 1); err != nil {
		loads = false
		t.Logf("the bundled program does not load here: %v", err)
	} else {
		coll.Close()
	}
	type tc struct {
		sim    string
		queues int
	}
	var cases []tc
	for _, sim := range allSimVariants() {
		cases = append(cases, tc{sim, 1})
	}
	// Several queues: igb then hashes (RSS).
	cases = append(cases, tc{"igb:i210", 2}, tc{"igb:82576", 4})
	for _, c := range cases {
		sim := c.sim
		t.Run(fmt.Sprintf("%s/%dq", sim, c.queues), func(t *testing.T) {
			rc, out, errs := runPort(t, "hwmeta", "--sim", sim, "--queues", fmt.Sprint(c.queues), "--count", "12", "--udp-port", "4242", "--json")
			if !loads {
				if rc != 1 || !strings.Contains(errs, "loading the bundled xdp_hw_meta") {
					t.Fatalf("rc %d: %s %s", rc, out, errs)
				}
				return
			}
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			caps := portRxMeta(t, sim, c.queues)
			txCaps := portTxMeta(t, sim, c.queues)
			fs := decodeFrames(t, out)
			if len(fs) != n {
				t.Fatalf("%d records for %d frames: %s", len(fs), n, out)
			}
			// What the partner sent, by UDP source port.
			type sent struct {
				i   int
				tci uint16
				len int
			}
			bySrc := map[uint16]sent{}
			for i := 0; i < n; i++ {
				fr, tci, err := hwMetaFlow(make([]byte, 6), udpPort, i)
				if err != nil {
					t.Fatal(err)
				}
				bySrc[udpSrcPort(fr)] = sent{i, tci, len(fr)}
			}
			seen := map[uint16]bool{}
			hashes := map[uint32]bool{}
			lastTS := map[int]uint64{}
			want := func(bit nic.RxMetaCaps, got string) {
				t.Helper()
				if caps&bit == 0 && got != "-EOPNOTSUPP" {
					t.Fatalf("the driver does not report %v, the kfunc returned %s", bit, got)
				}
				if caps&bit != 0 && got != "ok" && got != "-ENODATA" {
					t.Fatalf("the driver reports %v, the kfunc returned %s", bit, got)
				}
			}
			for k, f := range fs {
				s, ok := bySrc[f.SrcPort]
				if f.Seq != k+1 || !ok || seen[f.SrcPort] {
					t.Fatalf("record %d: %+v (sent: %v)", k, f, bySrc)
				}
				seen[f.SrcPort] = true
				want(nic.RxMetaTimestamp, f.TimestampResult)
				want(nic.RxMetaHash, f.HashResult)
				want(nic.RxMetaVLAN, f.VLANResult)
				if f.TimestampResult == "ok" {
					if f.Timestamp < lastTS[f.Queue] {
						t.Fatalf("queue %d: timestamp %d after %d", f.Queue, f.Timestamp, lastTS[f.Queue])
					}
					lastTS[f.Queue] = f.Timestamp
					if f.DelayPHCNs != nil && (*f.DelayPHCNs < 0 || *f.DelayPHCNs > 5e9) {
						t.Fatalf("frame %d stamped %d ns before the clock's read at the consumer", f.Seq, *f.DelayPHCNs)
					}
				}
				checkReply(t, f, txCaps)
				if f.HashResult == "ok" {
					if f.HashType&1 == 0 || f.HashType&2 != 0 {
						t.Fatalf("an IPv4 frame's hash type %s", f.HashTypeName)
					}
					hashes[f.Hash] = true
				}
				switch {
				case f.VLANResult == "ok" && (s.tci == 0 || f.VLANProto != 0x8100 || f.VLANTCI != s.tci):
					t.Fatalf("frame %d sent with TCI %#x: the kfunc gave proto %#x TCI %#x", s.i, s.tci, f.VLANProto, f.VLANTCI)
				case f.VLANResult != "ok" && f.Len != s.len:
					t.Fatalf("frame %d: %d bytes sent, %d seen with its tag not reported", s.i, s.len, f.Len)
				}
			}
			if caps&nic.RxMetaHash != 0 && len(hashes) < 2 {
				t.Fatalf("%d flows, hashes %v", n, hashes)
			}
		})
	}
}

// TestHWMetaText: the text form names each kfunc's answer per frame, and the
// port's capabilities on stderr.
func TestHWMetaText(t *testing.T) {
	if coll, _, err := loadHWMetaProgram(9091, 1); err != nil {
		t.Skipf("the bundled program does not load here (TestHWMetaCommand checks the error): %v", err)
	} else {
		coll.Close()
	}
	rc, out, errs := runPort(t, "hwmeta", "--sim", "igb", "--count", "2")
	if rc != 0 || !strings.Contains(out, "frame 2: queue ") || strings.Count(out, "  rx_hash: ") != 2 ||
		strings.Count(out, "  rx_timestamp: ") != 2 || strings.Count(out, "  rx_vlan: ") != 2 ||
		!strings.Contains(errs, "UDP port 9091") || !strings.Contains(errs, "the driver reports ") {
		t.Fatalf("rc %d: %s %s", rc, out, errs)
	}
}

func TestHWMetaErrors(t *testing.T) {
	for _, args := range [][]string{
		{"hwmeta", "--sim", "igb", "--udp-port", "0"},
		{"hwmeta", "--sim", "igb", "--udp-port", "65536"},
		{"hwmeta", "--sim", "igb", "--count", "-1"},
		{"hwmeta"},
	} {
		if rc, out, errs := runPort(t, args...); rc != 2 || !strings.Contains(errs, "usage: xnic hwmeta") {
			t.Errorf("%q: rc %d: %s %s", args, rc, out, errs)
		}
	}
	// Frames that cannot all come in time are an error that says how many did.
	rc, _, errs := runPort(t, "hwmeta", "--sim", "fec", "--timeout", "1ns")
	if rc != 1 || !(strings.Contains(errs, "0 of 10 frames") || strings.Contains(errs, "loading the bundled xdp_hw_meta")) {
		t.Fatalf("rc %d: %s", rc, errs)
	}
}

// TestDecodeHWMeta: struct hw_meta as the program lays it out, vlan_proto in
// network order, and a wrong length refused.
func TestDecodeHWMeta(t *testing.T) {
	b := make([]byte, hwMetaLen)
	le := binary.LittleEndian
	le.PutUint64(b[0:], 123456789)
	le.PutUint32(b[8:], 0)
	le.PutUint32(b[12:], 0xdeadbeef)
	le.PutUint32(b[16:], 1|1<<3|1<<5)
	le.PutUint32(b[20:], 0)
	binary.BigEndian.PutUint16(b[24:], 0x88a8)
	le.PutUint16(b[26:], 0x2064)
	var enodata int32 = kfuncENODATA
	le.PutUint32(b[28:], uint32(enodata))
	m, err := decodeHWMeta(b)
	if err != nil || m.Timestamp != 123456789 || m.Hash != 0xdeadbeef || m.VLANProto != 0x88a8 || m.VLANTCI != 0x2064 ||
		kfuncResult(m.VLANErr) != "-ENODATA" || kfuncResult(m.TimestampErr) != "ok" {
		t.Fatalf("%+v %v", m, err)
	}
	if s := rssHashTypeString(m.HashType); s != "L3_IPV4|L4|L4_UDP" {
		t.Fatal(s)
	}
	if s := rssHashTypeString(0); s != "L2" {
		t.Fatal(s)
	}
	if s := rssHashTypeString(1<<1 | 1<<12); s != "L3_IPV6|0x1000" {
		t.Fatal(s)
	}
	if kfuncResult(-95) != "-EOPNOTSUPP" || kfuncResult(-22) != "-22" {
		t.Fatal("kfunc results")
	}
	if _, err := decodeHWMeta(bytes.Repeat([]byte{0}, 16)); err == nil {
		t.Fatal("16 bytes of metadata decoded")
	}
}

// TestHWMetaFlowTags: every other partner frame carries the 802.1Q tag it
// claims, and udpSrcPort finds the UDP header behind it.
func TestHWMetaFlowTags(t *testing.T) {
	for i := 0; i < 4; i++ {
		fr, tci, err := hwMetaFlow([]byte{2, 0, 0, 0, 0, 9}, 7, i)
		if err != nil {
			t.Fatal(err)
		}
		tagged := binary.BigEndian.Uint16(fr[12:]) == 0x8100
		if tagged != (i%2 == 1) || (tagged && binary.BigEndian.Uint16(fr[14:]) != tci) || (!tagged && tci != 0) {
			t.Fatalf("frame %d: tci %#x % x", i, tci, fr[:20])
		}
		if got, want := udpSrcPort(fr), uint16(10000+i*7919%50000); got != want {
			t.Fatalf("frame %d: source port %d, want %d", i, got, want)
		}
	}
}

// TestHWMetaMatchesTheModel: on every variant, what the driver says it
// reports is what each frame gets. With timestamps, every frame is stamped
// between the device clock's reads before the first frame was sent and after
// the last was printed. With VLAN tags, a tagged frame's is the one sent, an
// untagged frame's -ENODATA. On igb with RSS the hash
// is the model's: the Toeplitz hash (82576 datasheet 7.1.1.7) of the flow's
// addresses and UDP ports with the key the driver wrote to RSSRK.
func TestHWMetaMatchesTheModel(t *testing.T) {
	for _, sim := range allSimVariants() {
		t.Run(sim, func(t *testing.T) { checkHWMetaAgainstModel(t, sim, false) })
	}
	// The device side on its own time, as in the drivers' suites.
	for _, sim := range []string{"igb:i210", "dwmac:imx8mp", "fec:imx8mp"} {
		t.Run(sim+"/async", func(t *testing.T) { checkHWMetaAgainstModel(t, sim, true) })
	}
}

func checkHWMetaAgainstModel(t *testing.T, sim string, async bool) {
	queues := 1
	if strings.HasPrefix(sim, "igb:") {
		queues = 2 // RSS, hence hashes
	}
	op, err := openPort("", portOptions{Sim: sim, Queues: queues, RxMeta: true, Promisc: true, SimDetached: true, SimAsync: async})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	var caps nic.RxMetaCaps
	if mp, ok := op.Port.(nic.RxMetaPort); ok {
		caps = mp.RxMeta()
	}
	var key []byte // igb's RSS key, when it hashes
	if op.Family == "igb" && caps&nic.RxMetaHash != 0 {
		regs, err := op.Sim.Model.NICDevice().Regs(0)
		if err != nil {
			t.Fatal(err)
		}
		key = make([]byte, 40)
		for i := 0; i < 10; i++ {
			binary.LittleEndian.PutUint32(key[4*i:], regs.Read32(uint32(0x5C80+4*i))) // RSSRK[i]: key bytes 4i..4i+3, LSB first
		}
	}
	const n, udpPort = 8, 5353
	strips := 1
	if op.Family == "fec" {
		strips = 0
	}
	clock, clockErr := portPHC(op)
	if caps&nic.RxMetaTimestamp != 0 && clockErr != nil {
		t.Fatalf("timestamps without a clock: %v", clockErr)
	}
	var before int64
	if clockErr == nil {
		if before, err = clock.Time(); err != nil {
			t.Fatal(err)
		}
	}
	var fs []hwMetaFrame
	err = hwMetaRun(context.Background(), op, hwMetaOptions{udpPort: udpPort, count: n, asJSON: true},
		func(f hwMetaFrame) error { fs = append(fs, f); return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	after := before
	if clockErr == nil {
		if after, err = clock.Time(); err != nil {
			t.Fatal(err)
		}
	}
	type sent struct {
		hash uint32
		tci  uint16
		len  int
	}
	bySrc := map[uint16]sent{}
	for i := 0; i < n; i++ {
		fr, tci, err := hwMetaFlow(op.MAC(), udpPort, i)
		if err != nil {
			t.Fatal(err)
		}
		s := sent{tci: tci, len: len(fr)}
		if key != nil {
			ip := 14
			if tci != 0 {
				ip += 4
			}
			in := append(append([]byte{}, fr[ip+12:ip+20]...), fr[ip+20:ip+24]...) // addresses, then ports
			s.hash = igbsim.Toeplitz(key, in)
		}
		bySrc[udpSrcPort(fr)] = s
	}
	if len(fs) != n {
		t.Fatalf("%d frames", len(fs))
	}
	for _, f := range fs {
		s, ok := bySrc[f.SrcPort]
		if !ok {
			t.Fatalf("a frame from port %d, not sent", f.SrcPort)
		}
		if caps&nic.RxMetaTimestamp != 0 {
			if f.TimestampResult != "ok" || int64(f.Timestamp) < before || int64(f.Timestamp) > after {
				t.Fatalf("frame from port %d: timestamp %s %d, outside the clock's reads %d..%d", f.SrcPort, f.TimestampResult, f.Timestamp, before, after)
			}
		} else if f.TimestampResult != "-EOPNOTSUPP" {
			t.Fatalf("no timestamps reported, the kfunc said %s", f.TimestampResult)
		}
		if caps&nic.RxMetaVLAN != 0 {
			switch {
			// Stripped (igb and dwmac, asked to by hwmeta) or left
			// in the frame (the ENET only reports it).
			case s.tci != 0 && (f.VLANResult != "ok" || f.VLANProto != 0x8100 || f.VLANTCI != s.tci || f.Len != s.len-4*strips):
				t.Fatalf("frame from port %d sent with TCI %#x: %s proto %#x TCI %#x, %d of %d bytes", f.SrcPort, s.tci, f.VLANResult, f.VLANProto, f.VLANTCI, f.Len, s.len)
			case s.tci == 0 && f.VLANResult != "-ENODATA":
				t.Fatalf("an untagged frame: VLAN %s", f.VLANResult)
			}
		} else if f.VLANResult != "-EOPNOTSUPP" {
			t.Fatalf("no VLAN reported, the kfunc said %s", f.VLANResult)
		}
		switch {
		case caps&nic.RxMetaHash == 0 && f.HashResult != "-EOPNOTSUPP":
			t.Fatalf("no hash reported, the kfunc said %s", f.HashResult)
		case key != nil && (f.HashResult != "ok" || f.Hash != s.hash || f.HashTypeName != "L3_IPV4|L4|L4_UDP"):
			t.Fatalf("frame from port %d: %s %#x %s; the model's hash %#x", f.SrcPort, f.HashResult, f.Hash, f.HashTypeName, s.hash)
		}
	}
}

// TestBuildReply: the answer swaps addresses and ports, and its checksum
// field holds either the pseudo-header's sum (which a CHECKSUM_PARTIAL
// engine completes into the right checksum) or the full checksum.
func TestBuildReply(t *testing.T) {
	in, _, err := hwMetaFlow([]byte{2, 0, 0, 0, 0, 9}, 4242, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in))
	ip := func(f []byte) int { l3, _, _ := udpHeaders(f); return l3 }
	l4, ok := buildReply(out, in, true)
	if !ok || !udpChecksumValid(out) || binary.BigEndian.Uint16(out[l4+2:]) != udpSrcPort(in) ||
		!bytes.Equal(out[0:6], in[6:12]) || !bytes.Equal(out[ip(out)+12:][:4], in[ip(in)+16:][:4]) {
		t.Fatalf("software reply %x to %x", out, in)
	}
	if _, ok := buildReply(out, in, false); !ok || udpChecksumValid(out) {
		t.Fatal("a partial checksum passed as a full one")
	}
	if err := sim.InsertPartial(out, l4, 6); err != nil || !udpChecksumValid(out) {
		t.Fatalf("partial checksum completed by the engine: %v, valid %v", err, udpChecksumValid(out))
	}
	out[len(out)-1] ^= 1
	if udpChecksumValid(out) {
		t.Fatal("a corrupted frame passed")
	}
	if _, ok := buildReply(out, make([]byte, 60), true); ok {
		t.Fatal("a non-UDP frame answered")
	}
}
