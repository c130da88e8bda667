package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Handler answers the requests of one port.
type Handler interface {
	// Handle answers a request; an error becomes resp.Error.
	Handle(req *Request, resp *Response) error
	// Stream serves a streaming request on s until the client hangs up
	// (s.Gone) or the server closes (s.Stop); an error before the first
	// value refuses it.
	Stream(req *Request, s *StreamConn) error
}

// StreamConn is a stream's connection as its Handler sees it.
type StreamConn struct {
	w       *bufio.Writer
	c       net.Conn
	started bool
	resp    Response
	// Gone is closed when the client hangs up; Stop when the server closes.
	Gone, Stop <-chan struct{}
}

// Send writes one value of the stream (the Response header first, once).
func (s *StreamConn) Send(v any) error {
	if !s.started {
		s.started = true
		if err := s.line(s.resp); err != nil {
			return err
		}
	}
	return s.line(v)
}

func (s *StreamConn) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.w.Write(b)
	s.w.WriteByte('\n')
	return s.w.Flush()
}

// Begin sends the header alone: the stream is accepted, values follow.
func (s *StreamConn) Begin() error {
	if s.started {
		return nil
	}
	s.started = true
	return s.line(s.resp)
}

// Server serves the control sockets of a run's ports.
type Server struct {
	stop  chan struct{}  // closed by Close: ends streams
	lns   []net.Listener // guarded by mu
	paths []string       // guarded by mu
	mu    sync.Mutex
	wg    sync.WaitGroup // accept loops and connections
}

// NewServer makes a server with no sockets; Listen adds them.
func NewServer() *Server { return &Server{stop: make(chan struct{})} }

// Listen serves port name's socket with h and returns its path. A socket
// left by a run that is gone is replaced; a name a live run already serves
// gets the socket NAME.PID.sock instead.
func (s *Server) Listen(name, family string, h Handler) (string, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // one made before with wider permissions
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	path := Path(name)
	if Alive(path) {
		path = strings.TrimSuffix(path, ".sock") + fmt.Sprintf(".%d.sock", os.Getpid())
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return "", fmt.Errorf("control socket for %s: %s exists and is no socket", name, path)
		}
		_ = os.Remove(path) // a socket nobody answers on: a run that is gone
	}
	ln, err := listenOwnerOnly(path)
	if err != nil {
		return "", fmt.Errorf("control socket for %s: %w", name, err)
	}
	s.mu.Lock()
	s.lns, s.paths = append(s.lns, ln), append(s.paths, path)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(ln, name, family, h)
	return path, nil
}

// listenOwnerOnly listens on a Unix socket that only its owner may connect to
// (connect(2) needs write permission on the socket file).
func listenOwnerOnly(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Close stops serving, ends streams and removes the sockets. A nil server
// is closed.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	var errs []error
	for i, ln := range s.lns {
		errs = append(errs, ln.Close())
		_ = os.Remove(s.paths[i])
	}
	s.lns, s.paths = nil, nil
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(errs...)
}

// accept runs in its own goroutine per socket until the listener closes.
func (s *Server) accept(ln net.Listener, name, family string, h Handler) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c, Response{Port: name, Family: family}, h)
		}()
	}
}

// serve answers one request on c, in the connection's own goroutine.
func (s *Server) serve(c net.Conn, resp Response, h Handler) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Timeout))
	r := bufio.NewReaderSize(io.LimitReader(c, MaxRequest), 64<<10)
	line, err := r.ReadBytes('\n')
	var req Request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil && Stream(req.Cmd) {
		_ = c.SetDeadline(time.Time{})
		gone := make(chan struct{})
		go func() { // the client sends nothing more: a read returns when it hangs up
			_, _ = io.Copy(io.Discard, c)
			close(gone)
		}()
		sc := &StreamConn{w: bufio.NewWriter(c), c: c, resp: resp, Gone: gone, Stop: s.stop}
		err = h.Stream(&req, sc)
		if err == nil || sc.started {
			return
		}
	}
	if err == nil {
		err = h.Handle(&req, &resp)
	}
	if err != nil {
		resp.Error = err.Error()
	}
	b, _ := json.Marshal(resp)
	_, _ = c.Write(append(b, '\n'))
}
