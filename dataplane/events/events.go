package events

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/btfvalue"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Kinds of Event.
const (
	KindRingBuf = "ringbuf"
	KindPerf    = "perf"
)

// Event is one ring buffer record or perf sample (or a perf loss report:
// Lost set, no Data).
type Event struct {
	Nanos     int64  `json:"ts"` // Unix nanoseconds when read
	Map       string `json:"map"`
	Kind      string `json:"kind"`          // KindRingBuf or KindPerf
	CPU       int    `json:"cpu,omitempty"` // perf: the slot
	Data      []byte `json:"data"`
	Frame     []byte `json:"frame,omitempty"` // perf: the frame bytes appended
	Type      string `json:"type,omitempty"`  // the BTF type Formatted decodes Data as
	Formatted any    `json:"formatted,omitempty"`
	Lost      uint64 `json:"lost,omitempty"` // perf: samples refused (ring full)
}

// String is the event on one line: map, kind, the decoded value or the data
// in hex, the frame's length.
func (e *Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Kind, e.Map)
	if e.Kind == KindPerf {
		fmt.Fprintf(&b, " cpu %d", e.CPU)
	}
	if e.Lost > 0 {
		fmt.Fprintf(&b, ": %d samples lost (ring full)", e.Lost)
		return b.String()
	}
	if e.Formatted != nil {
		j, _ := json.Marshal(e.Formatted)
		fmt.Fprintf(&b, ": %s %s", e.Type, j)
	} else {
		fmt.Fprintf(&b, ": data %s", hex.EncodeToString(e.Data))
	}
	if len(e.Frame) > 0 {
		fmt.Fprintf(&b, " + %d frame bytes", len(e.Frame))
	}
	return b.String()
}

// source is one map a Reader drains.
type source struct {
	name string
	ring *maps.RingBuf
	perf *maps.PerfReader
}

// Reader drains the ring buffers and perf event arrays of a collection.
type Reader struct {
	srcs  []source
	types []*btf.Struct // named structs of the object's BTF, by size
	buf   []byte
}

// PerfRingBytes is each perf slot's ring a Reader opens: room for a burst of
// samples.
const PerfRingBytes = 1 << 20

// maxRecord bounds a ring buffer record (the ring's size bounds it too).
const maxRecord = 1 << 20

// NewReader opens a reader on every ring buffer and perf event array of c;
// types, when not nil, is the object's BTF, for decoding. Perf event arrays
// already read by another Reader are taken over (their slots reopened).
func NewReader(c *bpf.Collection, types *btf.Spec) (*Reader, error) {
	r := &Reader{buf: make([]byte, 4096)}
	all := c.Maps()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch m := all[n].(type) {
		case *maps.RingBuf:
			r.srcs = append(r.srcs, source{name: n, ring: m})
		case *maps.PerfEventArray:
			pr, err := maps.NewPerfReader(m, PerfRingBytes)
			if err != nil {
				return nil, fmt.Errorf("perf event array %s: %w", n, err)
			}
			r.srcs = append(r.srcs, source{name: n, perf: pr})
		}
	}
	if types != nil {
		for t, err := range types.All() {
			if err != nil {
				break
			}
			if s, ok := t.(*btf.Struct); ok && s.Name != "" && s.Name != "xdp_md" {
				r.types = append(r.types, s)
			}
		}
	}
	return r, nil
}

// Maps names the maps r drains.
func (r *Reader) Maps() []string {
	out := make([]string, len(r.srcs))
	for i, s := range r.srcs {
		out[i] = s.name
	}
	return out
}

// Drain hands every waiting record to fn, in map order, and returns how
// many it handed. It does not wait. Event.Data and Frame are fn's own.
func (r *Reader) Drain(fn func(*Event)) (int, error) {
	n := 0
	for _, s := range r.srcs {
		if s.ring != nil {
			k, err := r.drainRing(s, fn)
			n += k
			if err != nil {
				return n, err
			}
			continue
		}
		for {
			rec, ok := s.perf.Poll()
			if !ok {
				break
			}
			e := &Event{Nanos: time.Now().UnixNano(), Map: s.name, Kind: KindPerf, CPU: rec.CPU}
			if rec.RawSample == nil {
				e.Lost = rec.LostSamples
			} else {
				e.Data = append([]byte(nil), rec.RawSample[:rec.FrameOffset]...)
				e.Frame = append([]byte(nil), rec.RawSample[rec.FrameOffset:rec.FrameOffset+rec.FrameLen]...)
				r.decode(e)
			}
			fn(e)
			n++
		}
	}
	return n, nil
}

func (r *Reader) drainRing(s source, fn func(*Event)) (int, error) {
	n := 0
	for {
		k, err := s.ring.Read(r.buf)
		if errors.Is(err, maps.ErrNoRecord) {
			return n, nil
		}
		if err != nil && k > len(r.buf) && k <= maxRecord {
			r.buf = make([]byte, k) // io.ErrShortBuffer: the record waits
			continue
		}
		if err != nil {
			return n, fmt.Errorf("ring buffer %s: %w", s.name, err)
		}
		e := &Event{Nanos: time.Now().UnixNano(), Map: s.name, Kind: KindRingBuf, Data: append([]byte(nil), r.buf[:k]...)}
		r.decode(e)
		fn(e)
		n++
	}
}

// decode sets e.Type and e.Formatted when exactly one struct of the BTF
// has the data's size.
func (r *Reader) decode(e *Event) {
	var match *btf.Struct
	for _, s := range r.types {
		if int(s.Size) != len(e.Data) {
			continue
		}
		if match != nil && match.Name != s.Name {
			return // ambiguous: left undecoded
		}
		match = s
	}
	if match == nil {
		return
	}
	v, err := btfvalue.Decode(match, e.Data)
	if err != nil {
		return
	}
	e.Type, e.Formatted = "struct "+match.Name, v
}
