package sim

import (
	"bytes"
	"sync"
	"testing"
)

// fakeLink records what is sent and holds the receiver it was given.
type fakeLink struct {
	sent [][]byte
	recv Receiver
}

func (l *fakeLink) Send(f []byte) error {
	l.sent = append(l.sent, append([]byte(nil), f...))
	return nil
}
func (l *fakeLink) SetReceiver(r Receiver) { l.recv = r }
func (l *fakeLink) Close() error           { return nil }

func TestWireAttachTransmitDetach(t *testing.T) {
	var mu sync.Mutex
	var w Wire
	if w.Sink() != nil {
		t.Fatal("zero Wire has a sink")
	}
	var got [][]byte
	recv := func(f []byte) {
		mu.Lock() // Attach sets the receiver with mu released
		got = append(got, append([]byte(nil), f...))
		mu.Unlock()
	}
	a := &fakeLink{}
	w.Attach(&mu, a, recv)
	if a.recv == nil {
		t.Fatal("Attach did not set the link's receiver")
	}
	a.recv([]byte{1, 2})
	if len(got) != 1 || !bytes.Equal(got[0], []byte{1, 2}) {
		t.Fatalf("received %v", got)
	}
	mu.Lock()
	sink := w.Sink()
	mu.Unlock()
	sink([]byte{3})
	if len(a.sent) != 1 || a.sent[0][0] != 3 {
		t.Fatalf("link a sent %v", a.sent)
	}

	// Attaching another link unhooks the first.
	b := &fakeLink{}
	w.Attach(&mu, b, recv)
	if a.recv != nil || b.recv == nil {
		t.Fatalf("after re-attach: a.recv set %v, b.recv set %v", a.recv != nil, b.recv != nil)
	}
	w.Sink()([]byte{4})
	if len(a.sent) != 1 || len(b.sent) != 1 {
		t.Fatalf("sent a %d b %d frames, want 1 and 1", len(a.sent), len(b.sent))
	}

	// SetTransmit diverts transmitted frames; the link still delivers.
	var tx [][]byte
	w.SetTransmit(&mu, func(f []byte) { tx = append(tx, f) })
	w.Sink()([]byte{5})
	if len(tx) != 1 || len(b.sent) != 1 || b.recv == nil {
		t.Fatalf("SetTransmit: tx %d, b sent %d", len(tx), len(b.sent))
	}

	// Re-attaching the same link keeps its receiver; nil detaches.
	w.Attach(&mu, b, recv)
	if b.recv == nil {
		t.Fatal("re-attaching the same link cleared its receiver")
	}
	w.Attach(&mu, nil, recv)
	if b.recv != nil || w.Sink() != nil {
		t.Fatal("Attach(nil) left the link hooked or a sink set")
	}
}
