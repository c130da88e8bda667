package traffic

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// DefaultPeerMAC is the host peer's MAC address unless PeerConfig says otherwise
// (locally administered: 02:"xnic":01).
var DefaultPeerMAC = net.HardwareAddr{0x02, 0x78, 0x6e, 0x69, 0x63, 0x01}

// PeerConfig configures a Peer. The zero value is usable.
type PeerConfig struct {
	// Listen is the UDP address to bind (default "127.0.0.1:0": an ephemeral port).
	Listen string
	// Remote is QEMU's end of the -netdev dgram link (its local.host:local.port).
	// When nil the peer sends to wherever the last datagram came from, so the
	// guest must speak first (Client.Hello does).
	Remote *net.UDPAddr
	// MAC is the peer's Ethernet address (default DefaultPeerMAC).
	MAC net.HardwareAddr
	// AckTimeout bounds how long a windowed stream waits for the guest's ack
	// before it gives up (default 20 s).
	AckTimeout time.Duration
	// Logf, when set, receives one line per control message and per problem.
	Logf func(format string, args ...any)
	// MaxBacklog bounds the bytes waiting in QEMU's socket (as /proc/net/udp
	// counts them) before the peer sends more (default 96 KiB; see backlog.go).
	// Negative disables the check.
	MaxBacklog int
}

// Session is what the peer did for one request that moves frames.
type Session struct {
	Verb  string // VerbExpect, VerbInject, VerbFlows, VerbLater or VerbEcho
	ID    uint32 // the request's id
	Seed  int64  // data stream seed (expect, inject, later)
	Count int    // frames asked for
	// Done counts, for expect, the frames received byte-exact and in order; for
	// the others, the frames sent.
	Done int
	// Bad counts, for expect, frames of this stream that arrived wrong: altered,
	// out of order, duplicated or after Count; for echo, frames that came back
	// wrong, or at all when none should.
	Bad int
	// Size is an echo stream's frame size (0: pseudo-random sizes). WantBack
	// says whether its frames must come back, MAC-swapped; Back counts those
	// that did, byte-exact and in order.
	Size     int
	WantBack bool
	Back     int
	// Err is the first problem seen ("" when none).
	Err string
	// Reported is true once the guest asked for the report of this expect or
	// echo session; Finished once a sending session sent everything or gave up.
	Reported bool
	Finished bool
}

// OK reports whether the session moved exactly Count frames without a problem
// (and, for echo, whether exactly the frames due back came back).
func (s Session) OK() bool {
	ok := s.Done == s.Count && s.Bad == 0 && s.Err == ""
	if s.Verb == VerbEcho {
		ok = ok && s.Back == s.wantBack()
	}
	return ok
}

// wantBack is how many frames of an echo session must come back.
func (s Session) wantBack() int {
	if s.WantBack {
		return s.Count
	}
	return 0
}

func (s Session) String() string {
	st := fmt.Sprintf("%s id=%d seed=%d count=%d done=%d bad=%d", s.Verb, s.ID, s.Seed, s.Count, s.Done, s.Bad)
	if s.Verb == VerbEcho {
		st += fmt.Sprintf(" size=%d back=%d/%d", s.Size, s.Back, s.wantBack())
	}
	if s.Err != "" {
		st += " err=" + strconv.Quote(s.Err)
	}
	return st
}

// Report is a snapshot of everything a Peer saw.
type Report struct {
	Sessions []Session
	Received int      // datagrams received
	Sent     int      // datagrams sent
	Stray    int      // received frames no session wanted
	Errors   []string // protocol errors (malformed control frames, failed sends)
	GuestMAC net.HardwareAddr
	// RemoteDrops is how many datagrams QEMU's socket dropped while the peer
	// was running (-1 when it could not be read: QEMU not on this host).
	RemoteDrops int
	// Throttled counts the times the peer waited for QEMU's socket to drain.
	Throttled int
	// LocalDrops is how many datagrams from QEMU the peer's own socket dropped
	// (its receive buffer overflowed while the peer was descheduled); -1 when
	// it could not be read.
	LocalDrops int
}

