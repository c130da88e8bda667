package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// xnic selftest: ethtool -t for xnic's ports. It opens (resets and brings up)
// the port, so it refuses a port a run holds, and runs, in order: the link,
// a register pattern test on registers the family's datasheet lets software
// write back unchanged, MAC loopback, PHY loopback, and an interrupt test;
// each prints a pass/fail/skip line, and any failure makes the exit status 1.
//
// The loopback tests send frames of several sizes to the port's own MAC and
// want each back byte for byte, in order, and (on a --sim port) none on the
// wire. Which register turns MAC loopback on, and which registers the
// pattern test may write, the driver says (nic.RegFacts, each driver's
// Facts). PHY loopback is BMCR bit 14 (IEEE 802.3 22.2.4.1.2) through the
// MDIO, as Linux's self-tests use it.

func init() {
	register(&command{name: "selftest", usage: portUsage + " [--json]",
		summary: "like ethtool -t: link, register pattern, MAC and PHY loopback (frames byte-exact), interrupt; exit 1 on a failure",
		run:     runSelftest})
}

// selftestResult is one test's outcome.
type selftestResult struct {
	Test   string `json:"test"`
	Result string `json:"result"` // pass, fail or skip
	Detail string `json:"detail"`
}

// selftestSizes are the frame lengths (without FCS) the loopback tests send.
var selftestSizes = []int{60, 61, 127, 128, 512, 1514}

// selftestTimeout bounds the wait for one looped frame or an interrupt.
const selftestTimeout = 2 * time.Second

func runSelftest(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON bool
	bdf, err := parsePortArgs("selftest", args, stderr, &o, &asJSON, nil)
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok { // the run says why not
		_, err := control.Call(path, control.Request{Cmd: control.CmdSelftest})
		if err == nil {
			err = errors.New("the run holding the port did not refuse the self-test")
		}
		return fmt.Errorf("%w: %v", errHeld, err)
	}
	o.Interrupts = true
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	name := op.Name()
	rs := selftest(op)
	closeErr := op.Close()
	if closeErr != nil {
		rs = append(rs, selftestResult{"model", "fail", closeErr.Error()})
	}
	if err := printSelftest(stdout, name, rs, asJSON); err != nil {
		return err
	}
	failed := 0
	for _, r := range rs {
		if r.Result == "fail" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d tests failed", failed, len(rs))
	}
	return nil
}

