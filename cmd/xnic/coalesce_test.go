package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
)

// TestCoalesceHoldsInterrupts: rx-usecs lands in the model's EITR, and the
// model then holds a second RX interrupt back for that long; 0 lets it
// through at once.
func TestCoalesceHoldsInterrupts(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "igb", Interrupts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	tg, err := portRegTarget(op, false)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := coalesceExec(tg, 8000)
	if err != nil || len(qs) != 1 || qs[0].RxUsecs != 8000 {
		t.Fatalf("%+v %v", qs, err)
	}
	regs, _ := op.Sim.Model.NICDevice().Regs(0)
	off, _ := regOffset(tg, "EITR0")
	if got := regs.Read32(off) & 0x7FFC >> 2; got != 8000 {
		t.Fatalf("the model's EITR0 interval is %d", got)
	}
	st := &selftester{op: op}
	rxq := op.RxQueue(0)
	irq := rxq.IRQ()
	frame := func() {
		st.seq++
		if err := op.Sim.Peer.Send(selftestFrame(op.MAC(), 64, st.seq)); err != nil {
			t.Fatal(err)
		}
	}
	arm := func() {
		st.drain()
		for f, _ := irq.Wait(0); f; f, _ = irq.Wait(0) {
		}
		rxq.ArmIRQ()
	}
	arm()
	frame()
	if f, _ := irq.Wait(time.Second); !f {
		t.Fatal("the first frame raised no interrupt")
	}
	t0 := time.Now() // no earlier than that interrupt
	arm()
	frame()
	if f, _ := irq.Wait(time.Second); !f {
		t.Fatal("the held interrupt never came")
	}
	// EITR keeps 8 ms between the two messages; t0 may be late by the
	// wake-up of the first Wait, hence the slack.
	if d := time.Since(t0); d < 5*time.Millisecond {
		t.Fatalf("the second interrupt came %v after the first, with EITR at 8 ms", d)
	}
	if _, err := coalesceExec(tg, 0x7FFC>>2+1); err == nil {
		t.Fatal("an interval EITR cannot hold was taken")
	}
	if _, err := coalesceExec(tg, 0); err != nil {
		t.Fatal(err)
	}
	arm()
	frame()
	if f, _ := irq.Wait(time.Second); !f {
		t.Fatal("no interrupt with rx-usecs 0")
	}
}

