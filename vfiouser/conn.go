package vfiouser

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// msgConn reads and writes whole vfio-user messages with their file descriptors
// on a stream socket. Reads happen on the session goroutine only and reuse one
// buffer; writes are serialised by wmu and reuse another.
type msgConn struct {
	c       *net.UnixConn // immutable
	maxSize uint32        // immutable: largest message accepted
	maxFds  int           // immutable: descriptors accepted per message

	// Owned by the reading goroutine: the last message read, valid until the
	// next readMsg.
	req  Request
	hb   [HeaderSize]byte
	oob  []byte
	body []byte

	wmu  sync.Mutex // serialises writes: a message goes out whole
	wbuf []byte     // guarded by wmu
}

func newMsgConn(c *net.UnixConn, maxSize uint32, maxFds int) *msgConn {
	return &msgConn{c: c, maxSize: maxSize, maxFds: maxFds, oob: make([]byte, unix.CmsgSpace(4*maxFds))}
}

// errClosed is returned by readMsg when the peer closed the connection cleanly
// (at a message boundary).
var errClosed = errors.New("vfiouser: client disconnected")

// readMsg reads one message into the connection's Request, valid until the next
// readMsg (the payload aliases the read buffer). The header's descriptors come
// in the ancillary data of the bytes that carry it; they are in the Request's
// Fds, owned by the caller even when an error is returned.
func (m *msgConn) readMsg() (*Request, error) {
	req := &m.req
	*req = Request{}
	hb := m.hb[:]
	n, oobn, flags, _, err := m.c.ReadMsgUnix(hb, m.oob)
	if oobn > 0 {
		fds, ferr := parseFds(m.oob[:oobn])
		req.Fds = fds
		if ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)) {
			return req, errClosed
		}
		if errors.Is(err, ErrMessage) {
			return req, err
		}
		return req, fmt.Errorf("vfiouser: read message header: %w", err)
	}
	if n == 0 {
		return req, errClosed
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return req, fmt.Errorf("%w: more file descriptors than the %d negotiated (ancillary data truncated)", ErrMessage, m.maxFds)
	}
	if n < HeaderSize {
		if _, err := io.ReadFull(m.c, hb[n:]); err != nil {
			return req, fmt.Errorf("vfiouser: short message header (%d bytes): %w", n, err)
		}
	}
	h, err := ParseHeader(hb, m.maxSize)
	req.Header = h
	if err != nil {
		return req, err
	}
	size := int(h.Size - HeaderSize)
	if cap(m.body) < size {
		m.body = make([]byte, size)
	}
	body := m.body[:size]
	if _, err := io.ReadFull(m.c, body); err != nil {
		return req, fmt.Errorf("vfiouser: %s id %d: read %d-byte payload: %w", h.Command, h.ID, len(body), err)
	}
	req.Payload = body
	return req, nil
}

// parseFds extracts SCM_RIGHTS descriptors from ancillary data.
func parseFds(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: ancillary data: %v", ErrMessage, err)
	}
	var fds []int
	var bad error
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			bad = fmt.Errorf("%w: ancillary data that is not SCM_RIGHTS", ErrMessage)
			continue
		}
		fds = append(fds, got...)
	}
	return fds, bad
}

// writeMsg sends one message: the header, then the parts, with fds attached.
func (m *msgConn) writeMsg(h Header, fds []int, parts ...[]byte) error {
	size := HeaderSize
	for _, p := range parts {
		size += len(p)
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if cap(m.wbuf) < size {
		m.wbuf = make([]byte, size)
	}
	buf := m.wbuf[:size]
	h.Size = uint32(size)
	PutHeader(buf, h)
	at := HeaderSize
	for _, p := range parts {
		at += copy(buf[at:], p)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := m.c.WriteMsgUnix(buf, oob, nil)
	if err != nil {
		return fmt.Errorf("vfiouser: send %s id %d: %w", h.Command, h.ID, err)
	}
	if n < len(buf) { // a stream socket may take a large message in parts
		if _, err := m.c.Write(buf[n:]); err != nil {
			return fmt.Errorf("vfiouser: send %s id %d: %d of %d bytes sent: %w", h.Command, h.ID, n, len(buf), err)
		}
	}
	return nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
