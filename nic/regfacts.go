package nic

// RegFacts are what a family's datasheet says of the registers of its dump
// (RegDump names) that bring-up tools need: which ones software must not
// write, which bits a register pattern test may write and read back, and
// which field turns MAC loopback on. Each driver gives its own (Facts in
// igb, dwmac, fec); tools (xnic reg, xnic selftest) read them and know no
// family.
type RegFacts struct {
	// ReadOnly names the read-only registers of the dump, each with the
	// source that says so; a write to one is refused unless forced.
	ReadOnly map[string]string
	// Patterns are registers whose bits in Mask are plain read/write
	// storage that no hardware function depends on while a self-test runs
	// (address filters, moderation intervals); the test restores them.
	Patterns []RegPattern
	// Loopback is the MAC loopback control: Reg's bits in Mask set to On.
	Loopback RegField
}

// RegPattern is one register of a pattern test and its read/write bits.
type RegPattern struct {
	Reg  string
	Mask uint32
}

// RegField is a field of a register: the bits Mask of Reg, and the value On
// (within Mask) that turns its function on.
type RegField struct {
	Reg  string
	Mask uint32
	On   uint32
}
