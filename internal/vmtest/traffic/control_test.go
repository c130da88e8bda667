package traffic

import (
	"errors"
	"testing"
)

func TestMsgRoundTrip(t *testing.T) {
	m := NewMsg(VerbErr, 42, "msg", `no "ack" for 20s`, "n", "5", "mac", "02:78:6e:69:63:01")
	f, err := AppendControl(nil, m, macA, macB)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) < MinFrameLen || Classify(f) != KindControl {
		t.Fatalf("control frame of %d bytes classified %v", len(f), Classify(f))
	}
	got, err := ParseControl(f)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != m.String() || got.ID != 42 || got.Get("msg") != `no "ack" for 20s` {
		t.Errorf("round trip: %q, want %q", got, m)
	}
	if n, err := got.Int("n"); err != nil || n != 5 {
		t.Errorf("Int(n) = %d, %v", n, err)
	}
	if _, err := got.Int("mac"); err == nil {
		t.Error("Int of a MAC address succeeded")
	}
	if _, err := got.Int("absent"); err == nil {
		t.Error("Int of an absent key succeeded")
	}
}

func TestParseMsgRejects(t *testing.T) {
	for _, s := range []string{"", "=x id=1", "hello", "hello id=x", "hello id=1 novalue", `hello id=1 k="unterminated`, "hello id=99999999999"} {
		if m, err := ParseMsg(s); err == nil {
			t.Errorf("ParseMsg(%q) = %v, want an error", s, m)
		}
	}
	f, _ := AppendControl(nil, NewMsg(VerbHello, 1), macA, macB)
	f[offCtlLen] = 0x7f // length beyond the frame
	if _, err := ParseControl(f); err == nil {
		t.Error("control frame with an overlong length accepted")
	}
	if _, err := ParseControl(Frame(1, 1, macA, macB)); !errors.Is(err, ErrNotControl) {
		t.Errorf("data frame: %v, want ErrNotControl", err)
	}
	long := make([]byte, MaxControlText)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := AppendControl(nil, NewMsg(VerbErr, 1, "msg", string(long)), macA, macB); err == nil {
		t.Error("oversized control message accepted")
	}
}

func FuzzParseControl(f *testing.F) {
	ok, _ := AppendControl(nil, NewMsg(VerbInject, 3, "count", "10", "seed", "-4", "window", "64"), macA, macB)
	f.Add(ok)
	f.Add(Frame(1, 2, macA, macB))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseControl(b)
		if err != nil {
			return
		}
		// What parses re-encodes to something that parses the same.
		again, err := ParseMsg(m.String())
		if err != nil || again.String() != m.String() {
			t.Fatalf("%q re-parsed as %q, %v", m, again, err)
		}
	})
}
