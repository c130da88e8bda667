package pktgen

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// SendStats is what Send did.
type SendStats struct {
	Sent    uint64        // frames the TX ring took
	Bytes   uint64        // their bytes
	Full    uint64        // times the ring was full (the burst was retried)
	Elapsed time.Duration // from the first to the last burst
}

// PPS is the rate of frames sent.
func (s SendStats) PPS() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Sent) / s.Elapsed.Seconds()
}

// Send transmits count copies of frame on q in bursts of burst frames, each burst
// with one Send (one tail write), taking buffers from pool. It stops early when
// stop is closed or deadline passes (zero: no deadline). Buffers the ring does
// not take are kept for the next try; all of them are freed or on the ring when
// Send returns.
func Send(q nic.TxQueue, pool *dma.Pool, frame []byte, count uint64, burst int, deadline time.Time, stop <-chan struct{}) (st SendStats, err error) {
	if burst <= 0 || burst > 1024 {
		return st, fmt.Errorf("pktgen: burst %d outside 1..1024", burst)
	}
	if len(frame) > pool.FrameSize()-dma.Headroom {
		return st, fmt.Errorf("pktgen: %d-byte frame does not fit a %d-byte buffer", len(frame), pool.FrameSize())
	}
	bufs := make([]*dma.Buf, burst)
	have := 0
	start := time.Now()
	defer func() {
		for _, b := range bufs[:have] {
			b.Free()
		}
		st.Elapsed = time.Since(start)
	}()
	for st.Sent < count {
		select {
		case <-stop:
			return st, nil
		default:
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return st, nil
		}
		want := int(min(uint64(burst), count-st.Sent))
		for have < want {
			b := pool.Get()
			if b == nil {
				break
			}
			b.Len = copy(b.Mem[b.Off:], frame)
			bufs[have] = b
			have++
		}
		q.Reclaim()
		n := q.Send(bufs[:have])
		st.Sent += uint64(n)
		st.Bytes += uint64(n * len(frame))
		copy(bufs, bufs[n:have])
		have -= n
		clear(bufs[have:])
		if n < want {
			st.Full++
			time.Sleep(20 * time.Microsecond)
		}
	}
	return st, nil
}
