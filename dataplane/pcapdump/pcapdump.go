package pcapdump

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// Block types and option codes (pcapng specification, sections 4 and 3.5).
const (
	blockSHB uint32 = 0x0A0D0D0A // Section Header Block
	blockIDB uint32 = 0x00000001 // Interface Description Block
	blockEPB uint32 = 0x00000006 // Enhanced Packet Block

	byteOrderMagic uint32 = 0x1A2B3C4D
	linkEthernet   uint16 = 1 // LINKTYPE_ETHERNET

	optEnd       uint16 = 0 // opt_endofopt
	optComment   uint16 = 1 // opt_comment (UTF-8)
	optIfName    uint16 = 2 // if_name
	optIfTsresol uint16 = 9 // if_tsresol: one byte, 9 = nanoseconds

	// SnapLen is the most bytes of a frame recorded.
	SnapLen = 65535
)

// Filter says which verdicts are recorded.
type Filter uint8

// All records every verdict.
const All Filter = 0x1F

// ParseFilter reads a comma-separated list of verdicts ("drop,tx", "XDP_PASS",
// "all"; "" means all).
func ParseFilter(s string) (Filter, error) {
	if s == "" || s == "all" {
		return All, nil
	}
	var f Filter
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(w)), "XDP_")
		var a bpf.Action
		switch w {
		case "ABORTED":
			a = bpf.ActionAborted
		case "DROP":
			a = bpf.ActionDrop
		case "PASS":
			a = bpf.ActionPass
		case "TX":
			a = bpf.ActionTX
		case "REDIRECT":
			a = bpf.ActionRedirect
		default:
			return 0, fmt.Errorf("pcapdump: unknown verdict %q (want aborted, drop, pass, tx, redirect or all)", w)
		}
		f |= 1 << a
	}
	return f, nil
}

// Writer writes one pcapng file. Its methods are safe for concurrent use; Dump
// does not allocate.
type Writer struct {
	filter Filter
	nIf    int

	mu      sync.Mutex // guards everything below
	w       *bufio.Writer
	c       io.Closer
	hdr     [64]byte
	frames  uint64
	err     error
	comment [40][]byte // "XDP_xxx queue N" for 5 verdicts x queues 0-7; immutable
}

// Create makes a pcapng file at path with one interface per name.
func Create(path string, ifaces []string, filter Filter) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("pcapdump: %w", err)
	}
	w, err := NewWriter(f, ifaces, filter)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.c = f
	return w, nil
}

// NewWriter writes a pcapng section to out.
func NewWriter(out io.Writer, ifaces []string, filter Filter) (*Writer, error) {
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("pcapdump: no interfaces")
	}
	w := &Writer{filter: filter, nIf: len(ifaces), w: bufio.NewWriterSize(out, 1<<16)}
	for a := bpf.Action(0); a <= bpf.ActionRedirect; a++ {
		for q := 0; q < 8; q++ {
			w.comment[int(a)*8+q] = []byte(fmt.Sprintf("%s queue %d", a, q))
		}
	}
	// Section Header Block: type, length, magic, version 1.0, section length -1
	// (unknown), no options, length.
	var shb [28]byte
	le := binary.LittleEndian
	le.PutUint32(shb[0:], blockSHB)
	le.PutUint32(shb[4:], 28)
	le.PutUint32(shb[8:], byteOrderMagic)
	le.PutUint16(shb[12:], 1)
	le.PutUint16(shb[14:], 0)
	le.PutUint64(shb[16:], ^uint64(0))
	le.PutUint32(shb[24:], 28)
	w.w.Write(shb[:])
	for _, name := range ifaces {
		w.writeIDB(name)
	}
	if err := w.w.Flush(); err != nil {
		return nil, fmt.Errorf("pcapdump: writing the header: %w", err)
	}
	return w, nil
}

// zero is padding.
var zero [4]byte

