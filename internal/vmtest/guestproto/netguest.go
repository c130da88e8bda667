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
	// EnvNetDevices, when set, is a JSON list of NetDevice: netinit runs its
	// checks on each device in turn in one boot (the drivers' modules loaded
	// once), instead of the one Config and the variables above describe.
	EnvNetDevices = "XNIC_NET_DEVICES"
	// NetPings is how many ICMP echo requests each side sends the other.
	NetPings = 5
	// NetTCPPort is where the host peer's TCP sink listens (NetDevice.TCPBytes).
	NetTCPPort = 5001
	// NetUDPPort is the host peer's UDP sink: with NetDevice.TSO the guest
	// sends it NetUDPGSOBytes in datagrams of NetUDPSegment bytes with
	// UDP_SEGMENT (TestUDPGSO).
	NetUDPPort     = 5002
	NetUDPSegment  = 1200
	NetUDPGSOBytes = 240_000
	// StatsLine starts netinit's line with the interface's statistics:
	// "netstats rx_packets=N tx_packets=N ...": one per driver instance
	// (TestStats, and TestReload's after the module came back), to be summed.
	StatsLine = "netstats"
)

// NetDevice is one device of EnvNetDevices. netinit reports its checks under
// NetBinary + "-" + Name and its statistics on StatsLine + "-" + Name lines.
type NetDevice struct {
	Name   string `json:"name"`
	Vendor uint16 `json:"vendor"`
	Device uint16 `json:"device"`
	MAC    string `json:"mac"`     // the device's address: how netinit finds its interface
	Driver string `json:"driver"`  // as EnvNetDriver
	Module string `json:"module"`  // as EnvNetModule
	Addr   string `json:"addr"`    // as EnvNetAddr; each device on its own subnet
	PeerIP string `json:"peer_ip"` // as EnvNetPeerIP
	Frames int    `json:"frames"`
	Seed   int64  `json:"seed"`
	// TCPBytes, when not 0, is the length of a TCP stream netinit sends the
	// peer's sink (NetTCPPort) after the frame streams (TestTCPStream):
	// through the driver's TSO where it has it. Byte i is NetTCPByte(i).
	TCPBytes int `json:"tcp_bytes,omitempty"`
	// TSO: the driver must offer TCP segmentation offload for the stream
	// (ethtool -k, where the guest has an ethtool).
	TSO bool `json:"tso,omitempty"`
	// PHC asks for TestPHC: the PTP hardware clock the driver registers
	// for the device runs at the guest's clock rate.
	PHC bool `json:"phc,omitempty"`
}

// NetTCPByte is byte i of TestTCPStream's stream: a pattern that does not
// repeat within a segment or at a segment's distance.
func NetTCPByte(i uint64) byte { return byte(i ^ i>>8 ^ i>>16*3) }

// NetDeviceBinary is the binary name netinit reports device name's checks
// under ("" is the single device of the plain Config: NetBinary).
func NetDeviceBinary(name string) string {
	if name == "" {
		return NetBinary
	}
	return NetBinary + "-" + name
}

// NetDeviceStats is the first word of device name's statistics lines.
func NetDeviceStats(name string) string {
	if name == "" {
		return StatsLine
	}
	return StatsLine + "-" + name
}
