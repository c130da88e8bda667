package dwmac_test

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
)

// Open brings a port up; here on the model of an Alder Lake-S mGbE.
func ExampleOpen() {
	m, err := dwmacsim.New(dwmacsim.Config{AutonegDelay: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	p, err := dwmac.Open(m.Device(), dwmac.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := p.WaitLink(time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Model().Name)
	fmt.Println("core", p.HW().VersionString(), "DMA bits", p.AddrBits(), "link", l.SpeedMbps, l.FullDuplex)
	// Output:
	// Alder Lake-S mGbE 0 (SGMII, 1G)
	// core 5.20 DMA bits 40 link 1000 true
}