// Peer is the host side of the wire: it answers a guest's control messages,
// checks the frames the guest sends and sends the frames the guest asks for.
// It speaks QEMU's -netdev dgram format: one Ethernet frame per UDP datagram.
//
// One goroutine (started by NewPeer) reads the socket and handles control
// messages and received frames; each sending session runs in a goroutine of
// its own. All state is guarded by mu.
type Peer struct {
	conn       *net.UDPConn // immutable after NewPeer
	mac        net.HardwareAddr
	ackTimeout time.Duration
	maxBacklog int
	logf       func(string, ...any)
	done       chan struct{}
	wg         sync.WaitGroup

	mu       sync.Mutex
	remote   netip.AddrPort // QEMU's socket; invalid until known
	guestMAC net.HardwareAddr
	expects  map[int64]*expectState // armed expect sessions by seed
	echoes   map[int64]*echoState   // echo sessions by seed
	streams  map[uint32]*streamState
	sessions []*Session
	received int
	sent     int
	stray    int
	errs     []string
	closed   bool
	// dropsAtStart is the drop count of QEMU's socket when the peer first
	// learned its address (-1: unknown); throttled counts backlog waits.
	dropsAtStart int
	lastDrops    int // drop count when last read (-1: never)
	throttled    int
	// localDropsAtStart is the drop count of the peer's own socket at NewPeer
	// (-1: unknown). Immutable.
	localDropsAtStart int
}

type expectState struct {
	s    *Session
	next int // index of the next frame wanted
}

// echoState follows the frames of an echo session coming back.
type echoState struct {
	s     *Session
	guest net.HardwareAddr // where the frames went (their destination)
	next  int              // index of the next frame due back
}

type streamState struct {
	s      *Session
	window int
	acked  int
	// started: the guest has sent its first ack (n=0 at the latest), after it
	// took the ok for this stream. A windowed stream sends nothing before: a
	// frame overtaking the ok on another RX queue would be thrown away by the
	// guest's client while it still waits for the ok.
	started bool
	ackCh   chan struct{} // signalled (non-blocking) when acked grows or the stream starts
}

// NewPeer binds the UDP socket and starts serving.
func NewPeer(cfg PeerConfig) (*Peer, error) {
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	la, err := net.ResolveUDPAddr("udp4", listen)
	if err != nil {
		return nil, fmt.Errorf("traffic: peer address %q: %w", listen, err)
	}
	conn, err := net.ListenUDP("udp4", la)
	if err != nil {
		return nil, fmt.Errorf("traffic: peer listen on %s: %w", listen, err)
	}
	// Bursts from the guest must not overflow the socket while we check frames.
	_ = conn.SetReadBuffer(8 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	p := &Peer{
		conn:       conn,
		mac:        cfg.MAC,
		ackTimeout: cfg.AckTimeout,
		maxBacklog: cfg.MaxBacklog,
		logf:       cfg.Logf,
		done:       make(chan struct{}),
		expects:    map[int64]*expectState{},
		echoes:     map[int64]*echoState{},
		streams:    map[uint32]*streamState{},
	}
	if p.mac == nil {
		p.mac = DefaultPeerMAC
	}
	if p.ackTimeout <= 0 {
		p.ackTimeout = 20 * time.Second
	}
	if p.maxBacklog == 0 {
		p.maxBacklog = DefaultMaxBacklog
	}
	p.localDropsAtStart = -1
	if st, ok := remoteSocketStat(p.Addr().AddrPort()); ok {
		p.localDropsAtStart = st.drops
	}
	p.dropsAtStart, p.lastDrops = -1, -1
	if st, ok := remoteSocketStat(p.remote); ok {
		p.dropsAtStart, p.lastDrops = st.drops, st.drops
	}
	if cfg.Remote != nil {
		p.remote = cfg.Remote.AddrPort()
	}
	if p.logf == nil {
		p.logf = func(string, ...any) {}
	}
	p.wg.Add(1)
	go p.readLoop()
	return p, nil
}

// Addr is the peer's UDP address (QEMU's remote.host:remote.port).
func (p *Peer) Addr() *net.UDPAddr { return p.conn.LocalAddr().(*net.UDPAddr) }

// MAC is the peer's Ethernet address.
func (p *Peer) MAC() net.HardwareAddr { return p.mac }

// Close stops the peer and waits for its goroutines. Sending sessions still
// running are abandoned (and marked so).
func (p *Peer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.done)
	err := p.conn.Close()
	p.wg.Wait()
	return err
}

