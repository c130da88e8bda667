package guestrt

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// RunTest runs one test binary, relaying its output, and returns its exit code
// (-1 when it could not run or was killed).
func RunTest(t guestproto.Test, env []string) int {
	Say("start %s", t.Name)
	begin := time.Now()
	timeout := time.Duration(t.TimeoutSec) * time.Second
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.Path, t.Args...)
	cmd.Env = env
	cmd.Dir = "/tmp"
	cmd.WaitDelay = 5 * time.Second
	// Its own process group, killed whole on timeout: a child it left behind
	// would hold the output pipe open.
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	pr, pw, err := os.Pipe()
	if err != nil {
		Say("out %s| %s: pipe: %v", t.Name, Program, err)
		Say("exit %s -1 0", t.Name)
		return -1
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		Say("out %s| %s: start: %v", t.Name, Program, err)
		Say("exit %s -1 0", t.Name)
		return -1
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		Say("out %s| %s", t.Name, sc.Text())
	}
	pr.Close()
	err = cmd.Wait()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			Say("out %s| %s: killed after %v", t.Name, Program, timeout)
			code = -1
		}
	}
	Say("exit %s %d %.2f", t.Name, code, time.Since(begin).Seconds())
	return code
}
