package vmtest

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket/pcapgo"
)

// PcapCount counts the packets in a classic pcap file (as QEMU's filter-dump
// writes) and returns the largest captured length.
func PcapCount(path string) (packets, maxLen int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return 0, 0, fmt.Errorf("pcap %s: %w", path, err)
	}
	for {
		data, _, err := r.ZeroCopyReadPacketData()
		if errors.Is(err, io.EOF) {
			return packets, maxLen, nil
		}
		if err != nil {
			return packets, maxLen, fmt.Errorf("pcap %s: record %d: %w", path, packets, err)
		}
		packets++
		maxLen = max(maxLen, len(data))
	}
}