// Report returns a snapshot of the sessions and counters.
func (p *Peer) Report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{Received: p.received, Sent: p.sent, Stray: p.stray, Throttled: p.throttled,
		Errors: append([]string(nil), p.errs...), GuestMAC: append(net.HardwareAddr(nil), p.guestMAC...), RemoteDrops: -1}
	if st, ok := remoteSocketStat(p.remote); ok {
		p.lastDrops = st.drops
	}
	if p.dropsAtStart >= 0 && p.lastDrops >= 0 {
		r.RemoteDrops = p.lastDrops - p.dropsAtStart
	}
	r.LocalDrops = -1
	if st, ok := remoteSocketStat(p.Addr().AddrPort()); ok && p.localDropsAtStart >= 0 {
		r.LocalDrops = st.drops - p.localDropsAtStart
	}
	for _, s := range p.sessions {
		r.Sessions = append(r.Sessions, *s)
	}
	return r
}

func (p *Peer) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.mu.Lock()
	p.errs = append(p.errs, msg)
	p.mu.Unlock()
	p.logf("peer: %s", msg)
}

func (p *Peer) readLoop() {
	defer p.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-p.done:
			default:
				p.problem("read: %v", err)
			}
			return
		}
		if !from.Addr().Unmap().IsLoopback() {
			p.problem("datagram from %s ignored: only loopback is served", from)
			continue
		}
		f := buf[:n]
		p.mu.Lock()
		p.received++
		if p.remote != from {
			p.remote = from
			p.dropsAtStart, p.lastDrops = -1, -1
			if st, ok := remoteSocketStat(from); ok {
				p.dropsAtStart, p.lastDrops = st.drops, st.drops
			}
		}
		p.mu.Unlock()
		switch Classify(f) {
		case KindControl:
			p.handleControl(f)
		case KindData:
			p.handleData(f)
		case KindEcho:
			p.handleEcho(f)
		default:
			p.mu.Lock()
			p.stray++
			p.mu.Unlock()
		}
	}
}

// write sends one frame to QEMU. Safe for concurrent use.
func (p *Peer) write(f []byte) error {
	p.mu.Lock()
	to := p.remote
	p.mu.Unlock()
	if !to.IsValid() {
		return errors.New("traffic: peer does not know QEMU's address yet (the guest has not spoken)")
	}
	if _, err := p.conn.WriteToUDPAddrPort(f, to); err != nil {
		return fmt.Errorf("traffic: peer send to %s: %w", to, err)
	}
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
	return nil
}

func (p *Peer) reply(to net.HardwareAddr, m Msg) {
	f, err := AppendControl(nil, m, to, p.mac)
	if err == nil {
		err = p.write(f)
	}
	if err != nil {
		p.problem("reply %q: %v", m.String(), err)
	}
}

