package nictest

import (
	"testing"
)

// TestFails: a helper that passes leaves "", Fatal and Fatalf end it there
// with their message.
func TestFails(t *testing.T) {
	if msg := Fails(t, func(testing.TB) {}); msg != "" {
		t.Fatalf("a passing fn: %q", msg)
	}
	after := false
	if msg := Fails(t, func(tb testing.TB) { tb.Fatalf("bad %d", 7); after = true }); msg != "bad 7" || after {
		t.Fatalf("Fatalf: %q, ran on after it: %v", msg, after)
	}
	if msg := Fails(t, func(tb testing.TB) { tb.Fatal("gone", 1) }); msg != "gone1" {
		t.Fatalf("Fatal: %q", msg)
	}
}
