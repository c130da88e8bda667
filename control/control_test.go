package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// echo answers stats with its counters and streams n numbers on "trace".
type echo struct{ n int }

func (e echo) Handle(req *Request, resp *Response) error {
	if req.Cmd == CmdStats {
		resp.Counters = Counters{{Name: "z_last", Value: 1}, {Name: "a_first", Value: 2}}
		return nil
	}
	return fmt.Errorf("unknown control request %q", req.Cmd)
}

func (e echo) Stream(req *Request, s *StreamConn) error {
	if req.Cmd != CmdTrace {
		return errors.New("no such stream")
	}
	for i := range e.n {
		if err := s.Send(i); err != nil {
			return nil
		}
	}
	<-s.Gone
	return nil
}

// TestSocketPaths: a socket left by a run that is gone is replaced, a name
// a live server serves gets NAME.PID.sock, a file that is no socket is left
// alone and refused, the directory and the socket are owner-only, and Close
// removes the sockets.
func TestSocketPaths(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := Path("p/0")
	if filepath.Base(path) != "p_0.sock" {
		t.Fatalf("path %s", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path) // stale: its listener gone, the file left
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	a := NewServer()
	defer a.Close()
	got, err := a.Listen("p/0", "fam", echo{})
	if err != nil || got != path || !Alive(path) {
		t.Fatalf("stale socket not replaced: %s %v", got, err)
	}
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v %v, want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	b := NewServer()
	pidPath, err := b.Listen("p/0", "fam", echo{})
	if want := strings.TrimSuffix(path, ".sock") + fmt.Sprintf(".%d.sock", os.Getpid()); err != nil || pidPath != want {
		t.Fatalf("second server: %s %v, want %s", pidPath, err, want)
	}
	b.Close()
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Fatalf("socket after Close: %v", err)
	}
	resp, err := Call(path, Request{Cmd: CmdStats})
	if err != nil || resp.Port != "p/0" || resp.Family != "fam" || len(resp.Counters) != 2 || resp.Counters[0].Name != "z_last" {
		t.Fatalf("stats: %+v %v", resp, err)
	}
	if _, err := Call(path, Request{Cmd: "bogus"}); err == nil || !strings.Contains(err.Error(), "unknown control request") || !strings.Contains(err.Error(), "p/0") {
		t.Fatalf("unknown request: %v", err)
	}
	if _, err := Call(path, Request{Cmd: CmdTrace}); err == nil {
		t.Fatal("Call took a stream")
	}
	a.Close()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer().Listen("p/0", "fam", echo{}); err == nil || !strings.Contains(err.Error(), "no socket") {
		t.Fatalf("a regular file in the way: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "x" {
		t.Fatal("the file was touched")
	}
	if _, err := Resolve("nosuch"); !errors.Is(err, ErrNoRun) {
		t.Fatalf("resolve: %v", err)
	}
}

// TestFollow: a stream's values arrive in order; the client ends it when it
// has enough (io.EOF from fn), by stop, or by timeout; a refused stream is
// an error.
func TestFollow(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := NewServer()
	defer s.Close()
	path, err := s.Listen("f0", "fam", echo{n: 5})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	err = Follow(path, Request{Cmd: CmdTrace}, nil, 0, func(raw json.RawMessage) error {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if got = append(got, v); len(got) == 3 {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) || fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("%v %v", got, err)
	}
	start := time.Now()
	n := 0
	if err := Follow(path, Request{Cmd: CmdTrace}, nil, 200*time.Millisecond, func(json.RawMessage) error { n++; return nil }); err != nil || n != 5 {
		t.Fatalf("timeout: %d values, %v", n, err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("the timeout did not end the stream")
	}
	stop := make(chan struct{})
	close(stop)
	if err := Follow(path, Request{Cmd: CmdTrace}, stop, 0, func(json.RawMessage) error { return nil }); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := Follow(path, Request{Cmd: CmdEvents}, nil, 0, func(json.RawMessage) error { return nil }); err == nil || !strings.Contains(err.Error(), "no such stream") {
		t.Fatalf("refused stream: %v", err)
	}
}

var errEnough = errors.New("enough")

// TestCountersJSON: counters are one object in the driver's order, and
// read back in that order.
func TestCountersJSON(t *testing.T) {
	cs := Counters{{Name: "rx_b", Value: 3}, {Name: "rx_a", Value: 1 << 60}}
	b, err := json.Marshal(cs)
	if err != nil || string(b) != `{"rx_b":3,"rx_a":1152921504606846976}` {
		t.Fatalf("%s %v", b, err)
	}
	var back Counters
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 2 || back[1] != (nic.Counter{Name: "rx_a", Value: 1 << 60}) {
		t.Fatalf("%+v %v", back, err)
	}
	for _, bad := range []string{`[]`, `{"a": -1}`, `{"a": "x"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s read as counters", bad)
		}
	}
}
