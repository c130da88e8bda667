package nic

import (
	"errors"
	"strings"
	"testing"
)

func TestFreeQueuesOrderAndErrors(t *testing.T) {
	var order []string
	free := func(s string) error {
		order = append(order, s)
		if strings.HasSuffix(s, "!") {
			return errors.New(s)
		}
		return nil
	}
	if err := FreeQueues("fam", "p0", []error{nil}, []string{"t0", "t1"}, free, []string{"r0"}, free); err != nil {
		t.Fatalf("no failures: got %v", err)
	}
	if got := strings.Join(order, ","); got != "t0,t1,r0" {
		t.Fatalf("order %s, want TX before RX: t0,t1,r0", got)
	}
	before := errors.New("stop")
	err := FreeQueues("fam", "p0", []error{before}, []string{"t0!"}, free, []string{"r0!"}, free)
	if err == nil || !errors.Is(err, before) {
		t.Fatalf("got %v, want it to keep the earlier error", err)
	}
	if s := err.Error(); !strings.HasPrefix(s, "fam: p0: close: ") || !strings.Contains(s, "t0!") || !strings.Contains(s, "r0!") {
		t.Fatalf("got %q, want the prefix and both queue errors", s)
	}
}
