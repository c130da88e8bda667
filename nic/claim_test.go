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

// TestOpenClaimed: a port that opened keeps the claim until it releases it;
// one that failed to open gave it back.
func TestOpenClaimed(t *testing.T) {
	dev := sim.NewDevice(sim.DeviceConfig{BARSize: 4096, MSIXVectors: 1}, sim.NewMemory(sim.MemoryConfig{}, &sim.Faults{}), nopModel{})
	type port struct{ release func() }
	keep := func(p *port, r func()) { p.release = r }
	boom := errors.New("bring-up failed")
	if _, err := nic.OpenClaimed(dev, "igb", func() (*port, error) { return nil, boom }, keep); !errors.Is(err, boom) {
		t.Fatalf("failed open: %v", err)
	}
	p, err := nic.OpenClaimed(dev, "igb", func() (*port, error) { return &port{}, nil }, keep)
	if err != nil || p.release == nil {
		t.Fatalf("open after a failed one: %v", err)
	}
	if _, err := nic.OpenClaimed(dev, "fec", func() (*port, error) { return &port{}, nil }, keep); !errors.Is(err, nic.ErrBusy) {
		t.Fatalf("second open: %v, want ErrBusy", err)
	}
	p.release()
	if _, err := nic.OpenClaimed(dev, "fec", func() (*port, error) { return &port{}, nil }, keep); err != nil {
		t.Fatalf("open after release: %v", err)
	}
}
