package guestproto

// ResultsTTY is the serial port (QEMU's second -serial) that carries only
// /init's lines, so kernel messages on the console cannot split them. /init
// prints the same lines on the console too, for people.
const ResultsTTY = "/dev/ttyS1"

// ConfigPath is where the host puts the Config (JSON) in the initramfs.
const ConfigPath = "/vmtest.json"

// Prefix starts every line /init prints for the host.
const Prefix = "@@xnic "

// SmokeBinary is the name under which /init reports its own checks.
const SmokeBinary = "guestinit"

// Module is one kernel module to load, in order.
type Module struct {
	Path   string `json:"path"`   // in the initramfs
	Params string `json:"params"` // module parameters ("" for none)
}

// Test is one test binary to run.
type Test struct {
	Name string   `json:"name"` // e.g. "igb"
	Path string   `json:"path"` // in the initramfs
	Args []string `json:"args"` // e.g. -test.v -test.timeout=3m
	// TimeoutSec bounds the run; /init kills the binary after it.
	TimeoutSec int `json:"timeout_sec"`
}

// Config tells /init what to do.
type Config struct {
	Modules []Module `json:"modules"`
	// Vendor and Device select the NIC to bind to vfio-pci (first match).
	// Both zero: no PCI device (a platform guest, e.g. the arm64 imx8mp-evk
	// whose MAC the tests reach through /dev/mem); /init then binds nothing,
	// skips its VFIO smoke checks and just runs the tests.
	Vendor uint16 `json:"vendor"`
	Device uint16 `json:"device"`
	// ResultsTTY replaces the default ResultsTTY (another machine's UARTs
	// have other names: ttymxc2 on the i.MX8M Plus).
	ResultsTTY string `json:"results_tty,omitempty"`
	// MAC is the address QEMU gave the NIC; the smoke check reads it back from
	// the device's receive-address registers through VFIO.
	MAC string `json:"mac"`
	// Env is added to every test binary's environment. /init adds
	// XNIC_VFIO_BDF and XNIC_IGB_BDF with the bound device's address.
	Env   map[string]string `json:"env"`
	Tests []Test            `json:"tests"`
	// DmesgLines is how many lines of kernel log to print at the end.
	DmesgLines int `json:"dmesg_lines"`
}
