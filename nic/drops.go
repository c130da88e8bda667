package nic

// RxDropCounters is a Port that names the device counters of frames it
// dropped before a receive buffer: the receive FIFO overflowed, a queue
// without descriptors dropped the frame, the frame was too short or too long
// for the port, or its FCS was bad. The names are chosen so that each such
// frame is in exactly one of them: where the hardware counts one frame in two
// registers (a FIFO overflow in the MTL and the MMC, a bad FCS in RMON and
// IEEE counters) only one is named, and event counts that overlap drops
// (igb's RNBC) are not named at all. The dataplane sums them as the frames
// the device dropped.
type RxDropCounters interface {
	RxDropCounters() []string
}

// SumCounters adds the counters of cs named in names and lists the nonzero
// ones, in cs's order.
func SumCounters(cs []Counter, names []string) (total uint64, nonzero []Counter) {
	for _, c := range cs {
		for _, n := range names {
			if c.Name == n {
				total += c.Value
				if c.Value != 0 {
					nonzero = append(nonzero, c)
				}
				break
			}
		}
	}
	return total, nonzero
}

// RxDiscardCounters is a Port that names its driver's counters of frames the
// device wrote to a receive ring whole and the driver did not hand on: a
// write-back with an error bit, a length the buffer cannot hold, or a ring a
// reset started over while frames waited on it (rx_reset_discards, counted
// with RxRing.Written). Each such frame is in exactly one of them, and in no
// RxDropCounters counter. The dataplane sums them as the frames the driver
// discarded.
type RxDiscardCounters interface {
	RxDiscardCounters() []string
}
