package vfiousertest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/vfiouser"
	"golang.org/x/sys/unix"
)

// Client is a minimal vfio-user client on one connection. Its reader goroutine
// delivers replies to Call and answers the server's DMA_READ and DMA_WRITE from
// the ranges registered with AddMemory. Safe for concurrent use.
type Client struct {
	c *net.UnixConn // immutable

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	nextID  uint16
	pending map[uint16]chan reply // guarded by mu
	mem     []memRange            // guarded by mu
	served  int                   // DMA_READ/WRITE requests answered; guarded by mu
	hold    bool                  // DMA requests wait in held; guarded by mu
	held    []heldReq             // guarded by mu
	err     error                 // guarded by mu: why the reader stopped
	done    chan struct{}         // closed when the reader stops
}

type reply struct {
	h       vfiouser.Header
	payload []byte
	fds     []int
}

type heldReq struct {
	h vfiouser.Header
	p []byte
}

type memRange struct {
	iova uint64
	b    []byte
}

// Dial connects to a server's socket.
func Dial(path string) (*Client, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return New(c), nil
}

// Pair returns the two ends of a connected Unix stream socket pair: the first
// for the server, the second for New.
func Pair() (server, client *net.UnixConn, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	conv := func(fd int, name string) (*net.UnixConn, error) {
		f := osNewFile(fd, name)
		defer f.Close() // FileConn dups it
		c, err := net.FileConn(f)
		if err != nil {
			return nil, err
		}
		return c.(*net.UnixConn), nil
	}
	s, err := conv(fds[0], "vfio-user-server")
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	cl, err := conv(fds[1], "vfio-user-client")
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, cl, nil
}

// New starts a client on an open connection.
func New(c *net.UnixConn) *Client {
	cl := &Client{c: c, pending: map[uint16]chan reply{}, done: make(chan struct{})}
	go cl.read()
	return cl
}

// Close closes the connection and waits for the reader to stop.
func (c *Client) Close() error {
	err := c.c.Close()
	<-c.done
	return err
}

// Done is closed when the server has closed the connection (or Close ran).
func (c *Client) Done() <-chan struct{} { return c.done }

// AddMemory lets the server reach b at iova with DMA_READ and DMA_WRITE.
func (c *Client) AddMemory(iova uint64, b []byte) {
	c.mu.Lock()
	c.mem = append(c.mem, memRange{iova, b})
	c.mu.Unlock()
}

// Served counts the DMA_READ and DMA_WRITE requests the client answered.
func (c *Client) Served() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served
}

