package traffic

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"
)

// ErrFull is what a Client's send function returns (possibly wrapped) when the
// transmit ring has no room right now; the Client retries until its deadline.
var ErrFull = errors.New("traffic: transmit queue full")

// Client is the guest side of the control protocol. It does not know the
// driver: it sends and receives through two functions the test supplies.
//
//   - send transmits one frame. The frame is only valid during the call (the
//     Client reuses its buffer), so send copies it into a DMA buffer. It returns
//     an error wrapping ErrFull to be called again later, any other error to
//     give up.
//   - recv polls for one received frame: (frame, true), or (nil, false) when
//     nothing has arrived. It may wait briefly (a few milliseconds at most) but
//     must return, so the Client's deadlines hold. The frame must stay valid
//     until the next call of recv (the Client is done with it by then).
//
// A Client is used by one goroutine.
type Client struct {
	send func([]byte) error
	recv func() ([]byte, bool)
	mac  net.HardwareAddr
	peer net.HardwareAddr // learned by Hello
	id   uint32
	buf  []byte // transmit scratch, MaxFrameLen capacity

	// Timeout bounds each request/reply exchange (default 10 s).
	Timeout time.Duration
	// Stray counts frames received that nothing was waiting for.
	Stray int
	// Logf, when set, gets one line per control exchange.
	Logf func(format string, args ...any)
}

// NewClient returns a Client sending as mac (the NIC's own address).
func NewClient(mac net.HardwareAddr, send func(frame []byte) error, recv func() ([]byte, bool)) *Client {
	return &Client{send: send, recv: recv, mac: append(net.HardwareAddr(nil), mac...),
		buf: make([]byte, 0, MaxFrameLen), Timeout: 10 * time.Second}
}

// PeerMAC is the peer's address once Hello has succeeded (nil before).
func (c *Client) PeerMAC() net.HardwareAddr { return c.peer }

func (c *Client) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// idle backs off while polling: first yield, then sleep a little.
type idle int

func (n *idle) wait() {
	*n++
	if *n < 64 {
		runtime.Gosched()
		return
	}
	time.Sleep(100 * time.Microsecond)
}

// transmit sends c.buf's frame, retrying while send reports ErrFull.
func (c *Client) transmit(f []byte, deadline time.Time) error {
	var w idle
	for {
		err := c.send(f)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrFull) {
			return fmt.Errorf("traffic: send: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("traffic: send: transmit queue stayed full until the deadline: %w", err)
		}
		w.wait()
	}
}

func (c *Client) sendMsg(m Msg, dst net.HardwareAddr, deadline time.Time) error {
	f, err := AppendControl(c.buf[:0], m, dst, c.mac)
	if err != nil {
		return err
	}
	return c.transmit(f, deadline)
}

// request sends m and waits for the reply with the same id. resend > 0 sends
// the request again at that interval until a reply comes (only for requests
// that are harmless to repeat).
func (c *Client) request(m Msg, dst net.HardwareAddr, resend time.Duration) (Msg, error) {
	deadline := time.Now().Add(c.Timeout)
	if err := c.sendMsg(m, dst, deadline); err != nil {
		return Msg{}, err
	}
	c.logf("traffic: -> %s", m)
	lastSend := time.Now()
	var w idle
	for {
		f, ok := c.recv()
		if !ok {
			now := time.Now()
			if now.After(deadline) {
				return Msg{}, fmt.Errorf("traffic: no reply to %q within %v (is the host peer running and the link up?)", m.String(), c.Timeout)
			}
			if resend > 0 && now.Sub(lastSend) >= resend {
				if err := c.sendMsg(m, dst, deadline); err != nil {
					return Msg{}, err
				}
				lastSend = now
			}
			w.wait()
			continue
		}
		w = 0
		if Classify(f) != KindControl {
			c.Stray++
			continue
		}
		r, err := ParseControl(f)
		if err != nil || r.ID != m.ID {
			c.Stray++
			continue
		}
		c.logf("traffic: <- %s", r)
		if r.Verb == VerbErr {
			return r, fmt.Errorf("traffic: peer refused %q: %s", m.String(), r.Get("msg"))
		}
		if r.Verb != VerbOK {
			return r, fmt.Errorf("traffic: peer answered %q with %q", m.String(), r.String())
		}
		return r, nil
	}
}