func pad4(n int) int { return (n + 3) &^ 3 }

func (w *Writer) writeIDB(name string) {
	le := binary.LittleEndian
	optLen := 4 + pad4(len(name)) + 4 + 4 + 4 // if_name, if_tsresol (1 byte padded), end
	total := 16 + optLen + 4
	b := make([]byte, total)
	le.PutUint32(b[0:], blockIDB)
	le.PutUint32(b[4:], uint32(total))
	le.PutUint16(b[8:], linkEthernet)
	le.PutUint32(b[12:], SnapLen)
	o := 16
	le.PutUint16(b[o:], optIfName)
	le.PutUint16(b[o+2:], uint16(len(name)))
	copy(b[o+4:], name)
	o += 4 + pad4(len(name))
	le.PutUint16(b[o:], optIfTsresol)
	le.PutUint16(b[o+2:], 1)
	b[o+4] = 9
	o += 8
	le.PutUint16(b[o:], optEnd)
	o += 4
	le.PutUint32(b[o:], uint32(total))
	w.w.Write(b)
}

// Want reports whether frames with verdict a are recorded.
func (w *Writer) Want(a bpf.Action) bool {
	return a <= bpf.ActionRedirect && w.filter&(1<<a) != 0
}

// Dump records frame, seen on interface port and RX queue queue with verdict a.
func (w *Writer) Dump(port, queue int, a bpf.Action, frame []byte) {
	w.DumpFrame(port, queue, a, frame, len(frame), time.Now())
}

// DumpFrame records frame, the first bytes of a frame of origLen bytes, seen
// at ts on interface port and RX queue queue with verdict a (a capture taken
// elsewhere: xnic dump).
func (w *Writer) DumpFrame(port, queue int, a bpf.Action, frame []byte, origLen int, ts time.Time) {
	if port < 0 || port >= w.nIf {
		return
	}
	origLen = max(origLen, len(frame))
	capLen := min(len(frame), SnapLen)
	var comment []byte
	if a <= bpf.ActionRedirect && queue >= 0 && queue < 8 {
		comment = w.comment[int(a)*8+queue]
	}
	optLen := 4 // opt_endofopt
	if comment != nil {
		optLen += 4 + pad4(len(comment))
	}
	total := 28 + pad4(capLen) + optLen + 4
	le := binary.LittleEndian
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	h := w.hdr[:28]
	le.PutUint32(h[0:], blockEPB)
	le.PutUint32(h[4:], uint32(total))
	le.PutUint32(h[8:], uint32(port))
	ns := uint64(ts.UnixNano())
	le.PutUint32(h[12:], uint32(ns>>32))
	le.PutUint32(h[16:], uint32(ns))
	le.PutUint32(h[20:], uint32(capLen))
	le.PutUint32(h[24:], uint32(origLen))
	w.w.Write(h)
	w.w.Write(frame[:capLen])
	w.w.Write(zero[:pad4(capLen)-capLen])
	if comment != nil {
		le.PutUint16(w.hdr[0:], optComment)
		le.PutUint16(w.hdr[2:], uint16(len(comment)))
		w.w.Write(w.hdr[:4])
		w.w.Write(comment)
		w.w.Write(zero[:pad4(len(comment))-len(comment)])
	}
	le.PutUint32(w.hdr[0:], 0) // opt_endofopt
	le.PutUint32(w.hdr[4:], uint32(total))
	_, err := w.w.Write(w.hdr[:8])
	if err != nil {
		w.err = err
	}
	w.frames++
}

// Frames is how many frames were recorded.
func (w *Writer) Frames() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.frames
}

// Flush writes buffered blocks out.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("pcapdump: %w", w.err)
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
		return fmt.Errorf("pcapdump: %w", err)
	}
	return nil
}

// Close flushes and closes the file (when Create opened it).
func (w *Writer) Close() error {
	err := w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("pcapdump: %w", cerr)
		}
	}
	return err
}
