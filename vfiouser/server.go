package vfiouser

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
	"golang.org/x/sys/unix"
)

// Defaults of Options.
const (
	DefaultMaxDataXfer = 1 << 20 // vfio-user.rst's default max_data_xfer_size
	DefaultMaxMsgFds   = 16      // QEMU's VFIO_USER_MAX_MAX_FDS: one SET_IRQS chunk
	maxDMAMaps         = 65535
	pageSize           = 4096
)

// Options tune a session. The zero value is ready to use.
type Options struct {
	// MaxDataXfer is the largest count of one REGION_READ/WRITE the server
	// accepts (its max_data_xfer_size). 0: DefaultMaxDataXfer.
	MaxDataXfer int
	// MaxMsgFds is how many descriptors one message may carry (max_msg_fds).
	// 0: DefaultMaxMsgFds.
	MaxMsgFds int
	// Logf, when set, receives one line per refused request or protocol error.
	Logf func(format string, args ...any)
	// Once makes ListenAndServe return after its first client disconnects.
	Once bool
	// Stats, when set, is where sessions count what they do (shared by the
	// sessions of one ListenAndServe); nil gives each session its own.
	Stats *Stats
	// Listening, when set, is called by ListenAndServe once the socket
	// accepts connections. The socket file appears a moment earlier (bind
	// comes before listen), so a client that only waits for the file may be
	// refused.
	Listening func()
}

func (o Options) withDefaults() Options {
	if o.MaxDataXfer <= 0 {
		o.MaxDataXfer = DefaultMaxDataXfer
	}
	if o.MaxMsgFds <= 0 {
		o.MaxMsgFds = DefaultMaxMsgFds
	}
	if o.MaxMsgFds > 253 { // SCM_MAX_FD
		o.MaxMsgFds = 253
	}
	return o
}

// Stats counts what a session did. All fields are updated atomically.
type Stats struct {
	Messages     atomic.Uint64 // commands handled
	Errors       atomic.Uint64 // commands answered with an error
	RegionReads  atomic.Uint64
	RegionWrites atomic.Uint64
	DMAMaps      atomic.Uint64 // all DMA_MAPs
	DMAMapsFd    atomic.Uint64 // those with a descriptor (direct access by the model)
	DMAUnmaps    atomic.Uint64 // ranges unmapped
	IRQsSent     atomic.Uint64 // eventfd signals written
	IRQsPending  atomic.Uint64 // signals held back by a mask or a missing eventfd ("irqs_held")
	DMAMessages  atomic.Uint64 // DMA_READ and DMA_WRITE requests the server sent
	DMAGivenUp   atomic.Uint64 // of those, given up unanswered (see clientWaitLimit)
}

// Session is one client connection serving one model. Its loop (Run) runs on
// the caller's goroutine; ReadGuest and WriteGuest may be called from any other.
type Session struct {
	dev  *sim.Device  // immutable
	opts Options      // immutable
	conn *msgConn     // immutable
	cfg  *configSpace // immutable
	msix *msixBAR     // immutable
	irq  *irqState    // immutable
	dma  *dmaTable    // immutable
	regs nic.Regs     // immutable: the model's BAR0

	stats *Stats // immutable pointer: Options.Stats or the session's own

	// Written by the session goroutine during VERSION, read after it.
	negotiated   atomic.Bool
	peerMaxXfer  atomic.Uint32 // the client's max_data_xfer_size
	writeMulti   atomic.Bool
	versionMinor uint16

	// Owned by the session goroutine: the parts of the reply being built and
	// scratch for read data (writeMsg copies both out before the next message).
	out     [][]byte
	scratch []byte

	cmds       *cmdQueue     // immutable: commands read, to handle in order
	readerDone chan struct{} // immutable: closed when the reading goroutine ends
	flushStop  chan struct{} // immutable: closed by shutdown to end flushLoop
	flushDone  chan struct{} // immutable: closed when flushLoop ends
	started    atomic.Bool   // Run started the reading and flushing goroutines

	pmu     sync.Mutex
	nextID  uint16                   // guarded by pmu: ID of the next server request
	pending map[uint16]chan *Request // guarded by pmu: server requests awaiting replies
	done    bool                     // guarded by pmu: the loop ended; no more replies come
}

