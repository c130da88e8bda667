package main

import (
	"errors"
	"flag"
	"fmt"
	"sync"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
)

// Limits on `xnic run --dump`, as tcpdump has them: --dump-count N stops
// recording after N frames (-c, but the run goes on), --dump-size MB starts a
// new file once the current one holds about MB megabytes (-C; the files are
// F.pcapng, F1.pcapng, F2.pcapng, ...), and --dump-files W with it keeps at
// most W files, reusing F0 .. F(W-1) in turn (-W). Each file is a complete
// pcapng section with every port's interface block.

// dumpLimits are the --dump-* limits (zero: none).
type dumpLimits struct {
	count uint64 // frames in all
	size  uint64 // bytes per file
	files int    // files in the ring (with size)
}

// dumpLimitFlags registers the limit flags.
func dumpLimitFlags(fs *flag.FlagSet, l *dumpLimits) {
	fs.Uint64Var(&l.count, "dump-count", 0, "with --dump: record at most this many frames (0: no limit)")
	fs.Func("dump-size", "with --dump: start a new file after about this many megabytes (F1.pcapng, F2.pcapng, ...)", func(s string) error {
		var mb uint64
		if _, err := fmt.Sscan(s, &mb); err != nil || mb == 0 {
			return errors.New("want a number of megabytes, at least 1")
		}
		l.size = mb * 1_000_000
		return nil
	})
	fs.IntVar(&l.files, "dump-files", 0, "with --dump-size: keep at most this many files, overwriting the oldest (F0..F(N-1))")
}

// rotatingDump is a dataplane.Dumper that keeps to the limits. Safe for
// concurrent use; Dump allocates only when it opens the next file.
type rotatingDump struct {
	base   string
	ifaces []string
	filter pcapdump.Filter
	lim    dumpLimits

	mu     sync.Mutex
	w      *pcapdump.Writer // the current file; guarded by mu
	index  int              // files opened; guarded by mu
	bytes  uint64           // bytes in the current file, as pcapng counts them; guarded by mu
	frames uint64           // frames recorded in all; guarded by mu
	err    error            // the first failure to open or close a file; guarded by mu
}

// newRotatingDump opens the first file.
func newRotatingDump(base string, ifaces []string, filter pcapdump.Filter, lim dumpLimits) (*rotatingDump, error) {
	if lim.files < 0 || (lim.files > 0 && lim.size == 0) {
		return nil, usageErrorf("--dump-files wants --dump-size and a positive number of files")
	}
	d := &rotatingDump{base: base, ifaces: ifaces, filter: filter, lim: lim}
	w, err := pcapdump.Create(d.fileName(0), ifaces, filter)
	if err != nil {
		return nil, err
	}
	d.w, d.index = w, 1
	return d, nil
}

// fileName is the name of file i: the base itself, then base1, base2, ...
// before the extension; with a ring of W files base0 .. base(W-1).
func (d *rotatingDump) fileName(i int) string {
	if d.lim.files > 0 {
		return insertIndex(d.base, i%d.lim.files)
	}
	if i == 0 {
		return d.base
	}
	return insertIndex(d.base, i)
}

// insertIndex puts n before a .pcapng or .pcap extension.
func insertIndex(base string, n int) string {
	for _, ext := range []string{".pcapng", ".pcap"} {
		if len(base) > len(ext) && base[len(base)-len(ext):] == ext {
			return fmt.Sprintf("%s%d%s", base[:len(base)-len(ext)], n, ext)
		}
	}
	return fmt.Sprintf("%s%d", base, n)
}

// Want reports whether frames with verdict a are recorded.
func (d *rotatingDump) Want(a bpf.Action) bool {
	return a <= bpf.ActionRedirect && d.filter&(1<<a) != 0
}

// epbBytes is the size of the Enhanced Packet Block pcapdump writes for a
// frame (pcapng 4.3: 28-byte header, padded data, the verdict comment
// option of at most 24 bytes, end of options, trailing length).
func epbBytes(n int) uint64 {
	return uint64(28 + (min(n, pcapdump.SnapLen)+3)&^3 + 4 + 24 + 4 + 4)
}

// Dump records frame unless the count is reached, first moving to the next
// file when this one is full.
func (d *rotatingDump) Dump(port, queue int, a bpf.Action, frame []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w == nil || (d.lim.count > 0 && d.frames >= d.lim.count) {
		return
	}
	n := epbBytes(len(frame))
	if d.lim.size > 0 && d.bytes > 0 && d.bytes+n > d.lim.size {
		if !d.rotateLocked() {
			return
		}
	}
	d.w.Dump(port, queue, a, frame)
	d.bytes += n
	d.frames++
}

func (d *rotatingDump) rotateLocked() bool {
	if err := d.w.Close(); err != nil && d.err == nil {
		d.err = err
	}
	w, err := pcapdump.Create(d.fileName(d.index), d.ifaces, d.filter)
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		d.w = nil
		return false
	}
	d.w, d.bytes = w, 0
	d.index++
	return true
}

// Close closes the current file and reports the first error of the dump.
func (d *rotatingDump) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	if d.w != nil {
		err = d.w.Close()
		d.w = nil
	}
	return errors.Join(d.err, err)
}