func printSelftest(w io.Writer, port string, rs []selftestResult, asJSON bool) error {
	if asJSON {
		passed := true
		for _, r := range rs {
			passed = passed && r.Result != "fail"
		}
		return writeJSON(w, struct {
			Port    string           `json:"port"`
			Passed  bool             `json:"passed"`
			Results []selftestResult `json:"results"`
		}{port, passed, rs})
	}
	for _, r := range rs {
		fmt.Fprintf(w, "%-13s %-4s  %s\n", r.Test, map[string]string{"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[r.Result], r.Detail)
	}
	return nil
}

// selftest runs every test on an open port and returns their results.
func selftest(op *openedPort) []selftestResult {
	st := &selftester{op: op}
	return []selftestResult{
		st.run("link", st.link),
		st.run("registers", st.registers),
		st.run("mac-loopback", st.macLoopback),
		st.run("phy-loopback", st.phyLoopback),
		st.run("interrupt", st.interrupt),
	}
}

// errSkip marks a test that does not apply to the port.
var errSkip = errors.New("skip")

type selftester struct {
	op  *openedPort
	seq uint32 // frames sent, for unique payloads
}

func (st *selftester) run(name string, f func() (string, error)) selftestResult {
	detail, err := f()
	switch {
	case errors.Is(err, errSkip):
		return selftestResult{name, "skip", detail}
	case err != nil:
		return selftestResult{name, "fail", err.Error()}
	}
	return selftestResult{name, "pass", detail}
}

func (st *selftester) family() (nic.RegFacts, regTarget, error) {
	fd := familyByName(st.op.Family)
	if fd == nil || len(fd.facts.Patterns) == 0 {
		return nic.RegFacts{}, regTarget{}, fmt.Errorf("no self-test registers for the %s family: %w", st.op.Family, nic.ErrNotSupported)
	}
	t, err := portRegTarget(st.op, false)
	return fd.facts, t, err
}

func (st *selftester) link() (string, error) {
	l := st.op.Link()
	li := linkInfo{Up: l.Up, SpeedMbps: l.SpeedMbps, FullDuplex: l.FullDuplex}
	if !l.Up {
		return "", fmt.Errorf("link down after bring-up (cable, partner, autonegotiation): %w", nic.ErrLinkDown)
	}
	return li.String(), nil
}

// regOffset finds a register of the family's table.
func regOffset(t regTarget, name string) (uint32, error) {
	d, err := t.dump()
	if err != nil {
		return 0, err
	}
	_, off, ok, err := lookupReg(d, name)
	if err == nil && !ok {
		err = fmt.Errorf("no %s in the %s register table", name, t.fam)
	}
	return off, err
}

// registers writes four patterns into each register's read/write bits and
// reads each back, leaving the other bits alone, then restores the register.
func (st *selftester) registers() (string, error) {
	f, t, err := st.family()
	if err != nil {
		return "", err
	}
	for _, p := range f.Patterns {
		off, err := regOffset(t, p.Reg)
		if err != nil {
			return "", err
		}
		orig := t.regs.Read32(off)
		for _, pat := range []uint32{0x5A5A5A5A, 0xA5A5A5A5, 0, 0xFFFFFFFF} {
			want := orig&^p.Mask | pat&p.Mask
			t.regs.Write32(off, want)
			if got := t.regs.Read32(off); got&p.Mask != pat&p.Mask {
				t.regs.Write32(off, orig)
				return "", fmt.Errorf("%s [%#x]: wrote %#08x, read back %#08x (bits %#08x differ)", p.Reg, off, want, got, (got^want)&p.Mask)
			}
		}
		t.regs.Write32(off, orig)
		if got := t.regs.Read32(off); got != orig {
			return "", fmt.Errorf("%s [%#x]: restoring %#08x reads %#08x", p.Reg, off, orig, got)
		}
	}
	return fmt.Sprintf("%d registers, 4 patterns each", len(f.Patterns)), nil
}

// setMACLoopback turns the family's MAC loopback on or off.
func (st *selftester) setMACLoopback(on bool) error {
	f, t, err := st.family()
	if err != nil {
		return err
	}
	off, err := regOffset(t, f.Loopback.Reg)
	if err != nil {
		return err
	}
	v := t.regs.Read32(off) &^ f.Loopback.Mask
	if on {
		v |= f.Loopback.On
	}
	t.regs.Write32(off, v)
	return nil
}

func (st *selftester) macLoopback() (string, error) {
	if err := st.setMACLoopback(true); err != nil {
		return "", err
	}
	detail, err := st.loopFrames()
	if err2 := st.setMACLoopback(false); err == nil {
		err = err2
	}
	return detail, err
}

func (st *selftester) phyLoopback() (string, error) {
	pa, ok := st.op.Port.(nic.PHYAccess)
	if !ok {
		return "the driver gives no PHY access", errSkip
	}
	bmcr, err := pa.ReadPHY(sim.MIIBMCR)
	if errors.Is(err, nic.ErrNotSupported) {
		return err.Error(), errSkip // a port without a PHY (igb's SerDes ports)
	}
	if err != nil {
		return "", err
	}
	if err := pa.WritePHY(sim.MIIBMCR, bmcr|sim.BMCRLoopback); err != nil {
		return "", err
	}
	detail, err := st.loopFrames()
	if err2 := pa.WritePHY(sim.MIIBMCR, bmcr&^(sim.BMCRLoopback|sim.BMCRANRestart)); err == nil {
		err = err2
	}
	if _, err2 := st.op.WaitLink(5 * time.Second); err2 != nil && bmcr&sim.BMCRANEnable != 0 {
		// A PHY that dropped the link in loopback negotiates again.
		_ = pa.WritePHY(sim.MIIBMCR, bmcr&^sim.BMCRLoopback|sim.BMCRANRestart)
		if _, err2 = st.op.WaitLink(5 * time.Second); err == nil {
			err = fmt.Errorf("after PHY loopback: %w", err2)
		}
	}
	return detail, err
}

// selftestFrame builds the n-byte test frame number seq to mac: a locally
// administered source, the IEEE local experimental EtherType 0x88B5, the
// sequence number, then a pattern that differs per frame.
func selftestFrame(mac net.HardwareAddr, n int, seq uint32) []byte {
	f := make([]byte, n)
	copy(f, mac)
	copy(f[6:], []byte{0x02, 0x78, 0x6e, 0x69, 0x63, 0x54})
	f[12], f[13] = 0x88, 0xB5
	binary.BigEndian.PutUint32(f[14:], seq)
	for i := 18; i < n; i++ {
		f[i] = byte(uint32(i)*7 + seq)
	}
	return f
}

// wireWatch counts frames the model puts on the wire while f runs (nil on a
// real device).
func (st *selftester) wireWatch() func() uint64 {
	if st.op.Sim == nil || st.op.Sim.Peer == nil {
		return func() uint64 { return 0 }
	}
	var n atomic.Uint64
	st.op.Sim.Peer.SetReceiver(func([]byte) { n.Add(1) })
	return func() uint64 {
		st.op.Sim.Peer.SetReceiver(nil)
		return n.Load()
	}
}

// loopFrames sends one frame of each test size and wants each back, byte for
// byte and in order, and none on the wire.
func (st *selftester) loopFrames() (string, error) {
	st.drain()
	onWire := st.wireWatch()
	var want [][]byte
	for _, n := range selftestSizes {
		st.seq++
		want = append(want, selftestFrame(st.op.MAC(), n, st.seq))
	}
	got, err := st.sendRecv(want)
	wire := onWire()
	if err != nil {
		return "", err
	}
	for i := range want {
		if i >= len(got) {
			return "", fmt.Errorf("%d of %d frames came back (the %d-byte frame and those after it were lost)", len(got), len(want), len(want[i]))
		}
		if !bytes.Equal(got[i], want[i]) {
			return "", fmt.Errorf("frame %d (%d bytes) came back as %d bytes that differ from byte %d", i, len(want[i]), len(got[i]), firstDiff(got[i], want[i]))
		}
	}
	if len(got) > len(want) {
		return "", fmt.Errorf("%d frames came back for %d sent", len(got), len(want))
	}
	if wire != 0 {
		return "", fmt.Errorf("all frames came back, but %d also reached the wire", wire)
	}
	return fmt.Sprintf("%d frames of %d to %d bytes back byte-exact", len(want), selftestSizes[0], selftestSizes[len(selftestSizes)-1]), nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// sendRecv sends frames on TX queue 0 and collects what RX queue 0 receives
// until as many frames came back or selftestTimeout passes.
func (st *selftester) sendRecv(frames [][]byte) ([][]byte, error) {
	rxq, txq := st.op.RxQueue(0), st.op.TxQueue(0)
	pool := rxq.Pool()
	bufs := make([]*dma.Buf, 0, len(frames))
	for _, f := range frames {
		b := pool.Get()
		if b == nil {
			nic.PutBufs(bufs)
			return nil, errors.New("no free buffer in RX queue 0's pool")
		}
		b.Len = copy(b.Mem[b.Off:], f)
		bufs = append(bufs, b)
	}
	sent := 0
	var got [][]byte
	rx := make([]*dma.Buf, 32)
	deadline := time.Now().Add(selftestTimeout)
	for len(got) < len(frames) && time.Now().Before(deadline) {
		if sent < len(bufs) {
			sent += txq.Send(bufs[sent:])
		}
		txq.Reclaim()
		n := rxq.Recv(rx)
		for _, b := range rx[:n] {
			got = append(got, bytes.Clone(b.Data()))
			b.Free()
		}
		if n == 0 {
			time.Sleep(200 * time.Microsecond)
		}
	}
	if sent < len(bufs) {
		nic.PutBufs(bufs[sent:])
		return got, fmt.Errorf("TX queue 0 took %d of %d frames in %v", sent, len(bufs), selftestTimeout)
	}
	for deadline := time.Now().Add(selftestTimeout); txq.Free() < 1 && time.Now().Before(deadline); {
		txq.Reclaim()
	}
	txq.Reclaim()
	return got, nil
}

// drain takes and frees whatever RX queue 0 holds.
func (st *selftester) drain() {
	rx := make([]*dma.Buf, 32)
	for n := st.op.RxQueue(0).Recv(rx); n > 0; n = st.op.RxQueue(0).Recv(rx) {
		nic.PutBufs(rx[:n])
	}
}

// interrupt checks RX queue 0's vector: armed on an empty ring it stays
// quiet, and a frame (sent in MAC loopback) fires it.
func (st *selftester) interrupt() (string, error) {
	rxq := st.op.RxQueue(0)
	irq := rxq.IRQ()
	if irq == nil {
		return "the port runs without interrupts (platform devices poll)", errSkip
	}
	// Earlier tests' frames left events and causes behind (an armed vector
	// whose cause is still set fires at once): take them, arm, and want a
	// quiet vector within a few rounds.
	quiet := false
	for round := 0; round < 3 && !quiet; round++ {
		st.drain()
		for i := 0; i < 1000; i++ {
			if f, err := irq.Wait(0); err != nil || !f {
				break
			}
		}
		rxq.ArmIRQ()
		st.drain()
		fired, err := irq.Wait(50 * time.Millisecond)
		if err != nil {
			return "", err
		}
		quiet = !fired
	}
	if !quiet {
		return "", errors.New("RX queue 0's vector keeps firing with nothing received")
	}
	rxq.ArmIRQ()
	if err := st.setMACLoopback(true); err != nil {
		return "", err
	}
	defer st.setMACLoopback(false)
	st.seq++
	f := selftestFrame(st.op.MAC(), 64, st.seq)
	b := rxq.Pool().Get()
	if b == nil {
		return "", errors.New("no free buffer in RX queue 0's pool")
	}
	b.Len = copy(b.Mem[b.Off:], f)
	if st.op.TxQueue(0).Send([]*dma.Buf{b}) != 1 {
		b.Free()
		return "", errors.New("TX queue 0 refused the frame")
	}
	start := time.Now()
	fired, err := irq.Wait(selftestTimeout)
	st.drain()
	st.op.TxQueue(0).Reclaim()
	switch {
	case err != nil:
		return "", err
	case !fired:
		return "", fmt.Errorf("RX queue 0's vector did not fire within %v of a looped-back frame", selftestTimeout)
	}
	return fmt.Sprintf("RX queue 0's vector quiet when idle, fired %v after a frame", time.Since(start).Round(time.Microsecond)), nil
}