func TestCoalesceCommand(t *testing.T) {
	var out coalesceOut
	cliJSON(t, &out, "coalesce", "--sim", "igb:i350", "--queues", "2", "rx-usecs", "125", "--json")
	if len(out.Queues) != 2 || out.Queues[0].RxUsecs != 125 || out.Queues[1].RxUsecs != 125 {
		t.Fatalf("%+v", out)
	}
	// fec: RXIC of all three rings of the i.MX8MP ENET, in the model.
	cliJSON(t, &out, "coalesce", "--sim", "fec", "rx-usecs", "500", "--json")
	if len(out.Queues) != 3 || out.Queues[0].RxUsecs != 500 || out.Queues[2].RxUsecs != 500 {
		t.Fatalf("fec: %+v", out)
	}
	if rc, _, errs := runPort(t, "coalesce", "--sim", "fec:imx6"); rc != 1 || !strings.Contains(errs, "not supported") {
		t.Errorf("fec:imx6: rc %d %s", rc, errs)
	}
	// dwmac: RIWT of every channel, on a port opened with coalescing
	// (512 us is 200 units of 512 cycles at the Intel model's 200 MHz).
	cliJSON(t, &out, "coalesce", "--sim", "dwmac", "--queues", "2", "--rx-usecs", "100", "rx-usecs", "512", "--json")
	if len(out.Queues) != 2 || out.Queues[0].RxUsecs != 512 || out.Queues[1].RxUsecs != 512 {
		t.Fatalf("dwmac: %+v", out)
	}
	// Shown (0) but not set on a port opened without: its descriptors all
	// ask for an interrupt, so the watchdog would change nothing.
	cliJSON(t, &out, "coalesce", "--sim", "dwmac", "--json")
	if len(out.Queues) != 1 || out.Queues[0].RxUsecs != 0 {
		t.Fatalf("dwmac without coalescing: %+v", out)
	}
	if rc, _, errs := runPort(t, "coalesce", "--sim", "dwmac", "rx-usecs", "500"); rc != 2 || !strings.Contains(errs, "opened without RX coalescing") {
		t.Errorf("dwmac rx-usecs on a port opened without coalescing: rc %d %s", rc, errs)
	}
	if rc, _, errs := runPort(t, "coalesce", "--sim", "dwmac", "--rx-usecs", "100", "rx-usecs", "0"); rc != 2 || !strings.Contains(errs, "without an interrupt") {
		t.Errorf("dwmac rx-usecs 0 with IOC cleared: rc %d %s", rc, errs)
	}
	if rc, _, _ := runPort(t, "coalesce", "--sim", "dwmac:imx8mp", "--rx-usecs", "100", "rx-usecs", "2000"); rc != 2 {
		t.Errorf("dwmac:imx8mp rx-usecs 2000 (its 266 MHz watchdog holds 1963): rc %d, want 2", rc)
	}
	for _, bad := range [][]string{{"coalesce", "--sim", "igb", "rx-usecs", "8192"}, {"coalesce", "--sim", "igb", "tx-usecs", "1"}, {"coalesce", "--sim", "igb", "rx-usecs"}} {
		if rc, _, _ := runPort(t, bad...); rc != 2 {
			t.Errorf("%q: rc %d", bad, rc)
		}
	}
}

// --rx-usecs sets the moderation at open (ethtool -C at open) where the
// family has it, and is a usage error where it has not.
func TestRxUsecsAtOpen(t *testing.T) {
	rc, out, errs := runPort(t, "coalesce", "--sim", "igb", "--rx-usecs", "250", "--json")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var got coalesceOut
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got.Queues) == 0 || got.Queues[0].RxUsecs != 250 {
		t.Errorf("after --rx-usecs 250 at open: %+v", got)
	}
	rc, out, errs = runPort(t, "coalesce", "--sim", "fec", "--rx-usecs", "40", "--json")
	if err := json.Unmarshal([]byte(out), &got); rc != 0 || err != nil || got.Queues[0].RxUsecs != 40 {
		t.Errorf("fec after --rx-usecs 40 at open: rc %d %+v %s", rc, got, errs)
	}
	// dwmac: 40 us is 32 units of 256 cycles at 200 MHz, 40.96 us.
	rc, out, errs = runPort(t, "coalesce", "--sim", "dwmac", "--rx-usecs", "40", "--json")
	if err := json.Unmarshal([]byte(out), &got); rc != 0 || err != nil || got.Queues[0].RxUsecs != 40 {
		t.Errorf("dwmac after --rx-usecs 40 at open: rc %d %+v %s", rc, got, errs)
	}
	if rc, _, errs := runPort(t, "info", "--sim", "dwmac", "--rx-usecs", "3000"); rc != 2 || !strings.Contains(errs, "rx-usecs") {
		t.Errorf("dwmac --rx-usecs beyond RIWT: rc %d %s", rc, errs)
	}
	if rc, _, errs := runPort(t, "info", "--sim", "dwmac:imx8mp", "--rx-usecs", "2500"); rc != 1 || !strings.Contains(errs, "RX watchdog") {
		t.Errorf("dwmac:imx8mp --rx-usecs 2500 (its clock holds 1963): rc %d %s", rc, errs)
	}
	if rc, _, errs := runPort(t, "info", "--sim", "fec:imx6", "--rx-usecs", "10"); rc == 0 || !strings.Contains(errs, "no interrupt coalescing") {
		t.Errorf("fec:imx6 --rx-usecs: rc %d %s", rc, errs)
	}
	if rc, _, _ := runPort(t, "info", "--sim", "fec", "--rx-usecs", "16000"); rc != 2 {
		t.Errorf("--rx-usecs beyond ICTT's field: rc %d, want 2", rc)
	}
	if rc, _, _ := runPort(t, "info", "--sim", "igb", "--rx-usecs", "99999"); rc != 2 {
		t.Errorf("--rx-usecs beyond EITR's field: rc %d, want 2", rc)
	}
}

