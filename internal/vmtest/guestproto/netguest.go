package guestproto

// The guest tier that runs Linux's own drivers (internal/vmtest/netinit as
// /init) reads these from Config.Env.
const (
	// NetBinary is the name under which netinit reports its checks.
	NetBinary = "linux"
	// EnvNetMode selects netinit's plan: "" runs the Linux driver checks;
	// "vfio" binds the device to vfio-pci and runs Config.Tests against it
	// (with XNIC_VFIO_BDF and XNIC_DWMAC_BDF set), as guestinit does for igb.
	EnvNetMode = "XNIC_NET_MODE"
	// EnvNetDriver is the PCI driver that must bind the device, as
	// /sys/bus/pci/devices/X/driver names it ("intel-eth-pci", "igb").
	EnvNetDriver = "XNIC_NET_DRIVER"
	// EnvNetAddr is the guest's IPv4 address with prefix ("10.0.2.15/24").
	EnvNetAddr = "XNIC_NET_ADDR"
	// EnvNetPeerIP is the host peer's IPv4 address, which answers ARP and ICMP
	// echo and pings the guest.
	EnvNetPeerIP = "XNIC_NET_PEER_IP"
	// EnvNetFrames is how many frames of random sizes go each way.
	EnvNetFrames = "XNIC_NET_FRAMES"
	// EnvNetSeed seeds the two frame streams (the second uses seed+1).
	EnvNetSeed = "XNIC_NET_SEED"
	// EnvNetEthtool is the path of an ethtool binary in the guest; when set,
	// netinit runs TestEthtool with it (-i, -S, -g/-G, -c/-C, -k, -s).
	EnvNetEthtool = "XNIC_NET_ETHTOOL"
	// EnvNetModule names the driver's module; when set, netinit unloads and
	// reloads it after the statistics (TestReload) and prints a second
	// StatsLine for the reloaded driver's interface.
	EnvNetModule = "XNIC_NET_MODULE"
	// NetPings is how many ICMP echo requests each side sends the other.
	NetPings = 5
	// StatsLine starts netinit's line with the interface's statistics:
	// "netstats rx_packets=N tx_packets=N ...": one per driver instance
	// (TestStats, and TestReload's after the module came back), to be summed.
	StatsLine = "netstats"
)
