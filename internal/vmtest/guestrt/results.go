package guestrt

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// Program names the /init in the lines it writes about itself ("guestinit").
var Program = "init"

var (
	outMu sync.Mutex
	// out is the console (ttyS0), for people; the kernel prints there too.
	out = bufio.NewWriterSize(os.Stdout, 64<<10)
	// res is guestproto.ResultsTTY, the host's channel: nothing else writes
	// there, so no kernel message can split a line. nil until opened; lines
	// said before that wait in early.
	res   io.Writer
	early []byte
)

// Say prints one line for the host, on the results port and the console.
func Say(format string, args ...any) {
	line := guestproto.Prefix + fmt.Sprintf(format, args...) + "\n"
	outMu.Lock()
	defer outMu.Unlock()
	out.WriteString(line)
	out.Flush()
	if res != nil {
		io.WriteString(res, line)
	} else {
		early = append(early, line...)
	}
}

// OpenResults opens the results port and sends it what was said before.
func OpenResults(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	res = f
	_, err = f.Write(early)
	early = nil
	return err
}

func Step(name string, err error, detailOK string) {
	if err != nil {
		Say("step %s fail %v", name, err)
		return
	}
	Say("step %s ok %s", name, detailOK)
}

// Flush writes out what the console buffer holds (before power-off).
func Flush() {
	outMu.Lock()
	defer outMu.Unlock()
	out.Flush()
}

// SetConsole makes w the console Say writes to, until restore (tests).
func SetConsole(w io.Writer) (restore func()) {
	outMu.Lock()
	defer outMu.Unlock()
	old := out
	out = bufio.NewWriter(w)
	return func() {
		outMu.Lock()
		defer outMu.Unlock()
		out = old
	}
}