func (c *Client) newID() uint32 { c.id++; return c.id }

// Hello finds the peer: it broadcasts hello every 200 ms until the peer
// answers or timeout passes (the first frames may be lost while the link
// comes up), and learns the peer's MAC address.
func (c *Client) Hello(timeout time.Duration) error {
	saved := c.Timeout
	c.Timeout = timeout
	defer func() { c.Timeout = saved }()
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	r, err := c.request(NewMsg(VerbHello, c.newID()), bcast, 200*time.Millisecond)
	if err != nil {
		return err
	}
	mac, err := net.ParseMAC(r.Get("mac"))
	if err != nil {
		return fmt.Errorf("traffic: peer's hello reply has a bad mac: %w", err)
	}
	c.peer = mac
	return nil
}

func (c *Client) needPeer() error {
	if c.peer == nil {
		return errors.New("traffic: call Hello first (the peer's address is unknown)")
	}
	return nil
}

// Expect asks the peer to check the next count data frames of stream seed
// that the guest sends (byte-exact, in order).
func (c *Client) Expect(count int, seed int64) error {
	if err := c.needPeer(); err != nil {
		return err
	}
	_, err := c.request(NewMsg(VerbExpect, c.newID(), "count", strconv.Itoa(count), "seed", strconv.FormatInt(seed, 10)), c.peer, 0)
	return err
}

// SendFrames sends frames 0..count-1 of stream seed to the peer. It does not
// allocate per frame.
func (c *Client) SendFrames(count int, seed int64, timeout time.Duration) error {
	if err := c.needPeer(); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for i := range count {
		f := AppendFrame(c.buf[:0], seed, i, c.peer, c.mac)
		if err := c.transmit(f, deadline); err != nil {
			return fmt.Errorf("traffic: frame %d of %d: %w", i, count, err)
		}
	}
	return nil
}

// ExpectReport is what the peer saw of an expected stream.
type ExpectReport struct {
	Count, Got, Bad int
	Error           string // the first problem, "" when none
}

// OK reports whether all Count frames arrived byte-exact and in order.
func (r ExpectReport) OK() bool { return r.Got == r.Count && r.Bad == 0 && r.Error == "" }

func (r ExpectReport) String() string {
	s := fmt.Sprintf("peer got %d of %d frames intact and in order, %d bad", r.Got, r.Count, r.Bad)
	if r.Error != "" {
		s += "; first problem: " + r.Error
	}
	return s
}

// Report asks the peer what it saw of stream seed. Control frames travel
// behind the data frames on the same wire, so every frame sent before it has
// been seen (or lost) by then.
func (c *Client) Report(seed int64) (ExpectReport, error) {
	if err := c.needPeer(); err != nil {
		return ExpectReport{}, err
	}
	r, err := c.request(NewMsg(VerbReport, c.newID(), "seed", strconv.FormatInt(seed, 10)), c.peer, 0)
	if err != nil {
		return ExpectReport{}, err
	}
	var rep ExpectReport
	n1, e1 := r.Int("count")
	n2, e2 := r.Int("got")
	n3, e3 := r.Int("bad")
	if err := errors.Join(e1, e2, e3); err != nil {
		return rep, fmt.Errorf("traffic: malformed report: %w", err)
	}
	rep.Count, rep.Got, rep.Bad, rep.Error = int(n1), int(n2), int(n3), r.Get("error")
	return rep, nil
}

// Transmit is Expect, SendFrames and Report in one: it returns an error unless
// the peer received all count frames of stream seed byte-exact and in order.
func (c *Client) Transmit(count int, seed int64, timeout time.Duration) (ExpectReport, error) {
	if err := c.Expect(count, seed); err != nil {
		return ExpectReport{}, err
	}
	if err := c.SendFrames(count, seed, timeout); err != nil {
		return ExpectReport{}, err
	}
	rep, err := c.Report(seed)
	if err != nil {
		return rep, err
	}
	if !rep.OK() {
		return rep, fmt.Errorf("traffic: %s", rep)
	}
	return rep, nil
}

