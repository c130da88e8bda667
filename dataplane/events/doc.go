// Package events reads what XDP programs send to user space: the records of
// BPF ring buffers (bpf_ringbuf_output, bpf_ringbuf_reserve/submit) and the
// samples of perf event arrays (bpf_perf_event_output), as libbpf's
// ring_buffer__poll and perf_buffer__poll hand them to a program.
//
// An Event carries the record's bytes and, where the object's BTF says what
// they are, their decoding (package btfvalue): a record is decoded as the
// one named struct of the object's BTF whose size is the record's length,
// when there is exactly one (objects name their record types in BTF as
// bpf2go -type asks: a global `const struct event *unused;`). A perf
// sample's frame bytes (BPF_F_CTXLEN_MASK) come apart from its data.
//
// A Reader is not safe for concurrent use: one goroutine drains it.
package events
