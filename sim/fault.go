package sim

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrFault is wrapped by the error Faults.Err returns.
var ErrFault = errors.New("sim: device model recorded faults")

// OpBusError is the Op of a fault for a register access the SoC did not
// complete (Board.Access): Faults.Err then wraps ErrBusError as well.
const OpBusError = "bus-error"

// Fault is one violation a model detected. The model refused the access or the
// command that caused it.
type Fault struct {
	Op     string // what was attempted: "read32", "write32", "dma-read", "sync", "tx-desc", ...
	Where  string // register name, or "" for memory faults
	Addr   uint64 // register offset or device address
	Detail string // what was wrong, in words
}

func (f Fault) String() string {
	if f.Where != "" {
		return fmt.Sprintf("%s %s (0x%x): %s", f.Op, f.Where, f.Addr, f.Detail)
	}
	return fmt.Sprintf("%s 0x%x: %s", f.Op, f.Addr, f.Detail)
}

// maxFaults bounds the log; later faults are counted but not kept.
const maxFaults = 1000

// Faults is a model's log of violations. The zero value is ready to use. It is
// safe for concurrent use.
type Faults struct {
	mu      sync.Mutex
	list    []Fault // guarded by mu; at most maxFaults entries
	dropped int     // faults not kept because the list was full; guarded by mu
}

// Add records a fault. It allocates: it is for the rare path only.
func (f *Faults) Add(op, where string, addr uint64, format string, args ...any) {
	detail := format
	if len(args) > 0 {
		detail = fmt.Sprintf(format, args...)
	}
	f.mu.Lock()
	if len(f.list) < maxFaults {
		f.list = append(f.list, Fault{Op: op, Where: where, Addr: addr, Detail: detail})
	} else {
		f.dropped++
	}
	f.mu.Unlock()
}

// List returns a copy of the recorded faults, oldest first.
func (f *Faults) List() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Fault(nil), f.list...)
}

// Count is the number of faults recorded, kept or not.
func (f *Faults) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.list) + f.dropped
}

// Clear forgets every fault (for tests that provoke faults on purpose).
func (f *Faults) Clear() {
	f.mu.Lock()
	f.list, f.dropped = nil, 0
	f.mu.Unlock()
}

// Err is nil when no fault was recorded; otherwise an error wrapping ErrFault that
// lists the first faults.
func (f *Faults) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.list) + f.dropped
	if n == 0 {
		return nil
	}
	var b strings.Builder
	bus := false
	for _, x := range f.list {
		bus = bus || x.Op == OpBusError
	}
	for i, x := range f.list {
		if i == 10 {
			fmt.Fprintf(&b, "; ... %d more", n-10)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.String())
	}
	if bus {
		return fmt.Errorf("%w, with a %w (%d): %s", ErrFault, ErrBusError, n, b.String())
	}
	return fmt.Errorf("%w (%d): %s", ErrFault, n, b.String())
}
