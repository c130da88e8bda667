package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// perfSink takes the records programs write with bpf_perf_event_output:
// every perf event array of the object gets a reader; records are printed
// (one line each: map, CPU, the data in hex, and the frame bytes the
// program appended) and, with --perf-pcap, the appended frame bytes are
// written to a pcapng file, as xdpdump captures.
type perfSink struct {
	names   []string
	readers []*maps.PerfReader
	text    io.Writer
	file    *os.File
	buf     *bufio.Writer
	pcap    *pcapgo.NgWriter
}

// perfRingBytes is each CPU slot's ring: room for a burst of samples.
const perfRingBytes = 1 << 20

func openPerfSink(c *bpf.Collection, text io.Writer, pcapPath string) (*perfSink, error) {
	s := &perfSink{text: text}
	all := c.Maps()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pa, ok := all[n].(*maps.PerfEventArray)
		if !ok {
			continue
		}
		rd, err := maps.NewPerfReader(pa, perfRingBytes)
		if err != nil {
			return nil, fmt.Errorf("perf event array %s: %w", n, err)
		}
		s.names = append(s.names, n)
		s.readers = append(s.readers, rd)
	}
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
// index (negative: not known), ts the capture time to record.
func (s *perfSink) drain(frame int, ts time.Time) error {
	for i, rd := range s.readers {
		for {
			rec, ok := rd.Poll()
			if !ok {
				break
			}
			if rec.RawSample == nil {
				fmt.Fprintf(s.text, "perf %s cpu %d: %d samples lost (ring full)\n", s.names[i], rec.CPU, rec.LostSamples)
				continue
			}
			data := rec.RawSample[:rec.FrameOffset]
			pkt := rec.RawSample[rec.FrameOffset : rec.FrameOffset+rec.FrameLen]
			where := ""
			if frame >= 0 {
				where = fmt.Sprintf(" frame %d", frame)
			}
			fmt.Fprintf(s.text, "perf %s cpu %d%s: data %s", s.names[i], rec.CPU, where, hex.EncodeToString(data))
			if len(pkt) > 0 {
				fmt.Fprintf(s.text, " + %d frame bytes", len(pkt))
			}
			fmt.Fprintln(s.text)
			if s.pcap != nil && len(pkt) > 0 {
				ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(pkt), Length: len(pkt)}
				if err := s.pcap.WritePacket(ci, pkt); err != nil {
					return err
				}
			}
		}
	}
	return nil
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