// NewSession prepares a session for dev on conn. It does not read yet.
func NewSession(conn *net.UnixConn, dev *sim.Device, opts Options) (*Session, error) {
	if conn == nil || dev == nil {
		return nil, errors.New("vfiouser: NewSession needs a connection and a device")
	}
	opts = opts.withDefaults()
	cfg, err := newConfigSpace(dev)
	if err != nil {
		return nil, err
	}
	regs, err := dev.Regs(0)
	if err != nil {
		return nil, fmt.Errorf("vfiouser: model register window: %w", err)
	}
	s := &Session{
		dev: dev, opts: opts, cfg: cfg, regs: regs,
		conn:    newMsgConn(conn, uint32(HeaderSize+regionRWFixed+opts.MaxDataXfer), opts.MaxMsgFds),
		msix:    newMSIXBAR(cfg.vectors),
		pending: map[uint16]chan *Request{},
		cmds:    newCmdQueue(), readerDone: make(chan struct{}),
		flushStop: make(chan struct{}), flushDone: make(chan struct{}),
	}
	s.stats = opts.Stats
	if s.stats == nil {
		s.stats = &Stats{}
	}
	s.irq = newIRQState(dev, cfg.vectors, s.stats)
	s.irq.beforeSignal = s.writeBack
	cfg.onCommand = s.irq.commandWritten
	s.msix.pending = s.irq.pendingBit
	s.dma = newDMATable(dev.Memory(), s)
	s.peerMaxXfer.Store(DefaultMaxDataXfer)
	return s, nil
}

// Stats is what the session counted (Options.Stats when that was set).
func (s *Session) Stats() *Stats { return s.stats }

// Serve runs one session for dev on conn until the client disconnects (nil),
// ctx is done (ctx.Err()) or the connection fails. Everything the client passed
// is released before it returns: mappings unmapped, descriptors closed, the
// model's interrupt vectors torn down. conn is closed.
func Serve(ctx context.Context, conn *net.UnixConn, dev *sim.Device, opts Options) error {
	s, err := NewSession(conn, dev, opts)
	if err != nil {
		conn.Close()
		return err
	}
	return s.Run(ctx)
}

// ListenAndServe listens on the Unix socket path (which must not exist) and
// serves one client at a time until ctx is done, or, with opts.Once, until the
// first client disconnects. The socket file is removed at the end. The device
// keeps its state between clients (vfio-user.rst, "Client Disconnection").
func ListenAndServe(ctx context.Context, path string, dev *sim.Device, opts Options) error {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("vfiouser: listen: %w", err)
	}
	l.SetUnlinkOnClose(true)
	if opts.Listening != nil {
		opts.Listening()
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer l.Close()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("vfiouser: accept: %w", err)
		}
		err = Serve(ctx, c, dev, opts)
		if err != nil || opts.Once {
			return err
		}
	}
}

