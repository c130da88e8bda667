package igb

import "fmt"

// MAC is the controller generation: it decides a few register layouts (IVAR)
// and how many queues exist.
type MAC uint8

const (
	MACUnknown MAC = iota
	MAC82576
	MACI350
	MACI210
	MACI211
)

func (m MAC) String() string {
	switch m {
	case MAC82576:
		return "82576"
	case MACI350:
		return "I350"
	case MACI210:
		return "I210"
	case MACI211:
		return "I211"
	}
	return fmt.Sprintf("MAC(%d)", uint8(m))
}

// Model describes one supported PCI device.
type Model struct {
	Device uint16 // PCI device ID (vendor 8086)
	MAC    MAC
	Name   string // marketing name with the variant
	Queues int    // RX and TX queues the MAC has
}

// VendorIntel is the PCI vendor of every supported device.
const VendorIntel = 0x8086

// models is the ID table (Linux e1000_hw.h E1000_DEV_ID_*). Virtual functions
// (82576 VF 10CA, I350 VF 1520) are not driven: they need the PF's mailbox.
var models = []Model{
	{0x10C9, MAC82576, "82576 Gigabit Network Connection", 16},
	{0x10E6, MAC82576, "82576 Gigabit Network Connection (fiber)", 16},
	{0x10E7, MAC82576, "82576 Gigabit Network Connection (SerDes)", 16},
	{0x10E8, MAC82576, "82576 Gigabit Network Connection (quad copper)", 16},
	{0x1526, MAC82576, "82576 Gigabit Network Connection (quad copper ET2)", 16},
	{0x150A, MAC82576, "82576NS Gigabit Network Connection", 16},
	{0x1518, MAC82576, "82576NS Gigabit Network Connection (SerDes)", 16},
	{0x150D, MAC82576, "82576 Gigabit Network Connection (SerDes quad)", 16},
	{0x1521, MACI350, "I350 Gigabit Network Connection (copper)", 8},
	{0x1522, MACI350, "I350 Gigabit Network Connection (fiber)", 8},
	{0x1523, MACI350, "I350 Gigabit Network Connection (backplane)", 8},
	{0x1524, MACI350, "I350 Gigabit Network Connection (SGMII)", 8},
	{0x1533, MACI210, "I210 Gigabit Network Connection (copper)", 4},
	{0x1536, MACI210, "I210 Gigabit Network Connection (fiber)", 4},
	{0x1537, MACI210, "I210 Gigabit Network Connection (SerDes)", 4},
	{0x1538, MACI210, "I210 Gigabit Network Connection (SGMII)", 4},
	{0x157B, MACI210, "I210 Gigabit Network Connection (copper, flashless)", 4},
	{0x157C, MACI210, "I210 Gigabit Network Connection (SerDes, flashless)", 4},
	{0x1539, MACI211, "I211 Gigabit Network Connection", 2},
}

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

// Models lists every supported device, for `xnic list` and documentation.
func Models() []Model { return append([]Model(nil), models...) }
