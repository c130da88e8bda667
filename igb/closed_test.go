package igb_test

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

func TestClosedPortContract(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{Queues: 1, AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nictest.ClosedPort(t, func() (nic.Port, error) {
		return igb.Open(m.Device(), igb.Config{Queues: 1, LinkTimeout: 2 * time.Second})
	})
	if err := m.Err(); err != nil {
		t.Errorf("model faults: %v", err)
	}
}

func TestSendRefusesABufferItHolds(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{Queues: 1, AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := igb.Open(m.Device(), igb.Config{Queues: 1, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	nictest.SendTwice(t, p)
	if err := m.Err(); err != nil {
		t.Errorf("model faults: %v", err)
	}
}
