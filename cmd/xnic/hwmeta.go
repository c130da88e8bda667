package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/nic"
)

// xnic hwmeta: what the NIC tells a program about each frame, in the manner
// of the kernel's xdp_hw_metadata selftest tool
// (tools/testing/selftests/bpf/xdp_hw_metadata.c). The bundled program
// examples/xdp/xdp_hw_meta calls the XDP metadata kfuncs for each UDP frame
// to --udp-port, puts what they returned in front of the frame (struct
// hw_meta, 32 bytes of data_meta) and redirects the frame to an XSK of its
// queue; this command reads that metadata from each frame it receives and
// prints the hardware RX timestamp, the RSS hash and its type, the VLAN tag,
// and the delay from the timestamp to the moment the consumer saw it.
//
// The delay: the selftest compares the HW timestamp with CLOCK_TAI, which
// only means something when the device clock is synchronised to the host
// (phc2sys keeps a PHC on TAI). xnic prints that too, but first the delay to
// the device clock itself, read through the port's PHC right after the frame
// was taken from the XSK: that one needs no synchronisation, so it is the
// path's real latency (device, driver, program, XSK) on any port with a
// clock, simulated ones included.

func init() {
	register(&command{name: "hwmeta", usage: portUsage + " [--udp-port N] [--count N] [--timeout D] [--json]",
		summary: "like xdp_hw_metadata: per UDP frame the RX timestamp, hash and type, VLAN from the XDP metadata kfuncs",
		run:     runHWMeta})
}

// hwMetaLen is the size of the bundled program's struct hw_meta.
const hwMetaLen = 32

// The kfuncs' error returns, as Linux numbers them (errno.h).
const (
	kfuncENODATA    = -61
	kfuncEOPNOTSUPP = -95
)

// hwMeta is struct hw_meta of examples/xdp/xdp_hw_meta.c, as the program left
// it in front of the frame: host-order fields but vlan_proto, which is in
// network order as the kfunc stores it.
type hwMeta struct {
	Timestamp    uint64
	TimestampErr int32
	Hash         uint32
	HashType     uint32
	HashErr      int32
	VLANProto    uint16 // host order after decoding
	VLANTCI      uint16
	VLANErr      int32
}

// decodeHWMeta reads struct hw_meta from the data_meta bytes of a frame.
func decodeHWMeta(b []byte) (hwMeta, error) {
	if len(b) != hwMetaLen {
		return hwMeta{}, fmt.Errorf("the frame carries %d bytes of metadata, not the program's %d", len(b), hwMetaLen)
	}
	le := binary.LittleEndian
	return hwMeta{
		Timestamp: le.Uint64(b[0:]), TimestampErr: int32(le.Uint32(b[8:])),
		Hash: le.Uint32(b[12:]), HashType: le.Uint32(b[16:]), HashErr: int32(le.Uint32(b[20:])),
		VLANProto: binary.BigEndian.Uint16(b[24:]), VLANTCI: le.Uint16(b[26:]), VLANErr: int32(le.Uint32(b[28:])),
	}, nil
}

// kfuncResult names a kfunc's return: "ok", "-ENODATA", "-EOPNOTSUPP" or the
// number.
func kfuncResult(rc int32) string {
	switch rc {
	case 0:
		return "ok"
	case kfuncENODATA:
		return "-ENODATA"
	case kfuncEOPNOTSUPP:
		return "-EOPNOTSUPP"
	}
	return fmt.Sprintf("%d", rc)
}

// The bits of enum xdp_rss_hash_type (include/net/xdp.h).
var rssHashBits = []struct {
	bit  uint32
	name string
}{
	{1 << 0, "L3_IPV4"}, {1 << 1, "L3_IPV6"}, {1 << 2, "L3_DYNHDR"}, {1 << 3, "L4"},
	{1 << 4, "L4_TCP"}, {1 << 5, "L4_UDP"}, {1 << 6, "L4_SCTP"}, {1 << 7, "L4_IPSEC"}, {1 << 8, "L4_ICMP"},
}

