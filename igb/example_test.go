package igb_test

import (
	"fmt"

	"github.com/xnic-dev/xnic/igb"
)

func ExampleLookup() {
	for _, dev := range []uint16{0x10C9, 0x1521, 0x1533, 0x1539, 0x100E} {
		m, ok := igb.Lookup(igb.VendorIntel, dev)
		if !ok {
			fmt.Printf("%04x: not an igb device\n", dev)
			continue
		}
		fmt.Printf("%04x: %s, %d queues\n", dev, m.MAC, m.Queues)
	}
	// Output:
	// 10c9: 82576, 16 queues
	// 1521: I350, 8 queues
	// 1533: I210, 4 queues
	// 1539: I211, 2 queues
	// 100e: not an igb device
}
