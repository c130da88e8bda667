package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
	for _, v := range []string{"dwmac", "fec:imx6"} {
		if rc, _, errs := runPort(t, "coalesce", "--sim", v); rc != 1 || !strings.Contains(errs, "not supported") {
			t.Errorf("%s: rc %d %s", v, rc, errs)
		}
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
	for _, v := range []string{"dwmac"} {
		if rc, _, errs := runPort(t, "info", "--sim", v, "--rx-usecs", "10"); rc != 2 || !strings.Contains(errs, "rx-usecs") {
			t.Errorf("%s --rx-usecs: rc %d %s", v, rc, errs)
		}
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
