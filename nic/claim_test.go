package nic_test

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

func TestClaimOnePortPerDevice(t *testing.T) {
	newDev := func() *sim.Device {
		return sim.NewDevice(sim.DeviceConfig{BARSize: 4096, MSIXVectors: 1}, sim.NewMemory(sim.MemoryConfig{}, &sim.Faults{}), nopModel{})
	}
	a, b := newDev(), newDev()
	ra, err := nic.Claim(a, "igb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nic.Claim(a, "dwmac"); !errors.Is(err, nic.ErrBusy) {
		t.Fatalf("second claim: %v, want ErrBusy", err)
	}
	rb, err := nic.Claim(b, "igb")
	if err != nil {
		t.Fatalf("another device: %v", err)
	}
	ra()
	ra() // idempotent: must not release someone else's claim
	r2, err := nic.Claim(a, "igb")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	ra()
	if _, err := nic.Claim(a, "igb"); !errors.Is(err, nic.ErrBusy) {
		t.Fatalf("a stale release freed the new claim: %v", err)
	}
	r2()
	rb()
}

type nopModel struct{}

func (nopModel) Read32(uint32) uint32   { return 0 }
func (nopModel) Write32(uint32, uint32) {}
func (nopModel) Reset()                 {}
