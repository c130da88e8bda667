// Package preflight decides whether xnic may touch a NIC's registers, before
// it maps any, and does the user-space part of taking a platform MAC from
// the kernel. `xnic doctor` prints its reports; the CLI's platform open path
// runs Platform.Open through physmem.DeviceConfig.Preflight, so every command
// on a platform MAC is checked first.
//
// Why a platform MAC needs it: on an i.MX SoC a register access while the
// MAC's bus clock gate is off does not complete; the SoC hangs (Linux commit
// 6a4d7234ae9a, "net: fec: ptp: avoid register access when ipg clock is
// disabled"). The kernel leaves the MAC that way: fec's runtime suspend and
// fec_drv_remove turn off ipg and ahb (fec_main.c), the boot-time sweep
// (clk_disable_unused) gates every clock no driver holds, and phy_detach
// asserts the PHY's reset-gpios on every close (phy_device.c). fec has no
// unbind file (suppress_bind_attrs), and with CONFIG_IO_STRICT_DEVMEM (Debian)
// /dev/mem refuses a range a driver claims and revoke_iomem unmaps earlier
// mappings when one claims it (kernel/resource.c). The method that works on
// a stock kernel is a DTB whose MAC node has compatible "simple-pm-bus":
// that driver enables every clock of the node on runtime resume
// (drivers/bus/simple-pm-bus.c) and claims no registers; power/control=on
// keeps it resumed. On NXP's BSP kernels, NXP's fec-uio driver does the same.
//
// Platform (platform.go) reads, under Root ("/" on a board), exactly the
// files Linux keeps: /sys/bus/platform/devices/NAME/{driver,of_node,power/
// runtime_status,power/control}, /proc/iomem, /sys/firmware/devicetree/base,
// /sys/kernel/debug/clk/CLOCK/clk_enable_count (names per SoC in soc.go, from
// Linux's clk-imx8mp.c, clk-imx8mm.c, clk-imx8mn.c, clk-imx6ul.c,
// clk-imx7d.c), the PHY's reset line (phy-handle, reset-gpios, the gpiochip
// of that controller; its state through the GPIO character device, GPIO in
// gpio.go, with RealGPIO the kernel's v2 ioctls), the node's phy-supply
// regulator in /sys/class/regulator (fec_drv_remove disables it; nothing
// enables it under simple-pm-bus), /sys/kernel/security/
// lockdown, /boot/config-RELEASE (IO_STRICT_DEVMEM), /proc/cmdline and the
// huge page pool. Inspect only reads; what Open fixes itself (power/control
// under simple-pm-bus, a free PHY reset line) passes with a note. Open refuses
// on any Fail, then sets power/control=on, releases the PHY's reset line and holds it, writes the
// EQOS interface mode into IOMUXC_GPR1 as dwmac-imx does, and checks again;
// the Held it returns gives the line and power/control back on Close.
// Held also tells the dwmac driver the EQOS's phy-mode and its TX clock's
// rate, and writes the rate where debugfs clk_rate is writable; the
// "tx-clock" check reports the speeds that rate serves by the same rule
// (txclock.go).
//
// PCI (pci.go) reports a PCI function from vfio's sysfs reader: its IOMMU
// group and whether the group is viable, vfio-pci bound, the driver `xnic
// bind` took it from, the MSI-X capability and Bus Master Enable from its
// config file.
//
// A Report is a list of Checks, each Pass, Fail (with the fix) or Unknown
// (with why; it does not refuse). Package preflighttest builds fake boards in
// Linux's layout for tests.
package preflight
