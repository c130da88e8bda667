package sim

import (
	"bytes"
	"testing"
)

func TestRecorderKeepsCopiesInOrder(t *testing.T) {
	a, b := NewPair()
	var rec Recorder
	b.SetReceiver(rec.Receive)
	f := []byte("frame one, long enough for a wire")
	if err := a.Send(f); err != nil {
		t.Fatal(err)
	}
	f[0] = 'X' // the sender reuses its buffer
	if err := a.Send([]byte("frame two, long enough for a wire")); err != nil {
		t.Fatal(err)
	}
	got := rec.Frames()
	if len(got) != 2 || !bytes.HasPrefix(got[0], []byte("frame one")) || !bytes.HasPrefix(got[1], []byte("frame two")) {
		t.Fatalf("recorded %q", got)
	}
	got[0] = nil
	if rec.Frames()[0] == nil {
		t.Fatal("Frames returned the recorder's own slice")
	}
}
