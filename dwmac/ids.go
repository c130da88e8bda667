package dwmac

import (
	"fmt"
	"strings"
)

// Integration is how the DWC Ethernet QoS core is wired into the SoC: it decides
// the bus, the defaults the glue driver (dwmac-intel.c, dwmac-imx.c) sets, and the
// interrupt layout.
type Integration uint8

const (
	IntegrationUnknown Integration = iota
	// IntegrationIntel is Intel mGbE: the core behind a PCI function (BAR 0),
	// cache-coherent, with one MSI/MSI-X vector per DMA channel and direction.
	IntegrationIntel
	// IntegrationIMX8MP is the i.MX8M Plus EQOS: a platform device (memory
	// resource 0), not cache-coherent, 34-bit DMA, one interrupt line (macirq).
	IntegrationIMX8MP
)

func (i Integration) String() string {
	switch i {
	case IntegrationIntel:
		return "intel-mgbe"
	case IntegrationIMX8MP:
		return "imx8mp-eqos"
	}
	return fmt.Sprintf("Integration(%d)", uint8(i))
}

// Model describes one supported device.
type Model struct {
	Integration Integration
	Device      uint16 // PCI device ID (vendor 8086); 0 on platform devices
	Compatible  string // devicetree compatible string of platform devices
	Name        string
	// RxQueues and TxQueues are what the glue driver configures; the MAC's
	// HW_FEATURE2 clamps them further.
	RxQueues, TxQueues int
	// AddrBits is the DMA address width the integration allows (0: whatever
	// HW_FEATURE1.ADDR64 says).
	AddrBits int
	// CSRClockMHz is the clock of the CSR interface (MDC and 1US_TIC derive from
	// it).
	CSRClockMHz int
	// FIFOPerQueue is the MTL FIFO size per queue and direction the glue driver
	// uses (0: the MAC's FIFO split evenly).
	FIFOPerQueue int
	// PTPClockHz is the PTP reference clock the glue driver reports
	// (clk_ptp_rate; 0: unknown).
	PTPClockHz int
	// SerDes is who powers the SGMII SerDes (serdes.go); SerDesNone for
	// RGMII parts and the i.MX8MP.
	SerDes SerDes
}

// VendorIntel is the PCI vendor of the Intel mGbE functions.
const VendorIntel = 0x8086

// CompatibleIMX8MP is the devicetree compatible string of the i.MX8M Plus EQOS.
const CompatibleIMX8MP = "nxp,imx8mp-dwmac-eqos"

// Intel's glue (dwmac-intel.c) sets clk_csr 5 (a 250-300 MHz CSR clock), 4 KiB of
// FIFO per queue each way, and EHL 8/8, TGL and ADL 6 RX / 4 TX queues; its
// clk_ptp_rate is 204.8 MHz (ehl_sgmii_data, ehl_rgmii_data,
// tgl_common_data, adln_common_data) but 200 MHz on the Elkhart Lake PSE
// functions (ehl_pse0_common_data, ehl_pse1_common_data).
func intel(dev uint16, name string, rxq, txq int, sd SerDes) Model {
	ptp := 204_800_000
	if strings.Contains(name, "PSE") {
		ptp = 200_000_000
	}
	return Model{Integration: IntegrationIntel, Device: dev, Name: name, RxQueues: rxq, TxQueues: txq,
		CSRClockMHz: 250, FIFOPerQueue: 4096, PTPClockHz: ptp, SerDes: sd}
}

// models is the PCI ID table (dwmac-intel.c). Quark X1000 (8086:0937) is left
// out: it is a 3.x GMAC, not this core. Who powers the SerDes follows each
// ID's setup function: ehl_sgmii_data, ehl_pse*_sgmii1g_data and
// tgl_sgmii_phy*_data set serdes_powerup (ADL-N and RPL-P use
// tgl_sgmii1g_phy0_info); adls_sgmii_phy*_data leave it to the BIOS.
var models = []Model{
	intel(0x4b30, "Elkhart Lake mGbE (RGMII, 1G)", 8, 8, SerDesNone),
	intel(0x4b31, "Elkhart Lake mGbE (SGMII, 1G)", 8, 8, SerDesDriver),
	intel(0x4b32, "Elkhart Lake mGbE (SGMII, 2.5G)", 8, 8, SerDesDriver),
	intel(0x4ba0, "Elkhart Lake PSE mGbE 0 (RGMII, 1G)", 8, 8, SerDesNone),
	intel(0x4ba1, "Elkhart Lake PSE mGbE 0 (SGMII, 1G)", 8, 8, SerDesDriverPSE),
	intel(0x4ba2, "Elkhart Lake PSE mGbE 0 (SGMII, 2.5G)", 8, 8, SerDesDriverPSE),
	intel(0x4bb0, "Elkhart Lake PSE mGbE 1 (RGMII, 1G)", 8, 8, SerDesNone),
	intel(0x4bb1, "Elkhart Lake PSE mGbE 1 (SGMII, 1G)", 8, 8, SerDesDriverPSE),
	intel(0x4bb2, "Elkhart Lake PSE mGbE 1 (SGMII, 2.5G)", 8, 8, SerDesDriverPSE),
	intel(0xa0ac, "Tiger Lake mGbE (SGMII, 1G)", 6, 4, SerDesDriver),
	intel(0x43ac, "Tiger Lake-H mGbE 0 (SGMII, 1G)", 6, 4, SerDesDriver),
	intel(0x43a2, "Tiger Lake-H mGbE 1 (SGMII, 1G)", 6, 4, SerDesDriver),
	intel(0x7aac, "Alder Lake-S mGbE 0 (SGMII, 1G)", 6, 4, SerDesBIOS),
	intel(0x7aad, "Alder Lake-S mGbE 1 (SGMII, 1G)", 6, 4, SerDesBIOS),
	intel(0x54ac, "Alder Lake-N mGbE (SGMII, 1G)", 6, 4, SerDesDriver),
	intel(0x51ac, "Raptor Lake-P mGbE (SGMII, 1G)", 6, 4, SerDesDriver),
}

// imx8mp is the i.MX8M Plus EQOS (imx8mp.dtsi ethernet@30bf0000, dwmac-imx.c):
// five queues each way, 34-bit DMA, CSR clock from the 266 MHz ENET AXI root.
var imx8mp = Model{Integration: IntegrationIMX8MP, Compatible: CompatibleIMX8MP,
	Name: "i.MX8M Plus EQOS", RxQueues: 5, TxQueues: 5, AddrBits: 34, CSRClockMHz: 266,
	PTPClockHz: 100_000_000} // ENET_QOS_TIMER, assigned 100 MHz in imx8mp.dtsi

// Lookup finds the model of a PCI device, and reports whether this driver
// supports it.
func Lookup(vendor, device uint16) (Model, bool) {
	if vendor != VendorIntel {
		return Model{}, false
	}
	for _, m := range models {
		if m.Device == device {
			return m, true
		}
	}
	return Model{}, false
}

// LookupCompatible finds the model of a platform device by its devicetree
// compatible string.
func LookupCompatible(compatible string) (Model, bool) {
	if compatible == CompatibleIMX8MP {
		return imx8mp, true
	}
	return Model{}, false
}

// Models lists every supported device, for `xnic list` and documentation.
func Models() []Model { return append(append([]Model(nil), models...), imx8mp) }
