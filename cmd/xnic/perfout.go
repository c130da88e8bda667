package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/events"
)

// perfSink takes what programs send to user space (package events): ring
// buffer records and perf samples are printed, one line each (map, the
// record decoded by its BTF type or its bytes in hex, the frame bytes the
// program appended), handed to tee when set (followers of `xnic prog
// events`), and, with --perf-pcap, the frame bytes of perf samples are
// written to a pcapng file, as xdpdump captures.
type perfSink struct {
	r    *events.Reader
	text io.Writer
	tee  func(*events.Event) // nil: none
	file *os.File
	buf  *bufio.Writer
	pcap *pcapgo.NgWriter
}

func openPerfSink(c *bpf.Collection, types *btf.Spec, text io.Writer, pcapPath string) (*perfSink, error) {
	r, err := events.NewReader(c, types)
	if err != nil {
		return nil, err
	}
	s := &perfSink{r: r, text: text}
	if pcapPath == "" {
		return s, nil
	}
	f, err := os.Create(pcapPath)
	if err != nil {
		return nil, err
	}
	s.file, s.buf = f, bufio.NewWriter(f)
	if s.pcap, err = pcapgo.NewNgWriter(s.buf, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", pcapPath, err)
	}
	return s, nil
}

// drain prints and captures every waiting record; frame is the input frame's
// index (negative: not known), ts the capture time to record. It returns how
// many records it took.
func (s *perfSink) drain(frame int, ts time.Time) (int, error) {
	var werr error
	n, err := s.r.Drain(func(e *events.Event) {
		line := e.String()
		if frame >= 0 {
			line = strings.Replace(line, ": ", fmt.Sprintf(" frame %d: ", frame), 1)
		}
		fmt.Fprintln(s.text, line)
		if s.tee != nil {
			s.tee(e)
		}
		if s.pcap != nil && len(e.Frame) > 0 && werr == nil {
			ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(e.Frame), Length: len(e.Frame)}
			werr = s.pcap.WritePacket(ci, e.Frame)
		}
	})
	if err == nil {
		err = werr
	}
	return n, err
}

func (s *perfSink) close() error {
	if s.pcap == nil {
		return nil
	}
	if err := s.pcap.Flush(); err != nil {
		s.file.Close()
		return err
	}
	if err := s.buf.Flush(); err != nil {
		s.file.Close()
		return err
	}
	return s.file.Close()
}
