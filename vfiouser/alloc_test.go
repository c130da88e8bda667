package vfiouser

import (
	"encoding/binary"
	"testing"

	"github.com/xnic-dev/xnic/igb/igbsim"
	"golang.org/x/sys/unix"
	"net"
	"os"
)

// The per-access paths allocate nothing: a register read or write (the guest's
// tail writes come one per burst) and an interrupt forwarded to its eventfd.

func newAllocSession(t *testing.T) *Session {
	t.Helper()
	m, err := igbsim.New(igbsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	sc, cc := socketPair(t)
	t.Cleanup(func() { cc.Close() })
	go func() { // the client side: drain replies with one buffer
		buf := make([]byte, 64<<10)
		for {
			if _, err := cc.Read(buf); err != nil {
				return // closed
			}
		}
	}()
	s, err := NewSession(sc, m.SimDevice(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.shutdown)
	s.negotiated.Store(true)
	return s
}

func TestRegionAccessAllocatesNothing(t *testing.T) {
	s := newAllocSession(t)
	le := binary.LittleEndian
	rd := make([]byte, regionRWFixed)
	le.PutUint64(rd, 0x5400)
	le.PutUint32(rd[12:], 4)
	wr := append(append([]byte(nil), rd...), 1, 2, 3, 4)
	read := &Request{Header: Header{Command: CmdRegionRead}, Payload: rd}
	write := &Request{Header: Header{Command: CmdRegionWrite}, Payload: wr}
	n := testing.AllocsPerRun(200, func() {
		if err := s.handle(read); err != nil {
			t.Fatal(err)
		}
		if err := s.handle(write); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per register read and write", n)
	}
	if got := s.stats.RegionReads.Load(); got < 200 {
		t.Fatalf("%d reads handled", got)
	}
}

func TestReadMsgAllocatesNothing(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sc, cc := socketPair(t)
	defer cc.Close()
	s, err := NewSession(sc, m.SimDevice(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.shutdown()
	msg := make([]byte, HeaderSize+regionRWFixed+4)
	PutHeader(msg, Header{ID: 7, Command: CmdRegionWrite, Size: uint32(len(msg))})
	binary.LittleEndian.PutUint32(msg[HeaderSize+12:], 4)
	const runs = 100
	for i := 0; i <= runs+1; i++ { // AllocsPerRun runs once more to warm up
		if _, err := cc.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.conn.readMsg(); err != nil { // the first read sizes the buffer
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(runs, func() {
		req, err := s.conn.readMsg()
		if err != nil || req.Command != CmdRegionWrite || len(req.Payload) != regionRWFixed+4 {
			t.Fatalf("readMsg: %+v, %v", req, err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per message read", n)
	}
}

func TestIRQDeliverAllocatesNothing(t *testing.T) {
	s := newAllocSession(t)
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	set := IRQSet{Flags: IRQSetDataEventfd | IRQSetActionTrigger, Index: IRQMSIX, Count: 1}
	if err := s.irq.set(set, []int{ev}); err != nil { // the session owns ev now
		t.Fatal(err)
	}
	var b [8]byte
	n := testing.AllocsPerRun(200, func() {
		s.irq.deliver(0)
		if _, err := unix.Read(ev, b[:]); err != nil {
			t.Fatalf("eventfd not signalled: %v", err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per forwarded interrupt", n)
	}
}

func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cs [2]*net.UnixConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c.(*net.UnixConn)
	}
	return cs[0], cs[1]
}

// TestCommandQueueAllocatesNothing: a command passed from the reading
// goroutine to the handler reuses a handled request's buffers.
func TestCommandQueueAllocatesNothing(t *testing.T) {
	q := newCmdQueue()
	posted := &Request{Header: Header{Command: CmdRegionWrite, Flags: FlagNoReply}, Payload: make([]byte, 24)}
	read := &Request{Header: Header{Command: CmdRegionRead}, Payload: make([]byte, 16)}
	cycle := func() {
		for _, in := range []*Request{posted, read} {
			q.push(in)
		}
		for range 2 {
			r, err := q.next()
			if err != nil {
				t.Fatal(err)
			}
			q.done(r)
		}
	}
	cycle() // the first request is made once
	if n := testing.AllocsPerRun(200, cycle); n != 0 {
		t.Fatalf("%v allocations per command", n)
	}
}