func (s *Session) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// Run reads and handles commands until the client disconnects (nil), ctx is
// done (ctx.Err()) or the connection fails, then releases everything the client
// passed and closes the connection.
func (s *Session) Run(ctx context.Context) (err error) {
	stop := context.AfterFunc(ctx, func() { s.conn.c.Close() })
	defer func() {
		stop()
		s.shutdown()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}()
	s.started.Store(true)
	go s.read()
	go s.flushLoop(s.flushStop)
	for {
		req, err := s.cmds.next()
		if err != nil {
			if errors.Is(err, errClosed) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		err = s.handle(req)
		s.cmds.done(req)
		if err != nil {
			return err
		}
	}
}

// read runs on its own goroutine: it reads every message, hands replies to
// the server requests waiting for them and queues commands for Run, until the
// connection ends.
func (s *Session) read() {
	defer close(s.readerDone)
	for {
		req, err := s.conn.readMsg()
		if err != nil {
			if req != nil {
				closeFds(req.Fds)
			}
			s.endRequests() // no reply comes any more: a waiting DMA request fails
			s.cmds.stop(err)
			return
		}
		if req.IsReply() {
			s.deliverReply(req)
			continue
		}
		s.cmds.push(req)
	}
}

// shutdown releases what the client passed (vfio-user.rst, "Client
// Disconnection"): DMA mappings and their memory, interrupt eventfds. The model
// keeps its state.
func (s *Session) shutdown() {
	s.conn.c.Close()
	started := s.started.Load()
	if started {
		<-s.readerDone
	}
	s.cmds.drain()
	s.endRequests()
	close(s.flushStop) // before the mirrors go: it reads them
	if started {
		<-s.flushDone
	}
	s.irq.close()
	s.dma.close()
}

// endRequests fails every server request waiting for a reply, and later ones.
func (s *Session) endRequests() {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.done = true
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
}

// errno is an error answered with an errno in the reply header.
type errno struct {
	no  unix.Errno
	err error
}

func (e *errno) Error() string { return e.err.Error() }
func (e *errno) Unwrap() error { return e.err }

func fail(no unix.Errno, format string, args ...any) error {
	return &errno{no: no, err: fmt.Errorf(format, args...)}
}

// handle answers one command. It returns an error only when the session must
// end (a protocol violation it cannot answer, or a failed send).
func (s *Session) handle(req *Request) error {
	s.stats.Messages.Add(1)
	if !s.negotiated.Load() && req.Command != CmdVersion {
		closeFds(req.Fds)
		_ = s.replyErr(req, unix.EINVAL)
		return fmt.Errorf("%w: %s id %d before VERSION", ErrMessage, req.Command, req.ID)
	}
	var (
		reply [][]byte
		fds   []int
		err   error
	)
	switch req.Command {
	case CmdVersion:
		reply, err = s.version(req)
	case CmdDMAMap:
		err = s.dmaMap(req)
	case CmdDMAUnmap:
		reply, err = s.dmaUnmap(req)
	case CmdDeviceGetInfo:
		reply, err = s.deviceInfo(req)
	case CmdRegionInfo:
		reply, err = s.regionInfo(req)
	case CmdIRQInfo:
		reply, err = s.irqInfo(req)
	case CmdSetIRQs:
		err = s.setIRQs(req)
	case CmdRegionRead:
		reply, err = s.regionRead(req)
	case CmdRegionWrite:
		reply, err = s.regionWrite(req)
	case CmdRegionWriteMulti:
		reply, err = s.regionWriteMulti(req)
	case CmdDeviceReset:
		err = s.reset(req)
	default:
		err = fail(unix.ENOTSUP, "%s is not supported by this server", req.Command)
	}
	// Commands that keep descriptors have taken them out of req.Fds.
	closeFds(req.Fds)
	req.Fds = nil
	if err != nil {
		s.stats.Errors.Add(1)
		no := unix.EINVAL
		var e *errno
		if errors.As(err, &e) {
			no = e.no
		}
		s.logf("vfiouser: %s id %d: %v", req.Command, req.ID, err)
		if req.Flags&FlagNoReply != 0 {
			return nil
		}
		if req.Command == CmdVersion {
			_ = s.replyErr(req, no)
			return err // a session without a version cannot go on
		}
		return s.replyErr(req, no)
	}
	if req.Flags&FlagNoReply != 0 {
		return nil
	}
	return s.conn.writeMsg(Header{ID: req.ID, Command: req.Command, Flags: FlagReply}, fds, reply...)
}

func (s *Session) replyErr(req *Request, no unix.Errno) error {
	return s.conn.writeMsg(Header{ID: req.ID, Command: req.Command, Flags: FlagReply | FlagError, Error: uint32(no)}, nil)
}

// capabilities is the JSON object of a VERSION message.
type capabilities struct {
	MaxMsgFds     *int            `json:"max_msg_fds,omitempty"`
	MaxDataXfer   *int            `json:"max_data_xfer_size,omitempty"`
	PgSizes       *uint64         `json:"pgsizes,omitempty"`
	MaxDMAMaps    *int            `json:"max_dma_maps,omitempty"`
	WriteMultiple *bool           `json:"write_multiple,omitempty"`
	TwinSocket    json.RawMessage `json:"twin_socket,omitempty"`
	Migration     json.RawMessage `json:"migration,omitempty"`
}

type versionJSON struct {
	Capabilities *capabilities `json:"capabilities,omitempty"`
}

// version negotiates (vfio-user.rst, "VFIO_USER_VERSION"): major 0, minor at
// most 1; capabilities a subset of the client's: no migration, no twin socket.
func (s *Session) version(req *Request) ([][]byte, error) {
	if s.negotiated.Load() {
		return nil, fail(unix.EINVAL, "second VERSION in one session")
	}
	v, err := ParseVersion(req)
	if err != nil {
		return nil, err
	}
	if v.Major != 0 {
		return nil, fail(unix.ENOTSUP, "protocol major version %d: this server speaks 0", v.Major)
	}
	var in versionJSON
	if len(v.JSON) > 0 {
		if err := json.Unmarshal(v.JSON, &in); err != nil {
			return nil, fail(unix.EINVAL, "%w: VERSION capabilities: %v", ErrMessage, err)
		}
	}
	c := in.Capabilities
	if c == nil {
		c = &capabilities{}
	}
	if c.MaxDataXfer != nil {
		if *c.MaxDataXfer < 8 {
			return nil, fail(unix.EINVAL, "client max_data_xfer_size %d is too small", *c.MaxDataXfer)
		}
		s.peerMaxXfer.Store(uint32(min(*c.MaxDataXfer, 1<<30)))
	}
	if c.PgSizes != nil && *c.PgSizes&pageSize == 0 {
		return nil, fail(unix.ENOTSUP, "client page sizes 0x%x do not include 4 KiB", *c.PgSizes)
	}
	fdsN, xfer, pg, maps := s.opts.MaxMsgFds, s.opts.MaxDataXfer, uint64(pageSize), maxDMAMaps
	if c.MaxDMAMaps != nil {
		maps = max(0, min(maps, *c.MaxDMAMaps))
	}
	out := &capabilities{MaxMsgFds: &fdsN, MaxDataXfer: &xfer, PgSizes: &pg, MaxDMAMaps: &maps}
	if c.WriteMultiple != nil && *c.WriteMultiple {
		t := true
		out.WriteMultiple = &t
		s.writeMulti.Store(true)
	}
	js, err := json.Marshal(versionJSON{Capabilities: out})
	if err != nil {
		return nil, fmt.Errorf("vfiouser: encode capabilities: %w", err)
	}
	s.versionMinor = min(v.Minor, 1)
	var fixed [versionFixed]byte
	binary.LittleEndian.PutUint16(fixed[2:], s.versionMinor)
	s.negotiated.Store(true)
	return [][]byte{fixed[:], js, {0}}, nil
}

func (s *Session) deviceInfo(req *Request) ([][]byte, error) {
	if err := req.need(4); err != nil {
		return nil, err
	}
	b := make([]byte, deviceInfoSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], deviceInfoSize)
	le.PutUint32(b[4:], DeviceFlagReset|DeviceFlagPCI)
	le.PutUint32(b[8:], NumRegions)
	le.PutUint32(b[12:], NumIRQIdx)
	return [][]byte{b}, nil
}

