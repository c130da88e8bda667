package nictest

import (
	"fmt"
	"runtime"
	"testing"
)

// fatalTB records the first Fatal or Fatalf and ends the goroutine, as
// testing.T does; everything else goes to the test it wraps.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Fails runs fn on its own goroutine with a testing.TB whose Fatal and
// Fatalf end fn there, and returns the message fn failed with ("" when it
// did not): for tests of test helpers, that a helper fails when it must and
// says why.
func Fails(t testing.TB, fn func(tb testing.TB)) string {
	t.Helper()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}