// Stream is a run of frames the peer is sending at the guest's request. With a
// window, the peer keeps at most that many frames unacknowledged; the receiver
// calls Ack as it takes frames off its rings.
type Stream struct {
	c      *Client
	ID     uint32
	Count  int
	Seed   int64
	window int
	acked  int
}

// start sends a windowed stream's first ack (n=0): the peer sends no frame of
// it before, so none can reach the guest while its client still waits for the
// ok and would throw the frame away (with several RX queues a frame can
// overtake the ok). A no-op without a window.
func (s *Stream) start() error {
	if s.window == 0 {
		return nil
	}
	m := NewMsg(VerbAck, s.c.newID(), "ref", strconv.FormatUint(uint64(s.ID), 10), "n", "0")
	if err := s.c.sendMsg(m, s.c.peer, time.Now().Add(s.c.Timeout)); err != nil {
		return fmt.Errorf("traffic: starting stream %d: %w", s.ID, err)
	}
	return nil
}

// Ack tells the peer that received frames of the stream have been taken. It
// only sends when a quarter of the window has been taken since the last ack,
// or at the end; it is a no-op for streams without a window.
func (s *Stream) Ack(received int) error {
	if s.window == 0 || received <= s.acked {
		return nil
	}
	if received-s.acked < max(1, s.window/4) && received < s.Count {
		return nil
	}
	s.acked = received
	m := NewMsg(VerbAck, s.c.newID(), "ref", strconv.FormatUint(uint64(s.ID), 10), "n", strconv.Itoa(received))
	return s.c.sendMsg(m, s.c.peer, time.Now().Add(s.c.Timeout))
}

// Inject asks the peer to send frames 0..count-1 of stream seed to the guest,
// keeping at most window frames unacknowledged (0: no limit). Receive them
// with Receive, or with the test's own loop calling Stream.Ack.
func (c *Client) Inject(count int, seed int64, window int) (*Stream, error) {
	if err := c.needPeer(); err != nil {
		return nil, err
	}
	id := c.newID()
	_, err := c.request(NewMsg(VerbInject, id, "count", strconv.Itoa(count), "seed", strconv.FormatInt(seed, 10),
		"window", strconv.Itoa(window)), c.peer, 0)
	if err != nil {
		return nil, err
	}
	st := &Stream{c: c, ID: id, Count: count, Seed: seed, window: window}
	return st, st.start()
}

// Receive takes the frames of an injected stream through recv and checks each
// is byte-exact and in order. It returns at the first bad frame, or when
// timeout passes. It does not allocate per frame.
func (c *Client) Receive(s *Stream, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	got := 0
	var w idle
	for got < s.Count {
		f, ok := c.recv()
		if !ok {
			if time.Now().After(deadline) {
				return fmt.Errorf("traffic: received %d of %d injected frames of seed %d within %v", got, s.Count, s.Seed, timeout)
			}
			w.wait()
			continue
		}
		w = 0
		switch Classify(f) {
		case KindData:
			seed, i, _ := ParseData(f)
			if seed != s.Seed {
				c.Stray++
				continue
			}
			if i != got {
				return fmt.Errorf("traffic: injected frame %d arrived when frame %d was due (lost, reordered or duplicated)", i, got)
			}
			if err := CheckFrame(f, s.Seed, i, c.mac, c.peer); err != nil {
				return err
			}
			got++
			if err := s.Ack(got); err != nil {
				return err
			}
		case KindControl:
			if m, err := ParseControl(f); err == nil && m.Verb == VerbErr && m.ID == s.ID {
				return fmt.Errorf("traffic: peer gave up the stream after %d frames received: %s", got, m.Get("msg"))
			}
			c.Stray++
		default:
			c.Stray++
		}
	}
	return nil
}