// regionSize is the size and flags of region idx (0 size: absent).
func (s *Session) region(idx uint32) (size uint64, flags uint32) {
	switch idx {
	case RegionBAR0:
		return uint64(s.cfg.bar0Size), RegionFlagRead | RegionFlagWrite
	case MSIXBAR:
		return msixBARSize, RegionFlagRead | RegionFlagWrite
	case RegionConfig:
		return uint64(len(s.cfg.img)), RegionFlagRead | RegionFlagWrite
	}
	return 0, 0
}

// regionInfo answers DEVICE_GET_REGION_INFO. No region is mmappable: every
// access comes as a message, so the model sees each one.
func (s *Session) regionInfo(req *Request) ([][]byte, error) {
	argsz, idx, err := parseIndexed(req, 12)
	if err != nil {
		return nil, err
	}
	if idx >= NumRegions {
		return nil, fail(unix.EINVAL, "region %d: the device has %d", idx, NumRegions)
	}
	if argsz < regionInfoSize {
		return nil, fail(unix.EINVAL, "region info argsz %d: want at least %d", argsz, regionInfoSize)
	}
	size, flags := s.region(idx)
	b := make([]byte, regionInfoSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], regionInfoSize)
	le.PutUint32(b[4:], flags)
	le.PutUint32(b[8:], idx)
	le.PutUint64(b[16:], size)
	return [][]byte{b}, nil
}

