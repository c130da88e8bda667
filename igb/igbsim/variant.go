package igbsim

// Registers the 82580 generation added, which the I350 and the I210/I211 have
// and the 82576 does not (on the 82576 they stay unimplemented: an access is a
// fault), as Linux's igb touches them on those parts:
//
//   - PHPM, the PHY power management register (0x0E14; Linux
//     E1000_82580_PHY_POWER_MGMT; I350 and I210 datasheets "PHY Power
//     Management"): igb_set_d0_lplu_state_82580 and
//     igb_set_d3_lplu_state_82580 read it and write it back at every link
//     setup. SPD_EN (smart power down, bit 0) and the non-D0a LPLU bit
//     (bit 2) act only without link or out of D0, which the model never is
//     with traffic: stored. D0 LPLU (bit 1: link up at the lowest common
//     speed in D0) and GO_LINKD (bit 5: PHY to link disconnect) would change
//     the link on the wire, which the model's PHY does not do: refused.
//   - TSSDP, the time sync SDP configuration (0x003C; I350/I210 datasheets
//     "Time Sync SDP Configuration Register"): igb_ptp_reset writes 0 on the
//     82580 and later. Its fields route the clock's target times and
//     auxiliary timestamps to the SDP pins, which the model does not have:
//     0 is stored, any function enabled is refused.
const (
	regTSSDP reg = 0x0003C
	regPHPM  reg = 0x00E14

	phpmD0LPLU  uint32 = 1 << 1
	phpmGoLinkD uint32 = 1 << 5
)

// hasPHPM reports whether the part has the 82580 generation's PHPM and
// TSSDP registers.
func (m *Model) hasPHPM() bool { return m.info.fam != fam82576 }

// readVariantLocked reads a register only some variants have.
func (m *Model) readVariantLocked(off uint32) (uint32, bool) {
	if i, ok := m.iNVM(off); ok {
		return m.invmDword(i), true
	}
	if v, ok := m.readI350Locked(off); ok {
		return v, true
	}
	if (off != regPHPM && off != regTSSDP) || !m.hasPHPM() {
		return 0, false
	}
	return m.plain[off], true
}

// writeVariantLocked writes a register only some variants have.
func (m *Model) writeVariantLocked(off, val uint32) bool {
	if m.writeI350Locked(off, val) {
		return true
	}
	if _, ok := m.iNVM(off); ok {
		m.faults.Add("write32", "INVM_DATA", uint64(off), "write to the iNVM, which is read-only to software (it is programmed once, by the manufacturer's tools)")
		return true
	}
	if (off != regPHPM && off != regTSSDP) || !m.hasPHPM() {
		return false
	}
	switch {
	case off == regPHPM && val&phpmD0LPLU != 0:
		m.faults.Add("write32", "PHPM", uint64(off), "D0 LPLU (link up at the lowest common speed while in D0) is not modelled: the PHY negotiates the best common mode")
	case off == regPHPM && val&phpmGoLinkD != 0:
		m.faults.Add("write32", "PHPM", uint64(off), "GO_LINKD (PHY to link disconnect) is not modelled")
	case off == regTSSDP && val != 0:
		m.faults.Add("write32", "TSSDP", uint64(off), "TSSDP 0x%08x routes time sync events to SDP pins, which the model does not have", val)
	default:
		m.plain[off] = val
	}
	return true
}

// rqdpcClearsOnRead reports whether reading RQDPC clears it. The 82576 and
// I350 datasheets give RQDPC as a clear-on-read counter (RC). On the I210 and
// I211 it keeps its count when read and software clears it by writing: Linux's
// igb_update_stats writes 0 after each read for mac.type >= e1000_i210.
func (m *Model) rqdpcClearsOnRead() bool { return m.info.fam != famI210 }

// eecdSize is EECD.EE_SIZE_EX (bits 14:11, read-only): the NVM holds
// 2^(6+n) words. Linux's igb_init_nvm_params_82575 takes the NVM's word size
// from it and refuses reads beyond (igb_read_nvm_eerd): left 0, the I350's
// port sections at 0x80 and up could not be checksummed. The model's image
// is nvmWords (2048 = 2^(6+5)) words.
const eecdSize uint32 = 5 << 11

// nvmSections are the first words of the NVM's LAN sections, each with its
// MAC address in words 0-2 and its checksum word at 0x3F. The I350 has one
// per port (I350 datasheet "NVM Map": LAN port 0 at 0, ports 1-3 at 0x80,
// 0xC0, 0x100; Linux NVM_82580_LAN_FUNC_OFFSET), and Linux's
// igb_validate_nvm_checksum_i350 checks all four; the 82576 and I210 one.
func (m *Model) nvmSections() []int {
	if m.info.fam == famI350 {
		return []int{0, 0x80, 0xC0, 0x100}
	}
	return []int{0}
}