func (p *Peer) handleControl(f []byte) {
	src := append(net.HardwareAddr(nil), f[6:12]...)
	m, err := ParseControl(f)
	if err != nil {
		p.problem("bad control frame from %s: %v", src, err)
		return
	}
	if m.Verb != VerbAck {
		p.logf("peer: <- %s", m)
	}
	p.sampleRemote()
	p.mu.Lock()
	p.guestMAC = src
	p.mu.Unlock()
	fail := func(format string, args ...any) {
		p.reply(src, NewMsg(VerbErr, m.ID, "msg", fmt.Sprintf(format, args...)))
	}
	switch m.Verb {
	case VerbHello:
		p.reply(src, NewMsg(VerbOK, m.ID, "mac", p.mac.String()))
	case VerbExpect:
		count, err1 := m.Int("count")
		seed, err2 := m.Int("seed")
		if err := errors.Join(err1, err2); err != nil || count < 0 {
			fail("expect needs count>=0 and seed: %v", err)
			return
		}
		p.mu.Lock()
		if old, ok := p.expects[seed]; ok && !old.s.Reported {
			p.mu.Unlock()
			fail("seed %d is already expected (id %d)", seed, old.s.ID)
			return
		}
		s := &Session{Verb: VerbExpect, ID: m.ID, Seed: seed, Count: int(count)}
		p.sessions = append(p.sessions, s)
		p.expects[seed] = &expectState{s: s}
		p.mu.Unlock()
		p.reply(src, NewMsg(VerbOK, m.ID))
	case VerbReport:
		if _, ok := m.Args["echo"]; ok {
			p.reportEcho(src, m, fail)
			return
		}
		seed, err := m.Int("seed")
		if err != nil {
			fail("%v", err)
			return
		}
		p.mu.Lock()
		e, ok := p.expects[seed]
		var s Session
		if ok {
			e.s.Reported = true
			s = *e.s
		}
		p.mu.Unlock()
		if !ok {
			fail("no expect session for seed %d", seed)
			return
		}
		r := NewMsg(VerbOK, m.ID, "count", strconv.Itoa(s.Count), "got", strconv.Itoa(s.Done), "bad", strconv.Itoa(s.Bad))
		if s.Err != "" {
			r.Args["error"] = s.Err
		}
		p.reply(src, r)
	case VerbInject, VerbFlows, VerbLater, VerbEcho:
		p.startStream(src, m, fail)
	case VerbAck:
		ref, err1 := m.Int("ref")
		n, err2 := m.Int("n")
		if err := errors.Join(err1, err2); err != nil {
			p.problem("bad ack %q: %v", m.String(), err)
			return
		}
		p.mu.Lock()
		st, ok := p.streams[uint32(ref)]
		if ok && (int(n) > st.acked || !st.started) {
			st.started = true
			st.acked = max(st.acked, int(n))
			select {
			case st.ackCh <- struct{}{}:
			default:
			}
		}
		p.mu.Unlock()
		if !ok {
			p.problem("ack for unknown stream %d", ref)
		}
	case VerbOK, VerbErr:
		// A reply is never answered: answering one that came back (a program
		// bouncing frames, say) would start an endless exchange.
		p.problem("the guest sent a reply %q; ignored", m.String())
	default:
		fail("unknown verb %q", m.Verb)
	}
}

// reportEcho answers "report echo=S" for the echo session of seed S. (Seeds,
// unlike request ids, are unique across the guest's clients.)
func (p *Peer) reportEcho(to net.HardwareAddr, m Msg, fail func(string, ...any)) {
	seed, err := m.Int("echo")
	if err != nil {
		fail("%v", err)
		return
	}
	var s Session
	p.mu.Lock()
	e, found := p.echoes[seed]
	if found {
		e.s.Reported = true
		s = *e.s
	}
	p.mu.Unlock()
	if !found {
		fail("no echo session for seed %d", seed)
		return
	}
	r := NewMsg(VerbOK, m.ID, "count", strconv.Itoa(s.Count), "sent", strconv.Itoa(s.Done),
		"back", strconv.Itoa(s.Back), "bad", strconv.Itoa(s.Bad))
	if s.Err != "" {
		r.Args["error"] = s.Err
	}
	p.reply(to, r)
}

