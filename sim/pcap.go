package sim

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"
)

// pcap file format (the classic libpcap format; tcpdump and Wireshark read it):
// a 24-byte global header, then per frame a 16-byte record header and the bytes.
// All fields little endian here (the magic tells readers which).
const (
	pcapMagicMicros   = 0xa1b2c3d4
	pcapVersionMajor  = 2
	pcapVersionMinor  = 4
	pcapSnapLen       = 262144
	pcapLinkEthernet  = 1 // LINKTYPE_ETHERNET
	pcapGlobalHdrSize = 24
	pcapRecordHdrSize = 16
)

// PcapWriter writes Ethernet frames to a pcap stream. Safe for concurrent use;
// WriteFrame does not allocate.
type PcapWriter struct {
	now func() time.Time // immutable; time.Now unless a test replaces it

	mu  sync.Mutex
	w   *bufio.Writer           // guarded by mu
	hdr [pcapRecordHdrSize]byte // scratch; guarded by mu
	n   uint64                  // frames written; guarded by mu
}

// NewPcapWriter writes the global header to w and returns the writer. Call Flush
// (or Tap.Close) before closing w.
func NewPcapWriter(w io.Writer) (*PcapWriter, error) {
	p := &PcapWriter{now: time.Now, w: bufio.NewWriterSize(w, 64<<10)}
	var h [pcapGlobalHdrSize]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], pcapMagicMicros)
	le.PutUint16(h[4:], pcapVersionMajor)
	le.PutUint16(h[6:], pcapVersionMinor)
	// thiszone and sigfigs stay 0
	le.PutUint32(h[16:], pcapSnapLen)
	le.PutUint32(h[20:], pcapLinkEthernet)
	if _, err := p.w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("sim: pcap header: %w", err)
	}
	return p, nil
}

// WriteFrame records one frame with the current time.
func (p *PcapWriter) WriteFrame(frame []byte) error {
	t := p.now()
	incl := min(len(frame), pcapSnapLen)
	p.mu.Lock()
	defer p.mu.Unlock()
	le := binary.LittleEndian
	le.PutUint32(p.hdr[0:], uint32(t.Unix()))
	le.PutUint32(p.hdr[4:], uint32(t.Nanosecond()/1000))
	le.PutUint32(p.hdr[8:], uint32(incl))
	le.PutUint32(p.hdr[12:], uint32(len(frame)))
	if _, err := p.w.Write(p.hdr[:]); err != nil {
		return fmt.Errorf("sim: pcap record: %w", err)
	}
	if _, err := p.w.Write(frame[:incl]); err != nil {
		return fmt.Errorf("sim: pcap record: %w", err)
	}
	p.n++
	return nil
}

// Frames is the number of frames written.
func (p *PcapWriter) Frames() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Flush writes buffered records to the underlying writer.
func (p *PcapWriter) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("sim: pcap flush: %w", err)
	}
	return nil
}

// Tap is a Link that records every frame passing through another Link, both
// ways, to a pcap stream (as QEMU's filter-dump). Safe for concurrent use.
type Tap struct {
	inner Link        // immutable
	pw    *PcapWriter // immutable
	recv  receiverSlot
	cnt   linkCounters

	errMu sync.Mutex
	err   error // first pcap write error; guarded by errMu
}

// NewTap wraps inner: frames sent through the tap and frames arriving from inner
// are written to pw, then passed on.
func NewTap(inner Link, pw *PcapWriter) *Tap {
	t := &Tap{inner: inner, pw: pw}
	inner.SetReceiver(t.onReceive)
	return t
}

func (t *Tap) record(frame []byte) {
	if err := t.pw.WriteFrame(frame); err != nil {
		t.errMu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.errMu.Unlock()
	}
}

func (t *Tap) onReceive(frame []byte) {
	t.record(frame)
	t.recv.deliver(&t.cnt, frame)
}

// Send implements Link.
func (t *Tap) Send(frame []byte) error {
	t.record(frame)
	t.cnt.sent.Add(1)
	t.cnt.sendBytes.Add(uint64(len(frame)))
	return t.inner.Send(frame)
}

// SetReceiver implements Link.
func (t *Tap) SetReceiver(r Receiver) { t.recv.set(r) }

// Err is the first error writing the capture, if any.
func (t *Tap) Err() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

// Close flushes the capture and closes the inner link.
func (t *Tap) Close() error {
	ferr := t.pw.Flush()
	if err := t.inner.Close(); err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	return t.Err()
}

// Stats returns the tap's counters.
func (t *Tap) Stats() LinkStats { return t.cnt.snapshot() }

var _ Link = (*Tap)(nil)