// rssHashTypeString spells an xdp_rss_hash_type: "L2" for 0 (XDP_RSS_TYPE_L2),
// else its bits joined by '|', unknown ones in hex.
func rssHashTypeString(t uint32) string {
	if t == 0 {
		return "L2"
	}
	var parts []string
	for _, b := range rssHashBits {
		if t&b.bit != 0 {
			parts = append(parts, b.name)
			t &^= b.bit
		}
	}
	if t != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", t))
	}
	return strings.Join(parts, "|")
}

// hwMetaFrame is what hwmeta prints for one frame.
type hwMetaFrame struct {
	Seq     int    `json:"seq"` // the frame's number in the order received, from 1
	Queue   int    `json:"queue"`
	Len     int    `json:"len"`
	SrcPort uint16 `json:"src_port"`

	TimestampResult string `json:"rx_timestamp_result"` // what the kfunc returned: ok, -ENODATA, -EOPNOTSUPP
	Timestamp       uint64 `json:"rx_timestamp_ns,omitempty"`
	// DelayPHCNs is the device clock read after the XSK gave the frame,
	// less the timestamp (needs a PHC; none: omitted).
	DelayPHCNs *int64 `json:"delay_phc_ns,omitempty"`
	// DelayTAINs and DelayRealtimeNs are CLOCK_TAI and CLOCK_REALTIME at
	// the same moment, less the timestamp: meaningful only with the PHC
	// synchronised to the host (phc2sys), as in the selftest.
	DelayTAINs      *int64 `json:"delay_tai_ns,omitempty"`
	DelayRealtimeNs *int64 `json:"delay_realtime_ns,omitempty"`

	HashResult   string `json:"rx_hash_result"`
	Hash         uint32 `json:"rx_hash,omitempty"`
	HashType     uint32 `json:"rx_hash_type,omitempty"`
	HashTypeName string `json:"rx_hash_type_name,omitempty"`

	VLANResult string `json:"rx_vlan_result"`
	VLANProto  uint16 `json:"vlan_proto,omitempty"`
	VLANTCI    uint16 `json:"vlan_tci,omitempty"`

	// Reply is what the answer to the frame did (absent with --no-reply).
	Reply *hwMetaReply `json:"reply,omitempty"`
}

// hwMetaOptions are hwmeta's own flags.
type hwMetaOptions struct {
	udpPort int
	count   int
	timeout time.Duration
	asJSON  bool
	noReply bool
}

func runHWMeta(args []string, stdout, stderr io.Writer) (err error) {
	var o portOptions
	var ho hwMetaOptions
	bdf, err := parsePortArgs("hwmeta", args, stderr, &o, &ho.asJSON, func(fs *flag.FlagSet) {
		fs.IntVar(&ho.udpPort, "udp-port", 9091, "the UDP destination port whose frames get metadata")
		fs.IntVar(&ho.count, "count", 0, "stop after N frames (0: until interrupted; with --sim 10)")
		fs.DurationVar(&ho.timeout, "timeout", 0, "give up when the frames have not all come by then (0: never; with --sim 10s)")
		fs.BoolVar(&ho.noReply, "no-reply", false, "do not answer each frame with one asking for a TX checksum and timestamp")
	})
	if err != nil {
		return err
	}
	if ho.udpPort < 1 || ho.udpPort > 65535 {
		return usageErrorf("--udp-port %d: want 1 to 65535", ho.udpPort)
	}
	if ho.count < 0 {
		return usageErrorf("--count %d: want 0 or more", ho.count)
	}
	if o.Sim != "" {
		if ho.count == 0 {
			ho.count = 10
		}
		if ho.timeout == 0 {
			ho.timeout = 10 * time.Second
		}
		o.SimDetached = true // hwmeta is the link partner
	}
	o.Promisc, o.RxMeta = true, true
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	defer func() {
		// A simulated port's model reports what the driver did wrong here.
		if cerr := op.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if ho.timeout > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, ho.timeout)
		defer c2()
	}
	return hwMetaRun(ctx, op, ho, func(f hwMetaFrame) error {
		if ho.asJSON {
			return writeJSONLine(stdout, f)
		}
		printHWMetaFrame(stdout, f)
		return nil
	}, stderr)
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// loadHWMetaProgram loads the bundled xdp_hw_meta with meta_port set.
func loadHWMetaProgram(udpPort uint16, slots int) (*bpf.Collection, *bpf.Program, error) {
	obj, err := examples.Object("xdp_hw_meta")
	if err != nil {
		return nil, nil, err
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return nil, nil, fmt.Errorf("the bundled xdp_hw_meta: %w", err)
	}
	v, ok := spec.Variables["meta_port"]
	if !ok {
		return nil, nil, errors.New("the bundled xdp_hw_meta has no meta_port")
	}
	if err := v.Set(udpPort); err != nil {
		return nil, nil, fmt.Errorf("the bundled xdp_hw_meta: meta_port: %w", err)
	}
	coll, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: max(slots, 1)})
	if err != nil {
		return nil, nil, fmt.Errorf("loading the bundled xdp_hw_meta: %w", err)
	}
	prog, err := coll.Program("xdp_hw_meta")
	if err != nil {
		coll.Close()
		return nil, nil, err
	}
	return coll, prog, nil
}

