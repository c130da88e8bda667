package vmtest

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// PcapCount counts the packets in a classic pcap file (as QEMU's filter-dump
// writes) and returns the largest captured length.
func PcapCount(path string) (packets, maxLen int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var gh [24]byte
	if _, err := io.ReadFull(f, gh[:]); err != nil {
		return 0, 0, fmt.Errorf("pcap %s: header: %w", path, err)
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(gh[:]) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return 0, 0, fmt.Errorf("pcap %s: bad magic % x", path, gh[:4])
	}
	var rh [16]byte
	for {
		if _, err := io.ReadFull(f, rh[:]); err != nil {
			if err == io.EOF {
				return packets, maxLen, nil
			}
			return packets, maxLen, fmt.Errorf("pcap %s: record %d: %w", path, packets, err)
		}
		n := int(bo.Uint32(rh[8:]))
		if n > 1<<18 {
			return packets, maxLen, fmt.Errorf("pcap %s: record %d claims %d bytes", path, packets, n)
		}
		if _, err := io.CopyN(io.Discard, f, int64(n)); err != nil {
			return packets, maxLen, fmt.Errorf("pcap %s: record %d truncated: %w", path, packets, err)
		}
		packets++
		maxLen = max(maxLen, n)
	}
}
