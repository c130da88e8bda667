package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Timeout bounds one request: connecting, sending, answering.
const Timeout = 5 * time.Second

// MaxRequest bounds a request line (a program object travels in one).
const MaxRequest = 16 << 20

// maxResponse bounds a response line.
const maxResponse = 64 << 20

// Dir is where runs put their sockets.
func Dir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "xnic")
	}
	return "/run/xnic"
}

// Path is the socket of the port called name.
func Path(name string) string {
	return filepath.Join(Dir(), strings.NewReplacer("/", "_", "\x00", "_").Replace(name)+".sock")
}

// ErrNoRun is returned by Resolve when no socket answers to the name.
var ErrNoRun = errors.New("no run serves that port")

// Resolve is the socket of ctl, a port name (as the run prints it, e.g.
// igbsim0) or a socket's path.
func Resolve(ctl string) (string, error) {
	path := ctl
	if !strings.Contains(ctl, "/") {
		path = Path(ctl)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("--control %s: no control socket at %s (is `xnic run` running, and is XDG_RUNTIME_DIR the same as its?): %w", ctl, path, ErrNoRun)
	}
	return path, nil
}

// Alive reports whether something answers on the socket at path.
func Alive(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Call sends one request to the run at path and returns its answer; an
// answer carrying an error becomes the error (the answer is returned too).
func Call(path string, req Request) (Response, error) {
	if Stream(req.Cmd) {
		return Response{}, fmt.Errorf("control: %s is a stream: use Follow", req.Cmd)
	}
	c, err := dial(path, req)
	if err != nil {
		return Response{}, err
	}
	defer c.Close()
	var resp Response
	if err := json.NewDecoder(io.LimitReader(c, maxResponse)).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("control socket %s: reading the answer: %w", path, err)
	}
	return resp, resp.Err()
}

func dial(path string, req Request) (net.Conn, error) {
	c, err := net.DialTimeout("unix", path, Timeout)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := c.SetDeadline(time.Now().Add(Timeout)); err != nil {
		c.Close()
		return nil, err
	}
	b, err := json.Marshal(req)
	if err == nil && len(b) >= MaxRequest {
		err = fmt.Errorf("control: request of %d bytes, at most %d", len(b), MaxRequest)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return c, nil
}

// Follow sends a streaming request and calls fn with each value the run
// sends, until fn returns an error (returned, but io.EOF ends quietly), the
// run ends the stream, stop is closed, or timeout passes (0: none).
func Follow(path string, req Request, stop <-chan struct{}, timeout time.Duration, fn func(json.RawMessage) error) error {
	c, err := dial(path, req)
	if err != nil {
		return err
	}
	defer c.Close()
	dec := json.NewDecoder(c)
	var resp Response
	if err := dec.Decode(&resp); err != nil {
		return fmt.Errorf("control socket %s: reading the answer: %w", path, err)
	}
	if err := resp.Err(); err != nil {
		return err
	}
	deadline := time.Time{}
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	_ = c.SetDeadline(deadline)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			c.Close()
		case <-done:
		}
	}()
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			var ne net.Error
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout()) {
				return nil
			}
			return fmt.Errorf("control socket %s: %w", path, err)
		}
		if err := fn(raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
