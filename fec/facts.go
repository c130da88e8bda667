package fec

import "github.com/xnic-dev/xnic/nic"

// Facts are the register facts of the ENET for bring-up tools. The pattern
// test uses FTRL (TRUNC_FL 13:0) and OPD (PAUSE_DUR 15:0) of the i.MX
// reference manuals' ENET chapter. MAC loopback is RCR.LOOP (bit 0).
func Facts() nic.RegFacts {
	return nic.RegFacts{
		Patterns: []nic.RegPattern{{Reg: "FTRL", Mask: 0x00003FFF}, {Reg: "OPD", Mask: 0x0000FFFF}},
		Loopback: nic.RegField{Reg: "RCR", Mask: 1, On: 1},
	}
}
