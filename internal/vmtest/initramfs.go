package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/u-root/u-root/pkg/cpio"
)

// InitramfsFile is one file to put into the initramfs.
type InitramfsFile struct {
	Name string // path inside, without leading slash ("init", "tests/igb.test")
	Src  string // host file to copy; empty to use Data
	Data []byte
	Mode uint64 // permission bits
}

// WriteInitramfs writes an uncompressed cpio (newc) archive with the device
// nodes the kernel needs before /init mounts devtmpfs (/dev/console, /dev/null),
// the mount points /init uses, and files. The kernel unpacks uncompressed
// archives directly, which is faster under TCG than inflating one.
func WriteInitramfs(w io.Writer, files []InitramfsFile) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rw := cpio.NewDedupWriter(cpio.Newc.Writer(bw))
	base := []cpio.Record{
		cpio.Directory("dev", 0o755),
		cpio.CharDev("dev/console", 0o600, 5, 1),
		cpio.CharDev("dev/null", 0o666, 1, 3),
	}
	for _, d := range []string{"proc", "sys", "tmp", "run", "bin"} {
		base = append(base, cpio.Directory(d, 0o755))
	}
	if err := cpio.WriteRecords(rw, base); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	var recs []cpio.Record
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for _, f := range files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if f.Src == "" {
			recs = append(recs, cpio.StaticRecord(f.Data, cpio.Info{Name: f.Name, Mode: cpio.S_IFREG | mode}))
			continue
		}
		h, err := os.Open(f.Src)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		open = append(open, h)
		st, err := h.Stat()
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		recs = append(recs, cpio.Record{ReaderAt: h, Info: cpio.Info{
			Name: f.Name, Mode: cpio.S_IFREG | mode, FileSize: uint64(st.Size()), NLink: 1}})
	}
	if err := cpio.WriteRecordsAndDirs(rw, recs); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return bw.Flush()
}
