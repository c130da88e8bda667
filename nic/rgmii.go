package nic

// The RGMII transmit clock. On RGMII the MAC sends TXC with the data, and
// its rate follows the link speed: 125 MHz at 1000 Mb/s, 25 MHz at 100, 2.5
// MHz at 10 (RGMII v2.0, "TXC"; Linux include/linux/phy.h rgmii_clock, which
// dwmac-imx.c imx_dwmac_fix_speed sets its "tx" clock to at each link
// change). RMII and MII are not clocked this way: the 50 MHz RMII reference
// clock and the PHY's MII TX clock do not change with the speed. One table
// for the driver, the model and the preflight that must agree on it.

// rgmiiTxClocks is the table, fastest first.
var rgmiiTxClocks = [...]struct {
	mbps int
	hz   uint64
}{{1000, 125_000_000}, {100, 25_000_000}, {10, 2_500_000}}

// RGMIITxClockHz is the RGMII TX clock for a link speed in Mb/s; ok is
// false for a speed RGMII does not run (2500 and up, or 0).
func RGMIITxClockHz(mbps int) (hz uint64, ok bool) {
	for _, c := range rgmiiTxClocks {
		if c.mbps == mbps {
			return c.hz, true
		}
	}
	return 0, false
}

// RGMIISpeedAt is the link speed a TX clock at hz serves; ok is false when
// hz is none of the table's rates.
func RGMIISpeedAt(hz uint64) (mbps int, ok bool) {
	for _, c := range rgmiiTxClocks {
		if c.hz == hz {
			return c.mbps, true
		}
	}
	return 0, false
}

// RGMIISpeeds lists the speeds the table knows, fastest first.
func RGMIISpeeds() []int {
	out := make([]int, len(rgmiiTxClocks))
	for i, c := range rgmiiTxClocks {
		out[i] = c.mbps
	}
	return out
}
