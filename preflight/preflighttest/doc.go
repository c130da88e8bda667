// Package preflighttest builds fake i.MX boards for tests of package
// preflight and its users: a directory laid out as Linux lays out /sys, /proc,
// /dev and /boot for a platform MAC (the device's driver link, of_node,
// power/runtime_status and power/control, /proc/iomem, the devicetree under
// /sys/firmware/devicetree/base, /sys/kernel/debug/clk/NAME/clk_enable_count,
// /sys/kernel/security/lockdown, the gpiochips), a fake kernel that reacts to
// writes as Linux does (power/control=on resumes a simple-pm-bus device and
// enables the node's clocks), and a fake GPIO character device. A Board moves
// between the states a real board passes through: the stock DTB with fec
// bound (interface up or down), fec removed, the node handed to simple-pm-bus.
package preflighttest
