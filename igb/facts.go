package igb

import "github.com/xnic-dev/xnic/nic"

// Facts are the register facts of the igb family for bring-up tools. None of
// the dump's registers is read-only (STATUS has PHYRA, which software
// clears). The pattern test uses address filter and moderation storage:
// 82576 datasheet 8.10.13/8.10.14 (RAL; RAH 15:0 address bits) and 8.8.12
// (EITR interval 14:2). MAC loopback is RCTL.LBM (7:6) = 01b (8.10.1; Linux
// E1000_RCTL_LBM_MAC).
func Facts() nic.RegFacts {
	return nic.RegFacts{
		Patterns: []nic.RegPattern{{Reg: "RAL0", Mask: 0xFFFFFFFF}, {Reg: "RAH0", Mask: 0x0000FFFF}, {Reg: "EITR0", Mask: 0x00007FFC}},
		Loopback: nic.RegField{Reg: "RCTL", Mask: 3 << 6, On: 1 << 6},
	}
}