// hwMetaRun runs the program on op with one XSK per RX queue, feeds a
// simulated port UDP frames as its link partner would, and hands emit each
// frame's metadata until ho.count frames came (0: until ctx ends).
func hwMetaRun(ctx context.Context, op *openedPort, ho hwMetaOptions, emit func(hwMetaFrame) error, stderr io.Writer) error {
	cfg := dataplane.Config{Ports: []dataplane.PortConfig{{Port: op.Port}}}
	coll, prog, err := loadHWMetaProgram(uint16(ho.udpPort), cfg.NumSlots())
	if err != nil {
		return err
	}
	defer coll.Close()
	cfg.Program = dataplane.BPF(prog)
	e, err := dataplane.New(cfg)
	if err != nil {
		return err
	}
	xskMap, err := coll.Map("xsks")
	if err != nil {
		return err
	}
	var xsks []*dataplane.XSK
	defer func() {
		for _, x := range xsks {
			x.Close()
		}
	}()
	for q := 0; q < op.NumQueues(); q++ {
		x, err := e.BindXSK(xskMap, uint32(q), 0, q, 64)
		if err != nil {
			return fmt.Errorf("an XSK on queue %d: %w", q, err)
		}
		xsks = append(xsks, x)
	}
	var clock nic.PHC
	if c, err := portPHC(op); err == nil {
		clock = c
	}
	caps := "none (the driver reports no RX metadata: the kfuncs return -EOPNOTSUPP)"
	if mp, ok := op.Port.(nic.RxMetaPort); ok {
		caps = rxMetaCapsString(mp.RxMeta())
	}
	if !ho.asJSON {
		fmt.Fprintf(stderr, "xnic hwmeta: %s (%s): UDP port %d, %d queues; the driver reports %s; TX metadata: %s\n",
			op.Name(), op.Family, ho.udpPort, len(xsks), caps, xsks[0].TxMeta())
	}
	var wire chan []byte
	if op.Sim != nil && !ho.noReply {
		// The simulated partner checks each answer's checksum on the wire.
		wire = make(chan []byte, 16)
		op.Sim.Model.SetTransmit(func(f []byte) {
			select {
			case wire <- append([]byte(nil), f...):
			default:
			}
		})
	}
	if err := e.Start(); err != nil {
		return err
	}
	defer e.Stop()

	stopGen := make(chan struct{})
	genDone := make(chan error, 1)
	if op.Sim != nil {
		go func() { genDone <- hwMetaGenerate(op, uint16(ho.udpPort), ho.count, stopGen) }()
	} else {
		genDone <- nil
	}
	defer func() { close(stopGen); <-genDone }()

	bufs := make([]*dma.Buf, 16)
	seq := 0
	for ho.count == 0 || seq < ho.count {
		if ctx.Err() != nil {
			if ho.count > 0 && op.Sim != nil {
				return fmt.Errorf("%d of %d frames to UDP port %d came back from the program by the timeout", seq, ho.count, ho.udpPort)
			}
			return nil
		}
		for q, x := range xsks {
			n := x.Recv(bufs, time.Millisecond)
			for i, b := range bufs[:n] {
				bufs[i] = nil
				if ho.count > 0 && seq >= ho.count {
					x.Release(b) // past the count: back unread
					continue
				}
				f, err := hwMetaDescribe(b, q, clock)
				if err == nil && !ho.noReply {
					var rep hwMetaReply
					rep, err = answer(x, b.Data(), f.Timestamp, wire)
					f.Reply = &rep
				}
				x.Release(b)
				if err != nil {
					x.Release(bufs[i+1 : n]...)
					return err
				}
				seq++
				f.Seq = seq
				if err := emit(f); err != nil {
					x.Release(bufs[i+1 : n]...)
					return err
				}
			}
		}
	}
	return nil
}