// Flash-less parts: the I211 (I211 datasheet: no external flash, the iNVM
// only) and the I210 flash-less SKUs 0x157B/0x157C. EECD.FLASH_DETECTED reads
// 0 on them (Linux igb_get_flash_presence_i210), and Linux then reads the
// NVM words it needs from the iNVM's word autoload records.
func (m *Model) hasFlash() bool {
	switch m.cfg.DeviceID {
	case 0x1539, 0x157B, 0x157C:
		return false
	}
	return m.info.fam == famI210
}

// The iNVM (I210/I211 datasheets "iNVM", "INVM_DATA"): 64 read-only dwords of
// records at 0x12120, read by Linux's igb_read_invm_word_i210 and
// igb_read_invm_version. The model's image on a flash-less part is a word
// autoload record for each of the MAC address words 0-2 (record type 1 in
// bits 2:0, word address 15:9, data 31:16), then uninitialized dwords (type
// 0: the end of the records); on a part with flash the iNVM is blank.
const regINVMData reg = 0x12120

const (
	invmDwords   = 64
	invmWordLoad = 1
)

func (m *Model) invmDword(i int) uint32 {
	if m.hasFlash() || m.info.fam != famI210 || i >= 3 {
		return 0
	}
	w := uint32(m.mac[2*i]) | uint32(m.mac[2*i+1])<<8
	return w<<16 | uint32(i)<<9 | invmWordLoad
}

// iNVM reports whether off is an INVM_DATA register of this part.
func (m *Model) iNVM(off uint32) (int, bool) {
	if m.info.fam != famI210 || off < regINVMData || off >= regINVMData+4*invmDwords || off%4 != 0 {
		return 0, false
	}
	return int(off-regINVMData) / 4, true
}

// The I350's virtualization registers Linux's igb touches with no VFs
// (I350 datasheet chapter 8, "Virtualization"; Linux e1000_regs.h):
//
//   - DVMOLR(n), the DMA VM offload register of queue n (0xC038 + 0x40n):
//     igb_set_vf_vlan_strip sets or clears STRVLAN (bit 30) for the PF's
//     pool when the VLAN offload changes. Stored; the model strips tags by
//     CTRL.VME, which igb_vlan_mode sets alike. HIDVLAN (29) and STRCRC (31)
//     would change what the queue's frames look like per queue: refused.
//   - TXSWC, the TX switch control (0x5ACC; the 82576's DTXSWC): anti-spoof
//     and VMDq loopback enables (igb_vmdq_set_anti_spoofing_pf,
//     igb_vmdq_set_loopback_pf). Without VFs no pool sends to another and
//     none spoofs: storage is exact.
//   - LVMMC, the last VM misbehaviour cause (0x3548, clear on read):
//     igb_check_lvmmc reads it from the watchdog. The model's malicious
//     driver detection reports through faults, not here: it reads 0;
//     writes are refused (read-only).
const (
	qDVMOLR      = 0x38
	regTXSWC reg = 0x05ACC
	regLVMMC reg = 0x03548

	dvmolrHIDVLAN uint32 = 1 << 29
	dvmolrSTRCRC  uint32 = 1 << 31
)

func (m *Model) readDVMOLRLocked(q int, r uint32, isRX bool, off uint32) (uint32, bool) {
	if m.info.fam != famI350 || !isRX || r != qDVMOLR || off < rxBlockHigh {
		return 0, false
	}
	return m.plain[rxBlockHigh+uint32(q)*blockHighLn+qDVMOLR], true
}

func (m *Model) writeDVMOLRLocked(q int, r, off, val uint32) bool {
	if m.info.fam != famI350 || r != qDVMOLR || off < rxBlockHigh {
		return false
	}
	if val&(dvmolrHIDVLAN|dvmolrSTRCRC) != 0 {
		m.faults.Add("write32", "DVMOLR", uint64(off), "DVMOLR 0x%08x: per-queue HIDVLAN/STRCRC are not modelled (the model strips by CTRL.VME and RCTL.SECRC)", val)
		return true
	}
	m.plain[off] = val
	return true
}

// readI350Locked and writeI350Locked are the I350's TXSWC and LVMMC. (Its
// clock and TSYNCRXCTL are ptp.go's, in the 82580 format of ptp_82580.go.)
func (m *Model) readI350Locked(off uint32) (uint32, bool) {
	if m.info.fam != famI350 {
		return 0, false
	}
	switch off {
	case regTXSWC:
		return m.plain[off], true
	case regLVMMC:
		return 0, true
	}
	return 0, false
}

func (m *Model) writeI350Locked(off, val uint32) bool {
	if m.info.fam != famI350 {
		return false
	}
	switch off {
	case regTXSWC:
		m.plain[off] = val
	case regLVMMC:
		m.faults.Add("write32", "LVMMC", uint64(off), "write to a read-only (clear-on-read) register")
	default:
		return false
	}
	return true
}

// bufferStampOK reports whether an RX queue may run with SRRCTL.TIMESTAMP:
// the I210 and I350 write the timestamp the model's clock gives; the 82576
// has no such bit.
func (m *Model) bufferStampOK() bool { return m.ptp.hasClock }
