package dwmacsim_test

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
)

// A driver's first steps against the model: identify the core, read the
// firmware's MAC address before the DMA software reset clears it, reset.
func Example() {
	m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	dev := m.Device()
	regs, _ := dev.Regs(0)
	fmt.Printf("%s %s, core %x\n", dev.Info().Bus, dev.Info().Compatible, regs.Read32(0x110)&0xff)
	hi, lo := regs.Read32(0x300), regs.Read32(0x304)
	fmt.Printf("MAC %02x:%02x:%02x:%02x:%02x:%02x\n", byte(lo), byte(lo>>8), byte(lo>>16), byte(lo>>24), byte(hi), byte(hi>>8))
	regs.Write32(0x1000, 1) // DMA_Mode.SWR
	deadline := time.Now().Add(time.Second)
	for regs.Read32(0x1000)&1 != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	fmt.Printf("after reset: SWR %d, MAC_Address0_Low %08x, faults: %v\n", regs.Read32(0x1000)&1, regs.Read32(0x304), m.Err())
	// Output:
	// platform nxp,imx8mp-dwmac-eqos, core 51
	// MAC 02:00:00:00:00:01
	// after reset: SWR 0, MAC_Address0_Low ffffffff, faults: <nil>
}
