package preflight

// Clock is one clock of a MAC's devicetree node: the name the node gives it
// (clock-names) and the name the kernel's clock framework gives it, which is
// its directory under /sys/kernel/debug/clk.
type Clock struct {
	Con     string // clock-names entry ("ipg")
	Debugfs string // clk_hw name ("enet1_root_clk")
	// Bus marks a gate between the CPU and the MAC's registers: with it off,
	// a register access does not complete (Linux commit 6a4d7234ae9a, "net:
	// fec: ptp: avoid register access when ipg clock is disabled": the
	// kernel hangs). The others only stop the MAC's traffic or its timer.
	Bus bool
}

// MAC is one Ethernet MAC of an SoC that xnic drives through /dev/mem.
type MAC struct {
	SoC  string // "i.MX8M Plus"
	Kind string // "fec" or "eqos"
	Phys uint64 // register window ("reg" of the node)
	// Kernel is the Linux driver that binds the stock node: "fec" (fec_main.c
	// sets suppress_bind_attrs, so it has no unbind file) or "imx-dwmac"
	// (dwmac-imx.c, which has one).
	Kernel string
	Clocks []Clock
	// DMALimit is the exclusive upper bound of what the MAC reaches: 4 GiB
	// for the FEC's 32-bit buffer descriptors, 2^34 for the i.MX8M Plus EQOS
	// (dwmac-imx.c imx8mp_dwmac_data.addr_width = 34).
	DMALimit uint64
}

// The SoCs by the devicetree compatible of the machine's root node. Clock
// names are those of Linux's clock drivers, for the clocks the SoC's dtsi
// gives each MAC node:
//
//   - i.MX8M Plus (drivers/clk/imx/clk-imx8mp.c, imx8mp.dtsi): FEC ipg =
//     enet1_root_clk (CCGR10 gate, parent enet_axi), ahb = sim_enet_root_clk
//     (CCGR64 gate, also the parent of the EQOS's enet_qos_root_clk), ptp =
//     enet_timer, enet_clk_ref = enet_ref, enet_out = enet_phy_ref; EQOS
//     stmmaceth = enet_qos_root_clk (CCGR59), pclk = qos_enet_root_clk
//     (CCGR46), ptp_ref = enet_qos_timer, tx = enet_qos.
//   - i.MX8M Mini and Nano (clk-imx8mm.c, clk-imx8mn.c): the FEC's ipg and
//     ahb are both enet1_root_clk; ptp = enet_timer, enet_clk_ref = enet_ref,
//     enet_out = enet_phy.
//   - i.MX6UL/ULL (clk-imx6ul.c, imx6ul.dtsi): ipg = enet, ahb = enet_ahb,
//     ptp = enet_ptp.
//   - i.MX7D (clk-imx7d.c, imx7s.dtsi): ipg = enet1_ipg_root_clk (ENET2:
//     enet2_ipg_root_clk), ahb = enet_axi_root_clk, ptp = enet1_time_root_clk.
var socs = []struct {
	compatible string
	macs       []MAC
}{
	{"fsl,imx8mp", []MAC{
		{SoC: "i.MX8M Plus", Kind: "fec", Phys: 0x30be0000, Kernel: "fec", DMALimit: 1 << 32, Clocks: []Clock{
			{"ipg", "enet1_root_clk", true}, {"ahb", "sim_enet_root_clk", true},
			{"ptp", "enet_timer", false}, {"enet_clk_ref", "enet_ref", false}, {"enet_out", "enet_phy_ref", false}}},
		{SoC: "i.MX8M Plus", Kind: "eqos", Phys: 0x30bf0000, Kernel: "imx-dwmac", DMALimit: 1 << 34, Clocks: []Clock{
			{"stmmaceth", "enet_qos_root_clk", true}, {"pclk", "qos_enet_root_clk", true},
			{"ptp_ref", "enet_qos_timer", false}, {"tx", "enet_qos", false}}},
	}},
	{"fsl,imx8mm", []MAC{imx8mFEC("i.MX8M Mini")}},
	{"fsl,imx8mn", []MAC{imx8mFEC("i.MX8M Nano")}},
	{"fsl,imx6ul", imx6ulFECs("i.MX6UL")},
	{"fsl,imx6ull", imx6ulFECs("i.MX6ULL")},
	{"fsl,imx7d", []MAC{imx7dFEC(0x30be0000, "enet1"), imx7dFEC(0x30bf0000, "enet2")}},
}

func imx8mFEC(soc string) MAC {
	return MAC{SoC: soc, Kind: "fec", Phys: 0x30be0000, Kernel: "fec", DMALimit: 1 << 32, Clocks: []Clock{
		{"ipg", "enet1_root_clk", true}, {"ahb", "enet1_root_clk", true},
		{"ptp", "enet_timer", false}, {"enet_clk_ref", "enet_ref", false}, {"enet_out", "enet_phy", false}}}
}

func imx6ulFECs(soc string) []MAC {
	clocks := []Clock{{"ipg", "enet", true}, {"ahb", "enet_ahb", true}, {"ptp", "enet_ptp", false}}
	return []MAC{
		{SoC: soc, Kind: "fec", Phys: 0x02188000, Kernel: "fec", DMALimit: 1 << 32, Clocks: clocks},
		{SoC: soc, Kind: "fec", Phys: 0x020b4000, Kernel: "fec", DMALimit: 1 << 32, Clocks: clocks},
	}
}

func imx7dFEC(phys uint64, enet string) MAC {
	return MAC{SoC: "i.MX7D", Kind: "fec", Phys: phys, Kernel: "fec", DMALimit: 1 << 32, Clocks: []Clock{
		{"ipg", enet + "_ipg_root_clk", true}, {"ahb", "enet_axi_root_clk", true}, {"ptp", enet + "_time_root_clk", false}}}
}

// LookupMAC finds the MAC at phys on the machine whose root node lists
// machineCompat (the devicetree's /compatible strings, most specific first).
func LookupMAC(machineCompat []string, phys uint64) (MAC, bool) {
	for _, c := range machineCompat {
		for _, s := range socs {
			if c != s.compatible {
				continue
			}
			for _, m := range s.macs {
				if m.Phys == phys {
					return m, true
				}
			}
		}
	}
	return MAC{}, false
}

// Kernel drivers that may hold a MAC node, and what each means for xnic.
const (
	drvFEC         = "fec"
	drvDWMAC       = "imx-dwmac"
	drvSimplePMBus = "simple-pm-bus"
	drvFECUIO      = "fec-uio" // NXP's BSP (fec_uio.c), what DPDK's enetfec uses
	compatPMBus    = "simple-pm-bus"
	eqosGPR1       = 0x30340004 // IOMUXC_GPR1 (imx8mp.dtsi gpr: syscon@30340000; dwmac-imx intf_mode offset 0x4)
	consumerName   = "xnic"
)
