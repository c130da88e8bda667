package nic

import "time"

// Poll calls cond every step until it reports true or timeout passes, and
// reports whether it did. cond runs at least once, and once more after the
// deadline has passed: the call that decides a timeout starts after the
// deadline, so a poller that was descheduled past the deadline does not report
// a false timeout.
func Poll(timeout, step time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		late := time.Now().After(deadline)
		if cond() {
			return true
		}
		if late {
			return false
		}
		time.Sleep(step)
	}
}

// PollReg reads the register at off every step until done holds for the value
// read, and returns the last value. The error is nil when done held,
// ErrNoDevice when the register read all ones (a device that is gone, or a
// window that is not mapped; done is not asked), and ErrTimeout when timeout
// passed; callers wrap it with what they waited for. Timing is Poll's.
func PollReg(r Regs, off uint32, timeout, step time.Duration, done func(v uint32) bool) (uint32, error) {
	var v uint32
	var err error
	Poll(timeout, step, func() bool {
		v = r.Read32(off)
		switch {
		case v == 0xFFFFFFFF:
			err = ErrNoDevice
		case done(v):
			err = nil
		default:
			err = ErrTimeout
			return false
		}
		return true
	})
	return v, err
}

// WaitLinkUp calls link every step until it reports the link up or timeout
// passes, and returns the last state and whether it was up. Timing is Poll's.
func WaitLinkUp(timeout, step time.Duration, link func() LinkState) (LinkState, bool) {
	var l LinkState
	up := Poll(timeout, step, func() bool {
		l = link()
		return l.Up
	})
	return l, up
}
