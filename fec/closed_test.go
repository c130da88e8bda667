package fec_test

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

func TestClosedPortContract(t *testing.T) {
	m, err := fecsim.New(fecsim.Config{AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nictest.ClosedPort(t, func() (nic.Port, error) {
		return fec.Open(m.Device(), fec.Config{Queues: 1, LinkTimeout: 2 * time.Second})
	})
	if err := m.Err(); err != nil {
		t.Errorf("model faults: %v", err)
	}
}

func TestSendRefusesABufferItHolds(t *testing.T) {
	m, err := fecsim.New(fecsim.Config{AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := fec.Open(m.Device(), fec.Config{Queues: 1, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	nictest.SendTwice(t, p)
	if err := m.Err(); err != nil {
		t.Errorf("model faults: %v", err)
	}
}
