package nic

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// mapRegs is a register window backed by a map; reads count per offset.
type mapRegs struct {
	v     map[uint32]uint32
	reads map[uint32]int
	read  func(off uint32) uint32 // overrides v when set
}

func (m *mapRegs) Read32(off uint32) uint32 {
	if m.reads == nil {
		m.reads = map[uint32]int{}
	}
	m.reads[off]++
	if m.read != nil {
		return m.read(off)
	}
	return m.v[off]
}

func (m *mapRegs) Write32(off, val uint32) { m.v[off] = val }

func TestRegDumpReadLookupString(t *testing.T) {
	r := &mapRegs{v: map[uint32]uint32{0x0: 0x41, 0x1c: 0xdeadbeef}}
	d := &RegDump{NameWidth: 6, OffsetDigits: 3}
	flags := []Flag{{0x1, "EN"}, {0x2, "X"}, {0x40, "LU"}}
	if v := d.Read(r, "CTRL", 0x0, func(v uint32) []Field { return FlagFields(v, flags) }); v != 0x41 {
		t.Fatalf("Read returned 0x%x, want 0x41", v)
	}
	d.Read(r, "TAIL", 0x1c, nil)
	if r.reads[0] != 1 || r.reads[0x1c] != 1 {
		t.Fatalf("reads %v, want one each", r.reads)
	}
	ctrl, ok := d.Reg("CTRL")
	if !ok || ctrl.Offset != 0 || ctrl.Value != 0x41 {
		t.Fatalf("Reg(CTRL) = %+v, %v", ctrl, ok)
	}
	for name, want := range map[string]string{"EN": "1", "X": "0", "LU": "1"} {
		if got, ok := ctrl.Field(name); !ok || got != want {
			t.Errorf("field %s = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := ctrl.Field("NOPE"); ok {
		t.Error("Field found a field that is not there")
	}
	if _, ok := d.Reg("NOPE"); ok {
		t.Error("Reg found a register that is not there")
	}
	if tail, _ := d.Reg("TAIL"); tail.Fields != nil {
		t.Errorf("TAIL has fields %v without a decoder", tail.Fields)
	}
	want := "CTRL   [0x000] 0x00000041 EN=1 X=0 LU=1\nTAIL   [0x01c] 0xdeadbeef\n"
	if got := d.String(); got != want {
		t.Errorf("String:\n%q\nwant\n%q", got, want)
	}
	// Without a layout the columns fit the content.
	d.NameWidth, d.OffsetDigits = 0, 0
	want = "CTRL [0x00] 0x00000041 EN=1 X=0 LU=1\nTAIL [0x1c] 0xdeadbeef\n"
	if got := d.String(); got != want {
		t.Errorf("String without layout:\n%q\nwant\n%q", got, want)
	}
}

func TestRegDumpJSON(t *testing.T) {
	d := RegDump{Registers: []RegValue{{Name: "A", Offset: 4, Value: 5, Fields: []Field{{"F", "1"}}}, {Name: "B", Offset: 8}}, NameWidth: 9}
	b, err := json.Marshal(&d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"registers":[{"name":"A","offset":4,"value":5,"fields":[{"name":"F","value":"1"}]},{"name":"B","offset":8,"value":0}]}`
	if string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	var back RegDump
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if f, _ := back.Registers[0].Field("F"); f != "1" || len(back.Registers) != 2 {
		t.Fatalf("round trip %+v", back)
	}
}

func TestCounterValueAndQueueCounters(t *testing.T) {
	cs := AppendQueueCounters([]Counter{{"rx_packets", 7}}, "tx", 3, 10, 1500)
	if len(cs) != 3 || cs[1].Name != "tx_queue_3_packets" || cs[1].Value != 10 || cs[2].Name != "tx_queue_3_bytes" || cs[2].Value != 1500 {
		t.Fatalf("AppendQueueCounters: %+v", cs)
	}
	if v, ok := CounterValue(cs, "rx_packets"); !ok || v != 7 {
		t.Errorf("rx_packets = %d, %v", v, ok)
	}
	if v, ok := CounterValue(cs, "tx_queue_3_bytes"); !ok || v != 1500 {
		t.Errorf("tx_queue_3_bytes = %d, %v", v, ok)
	}
	if _, ok := CounterValue(cs, "rx_queue_3_bytes"); ok {
		t.Error("CounterValue found a counter that is not there")
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Second, time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Poll stopped after %d calls", n)
	}
	start := time.Now()
	n = 0
	if Poll(20*time.Millisecond, time.Millisecond, func() bool { n++; return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Fatalf("Poll gave up after %v, before its 20ms timeout", el)
	}
	if n < 2 {
		t.Fatalf("Poll called cond %d times; want a call after the deadline too", n)
	}
	// A zero timeout still asks once.
	n = 0
	if !Poll(0, time.Millisecond, func() bool { n++; return true }) || n != 1 {
		t.Fatalf("Poll(0) called cond %d times", n)
	}
}

func TestPollReg(t *testing.T) {
	var calls atomic.Int32
	r := &mapRegs{read: func(off uint32) uint32 {
		if calls.Add(1) < 4 {
			return 0x1
		}
		return 0x0
	}}
	v, err := PollReg(r, 0x10, time.Second, 10*time.Microsecond, func(v uint32) bool { return v&1 == 0 })
	if err != nil || v != 0 || r.reads[0x10] != 4 {
		t.Fatalf("PollReg = 0x%x, %v after %d reads", v, err, r.reads[0x10])
	}
	gone := &mapRegs{read: func(uint32) uint32 { return 0xFFFFFFFF }}
	if v, err := PollReg(gone, 0, time.Second, time.Millisecond, func(uint32) bool { return true }); !errors.Is(err, ErrNoDevice) || v != 0xFFFFFFFF {
		t.Fatalf("all ones: 0x%x, %v; want ErrNoDevice", v, err)
	}
	stuck := &mapRegs{v: map[uint32]uint32{0: 2}}
	if v, err := PollReg(stuck, 0, 5*time.Millisecond, time.Millisecond, func(v uint32) bool { return v == 0 }); !errors.Is(err, ErrTimeout) || v != 2 {
		t.Fatalf("stuck: 0x%x, %v; want ErrTimeout", v, err)
	}
}

func TestWaitLinkUp(t *testing.T) {
	n := 0
	l, up := WaitLinkUp(time.Second, time.Millisecond, func() LinkState {
		n++
		return LinkState{Up: n >= 2, SpeedMbps: 1000}
	})
	if !up || !l.Up || n != 2 {
		t.Fatalf("WaitLinkUp = %+v, %v after %d calls", l, up, n)
	}
	l, up = WaitLinkUp(3*time.Millisecond, time.Millisecond, func() LinkState { return LinkState{SpeedMbps: 0} })
	if up || l.Up {
		t.Fatalf("WaitLinkUp reported %+v, %v for a link that stays down", l, up)
	}
}

func TestCounterTotals(t *testing.T) {
	var c CounterTotals
	names := []string{"a", "b"}
	name := func(i int) string { return names[i] }
	cs := c.Append(nil, 2, name)
	if len(cs) != 2 || cs[0] != (Counter{"a", 0}) || cs[1] != (Counter{"b", 0}) {
		t.Fatalf("before any reading: %+v", cs)
	}
	calls := 0
	read := func(total []uint64) {
		calls++
		if len(total) != 2 {
			t.Fatalf("read got %d totals, want 2", len(total))
		}
		total[0] += 3
		total[1] += 1 << 33
	}
	c.Collect(2, read)
	c.Collect(2, read)
	cs = c.Append([]Counter{{"x", 1}}, 2, name)
	if len(cs) != 3 || cs[1] != (Counter{"a", 6}) || cs[2] != (Counter{"b", 1 << 34}) {
		t.Fatalf("after two readings: %+v", cs)
	}
	c.Stop()
	c.Collect(2, read)
	if calls != 2 {
		t.Fatalf("read called %d times, want 2 (none after Stop)", calls)
	}
	if cs = c.Append(nil, 2, name); cs[0].Value != 6 {
		t.Fatalf("Stop lost the totals: %+v", cs)
	}
}

type nopRx struct{ id int }

func (*nopRx) Recv([]*dma.Buf) int { return 0 }
func (*nopRx) Pool() *dma.Pool     { return nil }
func (*nopRx) IRQ() IRQ            { return nil }
func (*nopRx) ArmIRQ()             {}

type nopTx struct{ id int }

func (*nopTx) Send([]*dma.Buf) int { return 0 }
func (*nopTx) Reclaim() int        { return 0 }
func (*nopTx) Free() int           { return 0 }

func TestQueueAt(t *testing.T) {
	rx := []*nopRx{{0}, {1}}
	tx := []*nopTx{{0}, {1}, {2}}
	if q, ok := RxQueueAt(rx, 1).(*nopRx); !ok || q.id != 1 {
		t.Fatalf("RxQueueAt(1) = %v", q)
	}
	if q, ok := TxQueueAt(tx, 2).(*nopTx); !ok || q.id != 2 {
		t.Fatalf("TxQueueAt(2) = %v", q)
	}
	for _, i := range []int{-1, 2, 100} {
		if q := RxQueueAt(rx, i); q != nil {
			t.Errorf("RxQueueAt(%d) = %#v, want a nil interface", i, q)
		}
	}
	for _, i := range []int{-1, 3} {
		if q := TxQueueAt(tx, i); q != nil {
			t.Errorf("TxQueueAt(%d) = %#v, want a nil interface", i, q)
		}
	}
	if q := RxQueueAt([]*nopRx(nil), 0); q != nil {
		t.Errorf("RxQueueAt on no queues = %#v", q)
	}
}

func TestAppendPortQueueCounters(t *testing.T) {
	counts := func(i int) (int, uint64, uint64) { return i, uint64(10 * i), uint64(100 * i) }
	cs := AppendPortQueueCounters(nil, []int{0, 1}, counts, []int{2}, counts)
	want := []Counter{{"rx_queue_0_packets", 0}, {"rx_queue_0_bytes", 0}, {"rx_queue_1_packets", 10}, {"rx_queue_1_bytes", 100},
		{"tx_queue_2_packets", 20}, {"tx_queue_2_bytes", 200}}
	if len(cs) != len(want) {
		t.Fatalf("got %+v, want %+v", cs, want)
	}
	for i := range want {
		if cs[i] != want[i] {
			t.Fatalf("got %+v, want %+v", cs, want)
		}
	}
}
