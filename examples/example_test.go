package examples_test

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/examples"
)

// Load an embedded example into xnic's interpreter and run it on one frame:
// the 64-byte UDP frame to port 9 of the speed reference is dropped.
func ExampleObject() {
	obj, err := examples.Object("xdp_reference")
	if err != nil {
		fmt.Println(err)
		return
	}
	coll, err := bpf.LoadBytes(obj, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, err := coll.Program("xdp_reference")
	if err != nil {
		fmt.Println(err)
		return
	}

	// A frame slot: 256 bytes of headroom, then Ethernet/IPv4/UDP.
	buf := make([]byte, 2048)
	frame := buf[256 : 256+64]
	binary.BigEndian.PutUint16(frame[12:], 0x0800) // IPv4
	frame[14] = 0x45                               // version 4, 20-byte header
	frame[23] = 17                                 // UDP
	binary.BigEndian.PutUint16(frame[36:], 9)      // destination port: discard

	r := bpf.NewRunner(0)
	f := bpf.Frame{Buf: buf, DataMeta: 256, Data: 256, DataEnd: 256 + 64, IngressIfindex: 1}
	fmt.Println(r.Run(prog, &f))
	binary.BigEndian.PutUint16(frame[36:], 53)
	fmt.Println(r.Run(prog, &f))
	// Output:
	// XDP_DROP
	// XDP_PASS
}