func (s *Session) irqInfo(req *Request) ([][]byte, error) {
	argsz, idx, err := parseIndexed(req, 12)
	if err != nil {
		return nil, err
	}
	if idx >= NumIRQIdx {
		return nil, fail(unix.EINVAL, "IRQ index %d: the device has %d", idx, NumIRQIdx)
	}
	if argsz < irqInfoSize {
		return nil, fail(unix.EINVAL, "IRQ info argsz %d: want at least %d", argsz, irqInfoSize)
	}
	flags, count := s.irq.info(int(idx))
	b := make([]byte, irqInfoSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], irqInfoSize)
	le.PutUint32(b[4:], flags)
	le.PutUint32(b[8:], idx)
	le.PutUint32(b[12:], uint32(count))
	return [][]byte{b}, nil
}

func (s *Session) setIRQs(req *Request) error {
	set, err := ParseIRQSet(req)
	if err != nil {
		return err
	}
	fds := req.Fds
	req.Fds = nil
	return s.irq.set(set, fds)
}

// reset is DEVICE_RESET: the model's function-level reset.
func (s *Session) reset(*Request) error {
	if err := s.dev.Reset(); err != nil {
		return fail(unix.EIO, "reset: %v", err)
	}
	return nil
}

func (s *Session) dmaMap(req *Request) error {
	m, err := ParseDMAMap(req)
	if err != nil {
		return err
	}
	if len(req.Fds) > 1 {
		return fail(unix.EINVAL, "DMA_MAP with %d descriptors: want 0 or 1", len(req.Fds))
	}
	fd := -1
	if len(req.Fds) == 1 {
		fd = req.Fds[0] // closed by handle: the mapping keeps the memory
	}
	if err := s.dma.mapRange(m, fd); err != nil {
		return err
	}
	s.stats.DMAMaps.Add(1)
	if fd >= 0 {
		s.stats.DMAMapsFd.Add(1)
	}
	return nil
}

func (s *Session) dmaUnmap(req *Request) ([][]byte, error) {
	u, err := ParseDMAUnmap(req)
	if err != nil {
		return nil, err
	}
	n, err := s.dma.unmapRange(u.Address, u.Size, u.Flags == DMAUnmapFlagAll)
	if err != nil {
		return nil, err
	}
	s.stats.DMAUnmaps.Add(uint64(n))
	return s.reply(req.Payload[:dmaUnmapSize]), nil
}

// reply collects the parts of a reply in the session's own slice.
func (s *Session) reply(parts ...[]byte) [][]byte {
	s.out = append(s.out[:0], parts...)
	return s.out
}

// scratchBuf is n bytes of the session's scratch, valid until the next message.
func (s *Session) scratchBuf(n int) []byte {
	if cap(s.scratch) < n {
		s.scratch = make([]byte, n)
	}
	return s.scratch[:n]
}

// deliverReply hands a reply to the server request waiting for it (a copy: r
// is the connection's, reused by the next read).
func (s *Session) deliverReply(in *Request) {
	closeFds(in.Fds)
	r := &Request{Header: in.Header, Payload: bytes.Clone(in.Payload)}
	s.pmu.Lock()
	ch, ok := s.pending[r.ID]
	delete(s.pending, r.ID)
	s.pmu.Unlock()
	if !ok {
		s.logf("vfiouser: reply id %d (%s) to no request of ours", r.ID, r.Command)
		return
	}
	ch <- r
}

