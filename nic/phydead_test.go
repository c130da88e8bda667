package nic

import (
	"errors"
	"testing"
)

func TestPHYAnswers(t *testing.T) {
	if err := PHYAnswers(1, 1, 0x796d); err != nil {
		t.Fatalf("a real BMSR: %v", err)
	}
	if err := PHYAnswers(3, 1, 0xFFFF); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("all ones: %v", err)
	}
}
