package fecsim_test

import (
	"fmt"

	"github.com/xnic-dev/xnic/fec/fecsim"
)

// A model is a platform device: no PCI configuration space, DMA below 4 GiB,
// and registers at their reset values.
func Example() {
	m, err := fecsim.New(fecsim.Config{Variant: fecsim.IMX8MP})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	dev := m.Device()
	info := dev.Info()
	fmt.Println(info.Bus, info.Compatible)
	_, err = dev.ReadConfig(0, 4)
	fmt.Println(err != nil)
	fmt.Printf("DMA limit %#x, rings %d\n", dev.DMA().Limit(), m.Rings())
	regs, _ := dev.Regs(0)
	fmt.Printf("ECR %#08x RCR %#08x\n", regs.Read32(0x024), regs.Read32(0x084))
	fmt.Println(m.Err())
	// Output:
	// platform fsl,imx8mp-fec
	// true
	// DMA limit 0x100000000, rings 3
	// ECR 0xf0000000 RCR 0x05ee0001
	// <nil>
}
