package nic

import "fmt"

// CounterValue returns the named counter of cs (as Port.Stats returns them),
// and whether it is there.
func CounterValue(cs []Counter, name string) (uint64, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

// AppendQueueCounters appends one queue's packet and byte counts under the
// names drivers use for them: "<dir>_queue_<idx>_packets" and
// "<dir>_queue_<idx>_bytes" (dir "rx" or "tx", as Linux's ethtool -S names
// per-queue counters).
func AppendQueueCounters(out []Counter, dir string, idx int, packets, bytes uint64) []Counter {
	return append(out,
		Counter{Name: fmt.Sprintf("%s_queue_%d_packets", dir, idx), Value: packets},
		Counter{Name: fmt.Sprintf("%s_queue_%d_bytes", dir, idx), Value: bytes})
}

// AppendPortQueueCounters appends AppendQueueCounters for every RX queue of a
// port, then for every TX queue; counts gives a queue's index and the packets
// and bytes it has moved (read atomically: Stats runs beside the queues'
// goroutines).
func AppendPortQueueCounters[R, T any](out []Counter, rx []R, rxCounts func(R) (idx int, packets, bytes uint64), tx []T, txCounts func(T) (idx int, packets, bytes uint64)) []Counter {
	for _, q := range rx {
		i, p, b := rxCounts(q)
		out = AppendQueueCounters(out, "rx", i, p, b)
	}
	for _, q := range tx {
		i, p, b := txCounts(q)
		out = AppendQueueCounters(out, "tx", i, p, b)
	}
	return out
}