// startStream validates a sending request, replies, and starts the goroutine
// that sends the frames.
func (p *Peer) startStream(to net.HardwareAddr, m Msg, fail func(string, ...any)) {
	var count, seed, window, flows, per, delayMS, size, back int64
	var err error
	switch m.Verb {
	case VerbInject:
		var e1, e2, e3 error
		count, e1 = m.Int("count")
		seed, e2 = m.Int("seed")
		window, e3 = m.Int("window")
		err = errors.Join(e1, e2, e3)
	case VerbFlows:
		var e1, e2, e3 error
		flows, e1 = m.Int("flows")
		per, e2 = m.Int("per")
		window, e3 = m.Int("window")
		err = errors.Join(e1, e2, e3)
		count = flows * per
		if err == nil && (flows <= 0 || flows > 65536 || per <= 0) {
			err = fmt.Errorf("flows=%d per=%d out of range (flows 1..65536, per >= 1)", flows, per)
		}
	case VerbLater:
		var e1, e2, e3 error
		delayMS, e1 = m.Int("delay_ms")
		count, e2 = m.Int("count")
		seed, e3 = m.Int("seed")
		err = errors.Join(e1, e2, e3)
	case VerbEcho:
		var e1, e2, e3, e4, e5 error
		count, e1 = m.Int("count")
		seed, e2 = m.Int("seed")
		size, e3 = m.Int("size")
		back, e4 = m.Int("back")
		delayMS, e5 = m.Int("delay_ms")
		err = errors.Join(e1, e2, e3, e4, e5)
		if err == nil && (size != 0 && (size < MinFrameLen || size > MaxFrameLen) || back < 0 || back > 1) {
			err = fmt.Errorf("size=%d back=%d out of range (size 0 or %d..%d, back 0 or 1)", size, back, MinFrameLen, MaxFrameLen)
		}
	}
	if err == nil && (count < 0 || count > 1<<24 || window < 0 || delayMS < 0 || delayMS > 60000) {
		err = fmt.Errorf("count=%d window=%d delay_ms=%d out of range", count, window, delayMS)
	}
	if err != nil {
		fail("%s: %v", m.Verb, err)
		return
	}
	s := &Session{Verb: m.Verb, ID: m.ID, Seed: seed, Count: int(count), Size: int(size), WantBack: back == 1}
	st := &streamState{s: s, window: int(window), ackCh: make(chan struct{}, 1)}
	p.mu.Lock()
	if m.Verb == VerbEcho {
		if old, ok := p.echoes[seed]; ok {
			p.mu.Unlock()
			fail("echo: seed %d is already in use (id %d)", seed, old.s.ID)
			return
		}
		p.echoes[seed] = &echoState{s: s, guest: append(net.HardwareAddr(nil), to...)}
	}
	p.sessions = append(p.sessions, s)
	p.streams[m.ID] = st
	p.mu.Unlock()
	p.reply(to, NewMsg(VerbOK, m.ID))
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.sendStream(to, st, int(flows), time.Duration(delayMS)*time.Millisecond)
		p.sampleRemote()
		p.mu.Lock()
		s.Finished = true
		if err != nil && s.Err == "" {
			s.Err = err.Error()
		}
		p.mu.Unlock()
		select {
		case <-p.done:
			return // closing: nobody is listening any more
		default:
		}
		if err != nil {
			p.logf("peer: %s id=%d: %v", s.Verb, s.ID, err)
			// Tell the guest, so its receive fails now rather than at its deadline.
			p.reply(to, NewMsg(VerbErr, s.ID, "msg", err.Error()))
		}
	}()
}

func (p *Peer) sendStream(to net.HardwareAddr, st *streamState, flows int, delay time.Duration) error {
	s := st.s
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-p.done:
			return errors.New("peer closed before the delay passed")
		}
	}
	if st.window > 0 {
		if err := p.awaitStart(st); err != nil {
			return err
		}
	}
	buf := make([]byte, 0, MaxFrameLen)
	for i := 0; i < s.Count; i++ {
		if st.window > 0 {
			deadline := time.Now().Add(p.ackTimeout)
			for {
				p.mu.Lock()
				acked := st.acked
				p.mu.Unlock()
				if i-acked < st.window {
					break
				}
				select {
				case <-st.ackCh:
				case <-time.After(time.Until(deadline)):
					return fmt.Errorf("sent %d frames, guest acknowledged %d; no ack for %v (window %d)", i, acked, p.ackTimeout, st.window)
				case <-p.done:
					return fmt.Errorf("peer closed after %d of %d frames", i, s.Count)
				}
			}
		}
		if err := p.throttle(i); err != nil {
			return err
		}
		switch s.Verb {
		case VerbFlows:
			// Round-robin over flows so every queue gets work early.
			buf = AppendFlowFrame(buf[:0], i%flows, i/flows, to, p.mac)
		case VerbEcho:
			buf = AppendEchoFrame(buf[:0], s.Seed, i, s.Size, to, p.mac)
		default:
			buf = AppendFrame(buf[:0], s.Seed, i, to, p.mac)
		}
		// Count the frame before it leaves: the guest may answer it (and ask
		// for a report) before this goroutine runs again.
		p.mu.Lock()
		s.Done = i + 1
		p.mu.Unlock()
		if err := p.write(buf); err != nil {
			p.mu.Lock()
			s.Done = i
			p.mu.Unlock()
			return err
		}
	}
	return nil
}