// call sends a server-to-client request and waits for its reply.
func (s *Session) call(cmd Command, parts ...[]byte) (*Request, error) {
	c, err := s.send(cmd, parts...)
	if err != nil {
		return nil, err
	}
	return s.wait(c)
}

// pendingCall is a server request sent and not yet answered.
type pendingCall struct {
	cmd Command
	id  uint16
	ch  chan *Request
}

// send sends a server-to-client request; wait waits for its reply.
func (s *Session) send(cmd Command, parts ...[]byte) (pendingCall, error) {
	ch := make(chan *Request, 1)
	s.pmu.Lock()
	if s.done {
		s.pmu.Unlock()
		return pendingCall{}, fmt.Errorf("vfiouser: %s: %w", cmd, os.ErrClosed)
	}
	id := s.nextID
	for s.pending[id] != nil {
		id++
	}
	s.nextID = id + 1
	s.pending[id] = ch
	s.pmu.Unlock()
	if err := s.conn.writeMsg(Header{ID: id, Command: cmd, Flags: FlagRequest}, nil, parts...); err != nil {
		s.pmu.Lock()
		delete(s.pending, id)
		s.pmu.Unlock()
		return pendingCall{}, err
	}
	return pendingCall{cmd: cmd, id: id, ch: ch}, nil
}

// wait waits for the reply to c (see await for when it gives up).
func (s *Session) wait(c pendingCall) (*Request, error) {
	r, ok, err := s.await(c.cmd, c.id, c.ch)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("vfiouser: %s: session ended before the reply: %w", c.cmd, os.ErrClosed)
	}
	if r.Command != c.cmd {
		return nil, fmt.Errorf("%w: reply to %s id %d is a %s", ErrMessage, c.cmd, c.id, r.Command)
	}
	if r.Flags&FlagError != 0 {
		return nil, fmt.Errorf("vfiouser: %s: client answered errno %d (%v)", c.cmd, r.Error, unix.Errno(r.Error))
	}
	return r, nil
}

// await waits for the reply to request id. A DMA_READ (which a model's
// device access waits for, holding the model's lock a register access needs)
// is given up when a client command that wants a reply has waited
// clientWaitLimit behind it (see queue.go); other requests wait for their
// reply or the end of the session.
func (s *Session) await(cmd Command, id uint16, ch chan *Request) (*Request, bool, error) {
	if cmd != CmdDMARead {
		r, ok := <-ch
		return r, ok, nil
	}
	select { // the usual case: no timer
	case r, ok := <-ch:
		return r, ok, nil
	default:
	}
	t := time.NewTimer(clientWaitLimit / 5)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case r, ok := <-ch:
				return r, ok, nil
			case <-t.C:
			}
		}
		// A command that has waited past the limit already (a request given
		// up before this one) fails this one at once.
		if w := s.cmds.oldestWait(); w >= clientWaitLimit {
			s.pmu.Lock()
			_, still := s.pending[id]
			delete(s.pending, id)
			s.pmu.Unlock()
			if still {
				s.stats.DMAGivenUp.Add(1)
				return nil, false, fmt.Errorf("vfiouser: %s id %d: no reply while a client command has waited %v for its own (a client that serves DMA under the lock it holds while it waits, as QEMU does, cannot answer): given up", cmd, id, w.Round(time.Millisecond))
			}
		}
		t.Reset(clientWaitLimit / 5)
	}
}

// String lists the counts, "name=value" separated by spaces.
func (st *Stats) String() string {
	return fmt.Sprintf("messages=%d errors=%d region_reads=%d region_writes=%d dma_maps=%d dma_maps_fd=%d dma_unmaps=%d irqs_sent=%d irqs_held=%d dma_msgs=%d dma_given_up=%d",
		st.Messages.Load(), st.Errors.Load(), st.RegionReads.Load(), st.RegionWrites.Load(),
		st.DMAMaps.Load(), st.DMAMapsFd.Load(), st.DMAUnmaps.Load(), st.IRQsSent.Load(), st.IRQsPending.Load(),
		st.DMAMessages.Load(), st.DMAGivenUp.Load())
}