// hwMetaDescribe reads one frame's metadata, and the clocks right after.
func hwMetaDescribe(b *dma.Buf, q int, clock nic.PHC) (hwMetaFrame, error) {
	var phcNow int64
	var phcErr error = errNoPHC
	if clock != nil {
		phcNow, phcErr = clock.Time()
	}
	var tai unix.Timespec
	taiErr := unix.ClockGettime(unix.CLOCK_TAI, &tai)
	real := time.Now().UnixNano()

	if b.Meta > b.Off {
		return hwMetaFrame{}, fmt.Errorf("a frame on queue %d has %d bytes of metadata before offset %d", q, b.Meta, b.Off)
	}
	m, err := decodeHWMeta(b.Mem[b.Off-b.Meta : b.Off])
	if err != nil {
		return hwMetaFrame{}, fmt.Errorf("queue %d: %w", q, err)
	}
	data := b.Data()
	f := hwMetaFrame{Queue: q, Len: len(data), SrcPort: udpSrcPort(data),
		TimestampResult: kfuncResult(m.TimestampErr), HashResult: kfuncResult(m.HashErr), VLANResult: kfuncResult(m.VLANErr)}
	if m.TimestampErr == 0 {
		f.Timestamp = m.Timestamp
		ts := int64(m.Timestamp)
		if phcErr == nil {
			d := phcNow - ts
			f.DelayPHCNs = &d
		}
		if taiErr == nil {
			d := tai.Nano() - ts
			f.DelayTAINs = &d
		}
		d := real - ts
		f.DelayRealtimeNs = &d
	}
	if m.HashErr == 0 {
		f.Hash, f.HashType, f.HashTypeName = m.Hash, m.HashType, rssHashTypeString(m.HashType)
	}
	if m.VLANErr == 0 {
		f.VLANProto, f.VLANTCI = m.VLANProto, m.VLANTCI
	}
	return f, nil
}

// udpSrcPort is the UDP source port of an Ethernet/IPv4 frame, after up to
// two VLAN tags; 0 for anything else.
func udpSrcPort(f []byte) uint16 {
	off := 12
	for i := 0; i < 2 && len(f) >= off+4; i++ {
		if t := binary.BigEndian.Uint16(f[off:]); t != 0x8100 && t != 0x88a8 {
			break
		}
		off += 4
	}
	if len(f) < off+2+20 || binary.BigEndian.Uint16(f[off:]) != 0x0800 {
		return 0
	}
	ip := f[off+2:]
	ihl := int(ip[0]&0xF) * 4
	if ip[9] != 17 || ihl < 20 || len(ip) < ihl+8 {
		return 0
	}
	return binary.BigEndian.Uint16(ip[ihl:])
}

// rxMetaCapsString names a driver's RX metadata.
func rxMetaCapsString(c nic.RxMetaCaps) string {
	var parts []string
	for _, b := range []struct {
		c nic.RxMetaCaps
		n string
	}{{nic.RxMetaTimestamp, "timestamp"}, {nic.RxMetaHash, "hash"}, {nic.RxMetaVLAN, "vlan"}} {
		if c&b.c != 0 {
			parts = append(parts, b.n)
		}
	}
	if len(parts) == 0 {
		return "none (the kfuncs return -EOPNOTSUPP)"
	}
	return strings.Join(parts, ", ")
}