// awaitStart waits for the guest's first ack of a windowed stream (see
// streamState.started), for up to the ack timeout.
func (p *Peer) awaitStart(st *streamState) error {
	deadline := time.After(p.ackTimeout)
	for {
		p.mu.Lock()
		started := st.started
		p.mu.Unlock()
		if started {
			return nil
		}
		select {
		case <-st.ackCh:
		case <-deadline:
			return fmt.Errorf("the guest never started the stream: no ack (n=0 after the ok) within %v", p.ackTimeout)
		case <-p.done:
			return errors.New("peer closed before the stream started")
		}
	}
}

// sampleRemote records the drop counter of QEMU's socket while it exists, so
// Report can still tell after QEMU has exited.
func (p *Peer) sampleRemote() {
	p.mu.Lock()
	to := p.remote
	p.mu.Unlock()
	if st, ok := remoteSocketStat(to); ok {
		p.mu.Lock()
		p.lastDrops = st.drops
		p.mu.Unlock()
	}
}

// throttle waits, before frame i of a stream, while QEMU's socket holds more
// than maxBacklog bytes (checked every 8 frames). See backlog.go.
func (p *Peer) throttle(i int) error {
	if p.maxBacklog < 0 || i%8 != 0 {
		return nil
	}
	p.mu.Lock()
	to := p.remote
	p.mu.Unlock()
	waited, err := waitBacklog(to, p.maxBacklog, p.ackTimeout, p.done, func(st udpSocketStat) {
		p.mu.Lock()
		p.lastDrops = st.drops
		p.mu.Unlock()
	})
	if waited {
		p.mu.Lock()
		p.throttled++
		p.mu.Unlock()
	}
	return err
}

// handleData checks a data frame from the guest against its expect session.
func (p *Peer) handleData(f []byte) {
	seed, i, _ := ParseData(f)
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.expects[seed]
	if !ok {
		p.stray++
		return
	}
	s := e.s
	bad := func(format string, args ...any) {
		s.Bad++
		if s.Err == "" {
			s.Err = fmt.Sprintf(format, args...)
		}
	}
	switch {
	case e.next >= s.Count:
		bad("frame %d arrived after all %d expected frames", i, s.Count)
	case i != e.next:
		bad("frame %d arrived when frame %d was due (lost, reordered or duplicated)", i, e.next)
	default:
		if err := CheckFrame(f, seed, i, p.mac, p.guestMAC); err != nil {
			bad("%v", err)
		} else {
			s.Done++
		}
	}
	if i >= e.next {
		e.next = i + 1
	}
}

// handleEcho checks a frame of an echo stream coming back: it must be the next
// frame of its stream with the Ethernet addresses swapped, byte-exact
// otherwise, and only if the stream's frames are due back at all.
func (p *Peer) handleEcho(f []byte) {
	seed, i, _ := ParseEcho(f)
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.echoes[seed]
	if !ok {
		p.stray++
		return
	}
	s := e.s
	bad := func(format string, args ...any) {
		s.Bad++
		if s.Err == "" {
			s.Err = fmt.Sprintf(format, args...)
		}
	}
	switch {
	case !s.WantBack:
		bad("echo frame %d of seed %d came back, and none should have (dropped by the guest)", i, seed)
	case e.next >= s.Count:
		bad("echo frame %d came back after all %d frames had", i, s.Count)
	case i != e.next:
		bad("echo frame %d came back when frame %d was due (lost, reordered or duplicated)", i, e.next)
	default:
		// Sent from the peer to the guest; back from the guest to the peer.
		if err := CheckEcho(f, seed, i, s.Size, p.mac, e.guest); err != nil {
			bad("%v", err)
		} else {
			s.Back++
		}
	}
	if i >= e.next {
		e.next = i + 1
	}
}
