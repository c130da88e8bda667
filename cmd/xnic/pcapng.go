package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// pcapng input for prog run and prog bench: what `xnic run --dump` writes
// (one interface per port, each frame's verdict in a comment). A file
// starting with a Section Header Block (block type 0x0A0D0D0A, pcapng
// section 4.1) is read as pcapng; anything else goes to the pcap reader.

// readPcapng reads path when it is pcapng, reporting false when it is not.
// Every frame must come from an Ethernet interface.
func readPcapng(path string) ([]inputFrame, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, nil // the pcap reader reports it
	}
	defer f.Close()
	br := bufio.NewReader(f)
	magic, err := br.Peek(4)
	if err != nil || binary.LittleEndian.Uint32(magic) != 0x0A0D0D0A {
		return nil, false, nil
	}
	rd, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		return nil, true, fmt.Errorf("%s: not a readable pcapng file: %w", path, err)
	}
	var out []inputFrame
	for {
		data, ci, err := rd.ReadPacketData()
		if errors.Is(err, io.EOF) {
			if len(out) == 0 {
				return nil, true, fmt.Errorf("%s: no frames", path)
			}
			return out, true, nil
		}
		if err != nil {
			return nil, true, fmt.Errorf("%s: frame %d: %w", path, len(out), err)
		}
		if ifc, err := rd.Interface(ci.InterfaceIndex); err != nil || ifc.LinkType != layers.LinkTypeEthernet {
			return nil, true, fmt.Errorf("%s: frame %d is from interface %d, not Ethernet (%v); XDP programs need Ethernet frames", path, len(out), ci.InterfaceIndex, ifc.LinkType)
		}
		out = append(out, inputFrame{data: append([]byte(nil), data...), ci: ci})
	}
}