// TestCoalesceDWMACModel: the interval rx-usecs sets reaches the model's
// DMA_CH0_Rx_Interrupt_Watchdog_Timer, and the model then holds a frame's
// interrupt for it.
func TestCoalesceDWMACModel(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "dwmac", RxUsecs: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	tg, err := portRegTarget(op, false)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := coalesceExec(tg, 2560) // 250 units of 2048 cycles at 200 MHz
	if err != nil || len(qs) != 1 || qs[0].RxUsecs != 2560 {
		t.Fatalf("%+v %v", qs, err)
	}
	regs, _ := op.Sim.Model.NICDevice().Regs(0)
	if got := regs.Read32(0x1138); got != 3<<16|250 {
		t.Fatalf("the model's RIWT0 is %#x, want RWTU 3 RWT 250", got)
	}
	st := &selftester{op: op}
	rxq := op.RxQueue(0)
	irq := rxq.IRQ()
	st.drain()
	rxq.ArmIRQ()
	// The first frame's descriptor leaves IOC clear (one frame in the
	// default 64 asks): only the 2.56 ms watchdog interrupts.
	t0 := time.Now()
	st.seq++
	if err := op.Sim.Peer.Send(selftestFrame(op.MAC(), 64, st.seq)); err != nil {
		t.Fatal(err)
	}
	if f, _ := irq.Wait(time.Second); !f {
		t.Fatal("the watchdog never interrupted")
	}
	if d := time.Since(t0); d < 2560*time.Microsecond {
		t.Fatalf("interrupt %v after the frame, with a 2.56 ms watchdog", d)
	}
	if err := op.Sim.Model.(dwmacModel).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCoalesceDWMACControl: through a running port's control socket, the
// interval changes on a run opened with --rx-usecs and is refused, saying
// why, on one opened without.
func TestCoalesceDWMACControl(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, usecs := range []int{0, 100} {
		o := &dpRunOptions{portOptions: portOptions{Sim: "dwmac", Queues: 1, RxUsecs: usecs}, prog: examplePath(t, "xdp_drop_count"), interval: 50 * time.Millisecond, tap: "none", peer: "none", workers: -1, json: true}
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut bytes.Buffer
		done := make(chan error, 1)
		go func() { done <- dpRun(ctx, o, &out, &errOut) }()
		name := "dwmacsim0"
		waitFor(t, "the control socket", func() bool {
			select {
			case err := <-done:
				t.Fatalf("run ended: %v: %s", err, errOut.String())
			default:
			}
			return control.Alive(control.Path(name))
		})
		if usecs == 0 {
			if rc, _, errs := runPort(t, "coalesce", "--control", name, "rx-usecs", "512"); rc != 2 || !strings.Contains(errs, "opened without RX coalescing") {
				t.Errorf("coalesce through the socket of a run without --rx-usecs: rc %d %s", rc, errs)
			}
		} else {
			var co coalesceOut
			cliJSON(t, &co, "coalesce", "--control", name, "rx-usecs", "512", "--json")
			var dump nic.RegDump
			cliJSON(t, &dump, "regs", "--control", name, "--json")
			if r, _ := dump.Reg("RIWT0"); len(co.Queues) != 1 || co.Queues[0].RxUsecs != 512 || r.Value != 1<<16|200 {
				t.Errorf("coalesce through the socket: %+v, RIWT0 %#x", co, r.Value)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v: %s", err, errOut.String())
		}
	}
}
