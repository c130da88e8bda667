package fec_test

import (
	"fmt"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/physmem"
)

// Example_physmem wires the driver to a real i.MX8M Plus through the physical
// path: huge pages below 4 GiB for DMA, the ENET's registers from /dev/mem
// (unbind the kernel's fec driver first), polling. It needs root and
// hugepages=N; it is compiled, not run.
func Example_physmem() {
	alloc, err := physmem.NewAllocator(physmem.Config{Limit: 1 << 32})
	if err != nil {
		fmt.Println(err) // e.g. no huge pages reserved
		return
	}
	defer alloc.Close()
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name:       "30be0000.ethernet",
		Compatible: "fsl,imx8mp-fec",
		Windows:    []physmem.Window{{Phys: 0x30be0000, Size: 0x10000}},
		DMA:        alloc,
	})
	if err != nil {
		fmt.Println(err) // e.g. the kernel driver still owns the range
		return
	}
	defer dev.Close()
	port, err := fec.Open(dev, fec.Config{ModuleClockHz: 66_000_000, PHYAddr: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer port.Close()
	fmt.Println(port.MAC(), port.Link())
}
