package vfiouser

import (
	"sync"
	"time"
)

// The session reads on one goroutine and handles commands on another (Run's),
// so that the replies to the server's own requests (DMA_READ and DMA_WRITE,
// which a model's access to message-only memory makes while a command is being
// handled) are delivered while the handler waits for them. Commands are still
// handled one at a time, in the order they came (vfio-user.rst, "Command
// Concurrency").
//
// A client may wait for a reply (a REGION_READ) while it holds the lock its
// own DMA_READ service needs: QEMU answers DMA_READ and DMA_WRITE from its
// main loop under the big QEMU lock (hw/vfio-user/pci.c,
// vfio_user_pci_process_req), which a vCPU holds while it waits for a
// register read (hw/vfio-user/device.c, vfio_user_device_io_region_read). The
// queue records since when the oldest command that wants a reply has been
// waiting, and a server request still unanswered once that exceeds
// clientWaitLimit fails instead of waiting for ever (see Session.call).

// clientWaitLimit is how long a command that wants a reply may wait behind the
// server's own requests before those are given up.
const clientWaitLimit = 50 * time.Millisecond

// cmdQueue is the commands read and not yet handled. mu guards all fields.
type cmdQueue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	q     []*Request
	err   error       // why reading ended; handed out once q is empty
	waits []time.Time // arrival of each command that wants a reply and has none yet, oldest first
	free  []*Request  // handled requests, for reuse
}

func newCmdQueue() *cmdQueue {
	q := &cmdQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues a copy of r (its payload copied into a recycled request, its
// descriptors handed over).
func (q *cmdQueue) push(r *Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var c *Request
	if n := len(q.free); n > 0 {
		c, q.free = q.free[n-1], q.free[:n-1]
	} else {
		c = &Request{}
	}
	c.Header, c.Fds = r.Header, r.Fds
	c.Payload = append(c.Payload[:0], r.Payload...)
	q.q = append(q.q, c)
	if r.Flags&FlagNoReply == 0 {
		q.waits = append(q.waits, time.Now())
	}
	q.cond.Signal()
}

// stop records why reading ended.
func (q *cmdQueue) stop(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
	}
	q.cond.Signal()
}

// next waits for the next command, or the reader's error once none is left.
func (q *cmdQueue) next() (*Request, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.q) == 0 && q.err == nil {
		q.cond.Wait()
	}
	if len(q.q) == 0 {
		return nil, q.err
	}
	r := q.q[0]
	n := copy(q.q, q.q[1:]) // the queue is short: keep its array from the front
	q.q[n] = nil
	q.q = q.q[:n]
	return r, nil
}

// done recycles a handled command; one that wanted a reply has it now.
func (q *cmdQueue) done(r *Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.Flags&FlagNoReply == 0 && len(q.waits) > 0 {
		q.waits = q.waits[:copy(q.waits, q.waits[1:])]
	}
	r.Fds = nil
	q.free = append(q.free, r)
}

// oldestWait is how long the oldest command that wants a reply has waited (0
// if none does).
func (q *cmdQueue) oldestWait() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waits) == 0 {
		return 0
	}
	return time.Since(q.waits[0])
}

// drain closes the descriptors of the commands never handled.
func (q *cmdQueue) drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.q {
		closeFds(r.Fds)
	}
	q.q = nil
	q.waits = nil
}