func (c *Client) read() {
	defer close(c.done)
	for {
		var hb [vfiouser.HeaderSize]byte
		oob := make([]byte, unix.CmsgSpace(4*16))
		n, oobn, _, _, err := c.c.ReadMsgUnix(hb[:], oob)
		var fds []int
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for i := range msgs {
					if got, e := unix.ParseUnixRights(&msgs[i]); e == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		if err == nil && n == 0 {
			err = errors.New("server closed the connection")
		}
		if err == nil && n < len(hb) {
			_, err = readFull(c.c, hb[n:])
		}
		var h vfiouser.Header
		if err == nil {
			h, err = vfiouser.ParseHeader(hb[:], 1<<24)
		}
		var payload []byte
		if err == nil {
			payload = make([]byte, h.Size-vfiouser.HeaderSize)
			_, err = readFull(c.c, payload)
		}
		if err != nil {
			closeAll(fds)
			c.stop(err)
			return
		}
		if !h.IsReply() {
			closeAll(fds)
			c.serve(h, payload)
			continue
		}
		c.mu.Lock()
		ch := c.pending[h.ID]
		delete(c.pending, h.ID)
		c.mu.Unlock()
		if ch == nil {
			closeAll(fds)
			continue
		}
		ch <- reply{h, payload, fds}
	}
}

func (c *Client) stop(err error) {
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// HoldDMA(true) makes the client leave DMA_READ and DMA_WRITE requests
// unanswered, as QEMU does while a vCPU holds the lock its DMA service needs
// (it holds it while it waits for a register read); HoldDMA(false) answers
// the held ones and serves again.
func (c *Client) HoldDMA(on bool) {
	c.mu.Lock()
	c.hold = on
	held := c.held
	c.held = nil
	c.mu.Unlock()
	if !on {
		for _, r := range held {
			c.serve(r.h, r.p)
		}
	}
}

// serve answers a DMA_READ or DMA_WRITE from the registered memory.
func (c *Client) serve(h vfiouser.Header, p []byte) {
	c.mu.Lock()
	if c.hold {
		c.held = append(c.held, heldReq{h, append([]byte(nil), p...)})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	le := binary.LittleEndian
	rep := vfiouser.Header{ID: h.ID, Command: h.Command, Flags: vfiouser.FlagReply}
	if len(p) < 16 || (h.Command != vfiouser.CmdDMARead && h.Command != vfiouser.CmdDMAWrite) {
		rep.Flags |= vfiouser.FlagError
		rep.Error = uint32(unix.EINVAL)
		_ = c.send(rep, nil, nil)
		return
	}
	addr, n := le.Uint64(p[0:]), le.Uint64(p[8:])
	c.mu.Lock()
	defer c.mu.Unlock() // the test reads the memory with Memory, under mu
	var b []byte
	for _, r := range c.mem {
		if addr >= r.iova && n <= uint64(len(r.b)) && addr-r.iova <= uint64(len(r.b))-n {
			b = r.b[addr-r.iova : addr-r.iova+n]
		}
	}
	c.served++
	switch {
	case b == nil:
		rep.Flags |= vfiouser.FlagError
		rep.Error = uint32(unix.EFAULT)
		_ = c.send(rep, nil, nil)
	case h.Command == vfiouser.CmdDMARead:
		_ = c.send(rep, nil, append(p[:16:16], b...))
	default:
		copy(b, p[16:])
		_ = c.send(rep, nil, p[:16])
	}
}

// Memory returns a copy of n bytes of registered memory at iova (nil if no
// range holds them).
func (c *Client) Memory(iova uint64, n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.mem {
		if iova >= r.iova && uint64(n) <= uint64(len(r.b)) && iova-r.iova <= uint64(len(r.b)-n) {
			return append([]byte(nil), r.b[iova-r.iova:iova-r.iova+uint64(n)]...)
		}
	}
	return nil
}

func (c *Client) send(h vfiouser.Header, fds []int, payload []byte) error {
	buf := make([]byte, vfiouser.HeaderSize+len(payload))
	h.Size = uint32(len(buf))
	vfiouser.PutHeader(buf, h)
	copy(buf[vfiouser.HeaderSize:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n, _, err := c.c.WriteMsgUnix(buf, oob, nil)
	if err == nil && n < len(buf) {
		_, err = c.c.Write(buf[n:])
	}
	return err
}

// ErrReply is wrapped by Call's error when the server answered with the Error
// flag; Errno holds the errno.
type ErrReply struct {
	Command vfiouser.Command
	Errno   unix.Errno
}

func (e *ErrReply) Error() string {
	return fmt.Sprintf("vfio-user %s: server answered errno %d (%v)", e.Command, int(e.Errno), e.Errno)
}

// Call sends a command with fds and waits up to 5 s for its reply payload.
func (c *Client) Call(cmd vfiouser.Command, payload []byte, fds ...int) ([]byte, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	id := c.nextID
	c.nextID++
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(vfiouser.Header{ID: id, Command: cmd}, fds, payload); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("vfio-user %s: connection ended before the reply", cmd)
		}
		closeAll(r.fds)
		if r.h.Command != cmd {
			return nil, fmt.Errorf("vfio-user %s: reply is for %s", cmd, r.h.Command)
		}
		if r.h.Flags&vfiouser.FlagError != 0 {
			return nil, &ErrReply{Command: cmd, Errno: unix.Errno(r.h.Error)}
		}
		return r.payload, nil
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("vfio-user %s: no reply in 5 s", cmd)
	}
}

// Send sends a command with the No_reply flag and does not wait.
func (c *Client) Send(cmd vfiouser.Command, payload []byte, fds ...int) error {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	return c.send(vfiouser.Header{ID: id, Command: cmd, Flags: vfiouser.FlagNoReply}, fds, payload)
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
