package dataplane

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/nic"
)

// efdIRQ is an interrupt on an eventfd, as VFIO delivers one; nothing but the
// test (and Stop) ever signals it.
type efdIRQ struct{ fd int }

func (q *efdIRQ) Fd() int { return q.fd }
func (q *efdIRQ) Wait(timeout time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(q.fd), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, int(timeout/time.Millisecond)); err != nil && err != unix.EINTR {
		return false, err
	}
	var b [8]byte
	n, err := unix.Read(q.fd, b[:])
	if err == unix.EAGAIN {
		return false, nil
	}
	return err == nil && n == 8 && binary.NativeEndian.Uint64(b[:]) > 0, err
}

// efdPort is a memport whose RX queues sleep on eventfds.
type efdPort struct {
	*memport.Port
	rx []nic.RxQueue
}

type efdRxQueue struct {
	*memport.RxQueue
	irq *efdIRQ
}

func (r efdRxQueue) IRQ() nic.IRQ            { return r.irq }
func (r efdRxQueue) ArmIRQ()                 {}
func (p *efdPort) RxQueue(i int) nic.RxQueue { return p.rx[i] }

// TestStopWakesIRQSleeper: Stop wakes a poll goroutine asleep on an eventfd
// interrupt at once instead of waiting out IdleTimeout, and an interrupt still
// wakes the loop before Stop.
func TestStopWakesIRQSleeper(t *testing.T) {
	mp := newPorts(t, 1, memport.Config{})[0]
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatalf("eventfd: %v", err)
	}
	defer unix.Close(fd)
	irq := &efdIRQ{fd: fd}
	p := &efdPort{Port: mp, rx: []nic.RxQueue{efdRxQueue{RxQueue: mp.Rx(0), irq: irq}}}
	const idle = 10 * time.Second
	e, err := New(Config{Ports: []PortConfig{{Port: p}}, Program: &scriptProg{}, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// A frame and a fired interrupt: the sleeping loop wakes and drops it.
	time.Sleep(20 * time.Millisecond)
	mp.Rx(0).Inject(frame(bpf.ActionDrop, 0, 0, 1, 64))
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "frame seen", func() bool { return e.Snapshot().Ports[0].Counters[RxXDPDrop] == 1 })
	time.Sleep(50 * time.Millisecond) // asleep on the eventfd again
	start := time.Now()
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Stop took %v with an idle timeout of %v: the sleeping poller was not woken", d, idle)
	}
	_ = mp.Close()
	if err := mp.CheckIdle(); err != nil {
		t.Errorf("buffer lost: %v", err)
	}
}