// hwMetaFlow is the UDP flow of the i-th frame the simulated partner sends:
// the source port varies, so the RSS hash does too, and every other frame
// carries an 802.1Q tag (VID 100+i, PCP i%8).
func hwMetaFlow(dst []byte, udpPort uint16, i int) ([]byte, uint16, error) {
	f := pktgen.DefaultFlow()
	f.DstMAC = dst
	f.DstPort = udpPort
	f.SrcPort = uint16(10000 + i*7919%50000)
	f.SrcIP = netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
	b, err := f.UDP()
	if err != nil {
		return nil, 0, err
	}
	if i%2 == 0 {
		return b, 0, nil
	}
	tci := uint16(i%8)<<13 | uint16(100+i)&0xFFF
	t := make([]byte, 0, len(b)+4)
	t = append(t, b[:12]...)
	t = binary.BigEndian.AppendUint16(t, 0x8100)
	t = binary.BigEndian.AppendUint16(t, tci)
	t = append(t, b[12:]...)
	return t, tci, nil
}

// hwMetaGenerate is a simulated port's link partner: it sends count frames
// (forever when 0) to the port's UDP port, one every millisecond, until stop.
func hwMetaGenerate(op *openedPort, udpPort uint16, count int, stop <-chan struct{}) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; count == 0 || i < count; {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		fr, _, err := hwMetaFlow(op.MAC(), udpPort, i)
		if err != nil {
			return err
		}
		if op.Sim.Model.Inject(fr) {
			i++
		}
	}
	return nil
}

// printHWMetaFrame prints one frame as the selftest tool does, one item a
// line.
func printHWMetaFrame(w io.Writer, f hwMetaFrame) {
	fmt.Fprintf(w, "frame %d: queue %d, %d bytes, UDP from port %d\n", f.Seq, f.Queue, f.Len, f.SrcPort)
	if f.TimestampResult == "ok" {
		fmt.Fprintf(w, "  rx_timestamp: %d ns (%.6f s)", f.Timestamp, float64(f.Timestamp)/1e9)
		if f.DelayPHCNs != nil {
			fmt.Fprintf(w, ", %.3f us before the device clock's read at the consumer", float64(*f.DelayPHCNs)/1e3)
		}
		if f.DelayTAINs != nil {
			fmt.Fprintf(w, "; delta to CLOCK_TAI %.6f s (if the PHC runs on TAI)", float64(*f.DelayTAINs)/1e9)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "  rx_timestamp: %s\n", f.TimestampResult)
	}
	if f.HashResult == "ok" {
		fmt.Fprintf(w, "  rx_hash: 0x%08x type %s (0x%x)\n", f.Hash, f.HashTypeName, f.HashType)
	} else {
		fmt.Fprintf(w, "  rx_hash: %s\n", f.HashResult)
	}
	if f.VLANResult == "ok" {
		fmt.Fprintf(w, "  rx_vlan: proto 0x%04x tci 0x%04x (VID %d, PCP %d)\n", f.VLANProto, f.VLANTCI, f.VLANTCI&0xFFF, f.VLANTCI>>13)
	} else {
		fmt.Fprintf(w, "  rx_vlan: %s\n", f.VLANResult)
	}
	if r := f.Reply; r != nil {
		fmt.Fprintf(w, "  reply: checksum %s", r.Checksum)
		if r.WireChecksum != nil {
			fmt.Fprintf(w, " (on the wire: %s)", *r.WireChecksum)
		}
		if r.TimestampResult == "ok" {
			fmt.Fprintf(w, "; tx_timestamp: %d ns", r.Timestamp)
			if r.RxToTxNs != nil {
				fmt.Fprintf(w, ", %.3f us after the RX timestamp", float64(*r.RxToTxNs)/1e3)
			}
		} else {
			fmt.Fprintf(w, "; tx_timestamp: %s", r.TimestampResult)
		}
		fmt.Fprintln(w)
	}
}