// Flows asks the peer to send perFlow frames of each of flows UDP/IPv4 flows
// (FlowFrame), round-robin over the flows, keeping at most window frames
// unacknowledged. The test receives them on its queues, identifies them with
// ParseFlow and calls Stream.Ack with its running total.
func (c *Client) Flows(flows, perFlow, window int) (*Stream, error) {
	if err := c.needPeer(); err != nil {
		return nil, err
	}
	id := c.newID()
	_, err := c.request(NewMsg(VerbFlows, id, "flows", strconv.Itoa(flows), "per", strconv.Itoa(perFlow),
		"window", strconv.Itoa(window)), c.peer, 0)
	if err != nil {
		return nil, err
	}
	st := &Stream{c: c, ID: id, Count: flows * perFlow, window: window}
	return st, st.start()
}

// Later asks the peer to wait delay and then send frames 0..count-1 of stream
// seed: a test can block on an interrupt before anything arrives.
func (c *Client) Later(delay time.Duration, count int, seed int64) (*Stream, error) {
	if err := c.needPeer(); err != nil {
		return nil, err
	}
	id := c.newID()
	_, err := c.request(NewMsg(VerbLater, id, "delay_ms", strconv.FormatInt(delay.Milliseconds(), 10),
		"count", strconv.Itoa(count), "seed", strconv.FormatInt(seed, 10)), c.peer, 0)
	if err != nil {
		return nil, err
	}
	return &Stream{c: c, ID: id, Count: count, Seed: seed}, nil
}

// EchoRequest asks the peer for an echo stream: Count echo frames (EchoFrame)
// of stream Seed, all Size bytes long (0: pseudo-random sizes), sent after
// Delay. With Back, every frame must come back with its Ethernet addresses
// swapped and byte-exact otherwise, in order (an XDP MAC swap); without, none
// may come back (an XDP drop). The peer sends without a window (the guest may
// not be able to ack while a dataplane owns the port), paced only by QEMU's
// socket backlog.
type EchoRequest struct {
	Count int
	Seed  int64
	Size  int
	Back  bool
	Delay time.Duration
}

// Echo starts an echo stream. The frames are not for the Client: the program
// under test receives them; EchoReport says what came back.
func (c *Client) Echo(r EchoRequest) (*Stream, error) {
	if err := c.needPeer(); err != nil {
		return nil, err
	}
	back := "0"
	if r.Back {
		back = "1"
	}
	id := c.newID()
	_, err := c.request(NewMsg(VerbEcho, id, "count", strconv.Itoa(r.Count), "seed", strconv.FormatInt(r.Seed, 10),
		"size", strconv.Itoa(r.Size), "back", back, "delay_ms", strconv.FormatInt(r.Delay.Milliseconds(), 10)), c.peer, 0)
	if err != nil {
		return nil, err
	}
	return &Stream{c: c, ID: id, Count: r.Count, Seed: r.Seed}, nil
}

// EchoReport is what the peer saw of an echo stream.
type EchoReport struct {
	Count int    // frames asked for
	Sent  int    // frames the peer sent
	Back  int    // frames that came back intact and in order
	Bad   int    // frames that came back wrong (or at all, when none should)
	Error string // the first problem, "" when none
}

func (r EchoReport) String() string {
	s := fmt.Sprintf("peer sent %d of %d echo frames, %d came back intact and in order, %d bad", r.Sent, r.Count, r.Back, r.Bad)
	if r.Error != "" {
		s += "; first problem: " + r.Error
	}
	return s
}

// EchoReport asks the peer what came back of echo stream s. Every frame the
// guest sent before the request has reached the peer by the time it answers.
func (c *Client) EchoReport(s *Stream) (EchoReport, error) {
	if err := c.needPeer(); err != nil {
		return EchoReport{}, err
	}
	r, err := c.request(NewMsg(VerbReport, c.newID(), "echo", strconv.FormatInt(s.Seed, 10)), c.peer, 0)
	if err != nil {
		return EchoReport{}, err
	}
	var rep EchoReport
	n1, e1 := r.Int("count")
	n2, e2 := r.Int("sent")
	n3, e3 := r.Int("back")
	n4, e4 := r.Int("bad")
	if err := errors.Join(e1, e2, e3, e4); err != nil {
		return rep, fmt.Errorf("traffic: malformed echo report: %w", err)
	}
	rep.Count, rep.Sent, rep.Back, rep.Bad, rep.Error = int(n1), int(n2), int(n3), int(n4), r.Get("error")
	return rep, nil
}
