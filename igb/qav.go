package igb

// The I210's Qav transmit mode, here only for launch times (I210 datasheet
// 7.2.7.5 and 8.12.x; Linux igb_setup_tx_mode and igb_config_tx_modes, with
// the registers of e1000_regs.h and e1000_defines.h). Queues 0 and 1 are the
// stream reservation (SR) queues; a frame on an SR queue with TQAVCTRL's
// DataTranTIM waits until SYSTIML reaches its context's LaunchTime.
const (
	regTQAVCTRL   reg = 0x03570 // Tx Qav control
	regTQAVCC0    reg = 0x03004 // Tx Qav credit control, queue n at +0x40*n
	regTQAVHC0    reg = 0x0300C // Tx Qav high credit, queue n at +0x40*n
	regTXPBS      reg = 0x03404 // TX packet buffer sizes
	regRXPBS      reg = 0x02404 // RX packet buffer size
	regDTXMXPKTSZ reg = 0x0355C // DMA TX maximum packet size, 64-byte units

	tqavctrlXmitMode     uint32 = 1 << 0       // transmit mode: Qav
	tqavctrlDataFetchArb uint32 = 1 << 4       // data fetch arbitration (clear: round robin)
	tqavctrlDataTranArb  uint32 = 1 << 8       // data transmission arbitration: credit shaper
	tqavctrlDataTranTIM  uint32 = 1 << 9       // launch time gates SR queues
	tqavctrlSPWaitSR     uint32 = 1 << 10      // strict priority queues wait for SR ones
	tqavctrlFetchDelta   uint32 = 0xFFFF << 16 // fetch this many 32 ns before launch (the most)

	tqavccQueueMode uint32 = 1 << 31 // the queue is an SR queue
	tqavccIdleSlope uint32 = 0xFFFF  // idleSlope

	// Packet buffers as Linux sets them for Qav (7.2.7.7): 6 KiB per TX
	// buffer, 30 KiB RX, and a largest TX frame below the smallest buffer.
	qavTXPBS      uint32 = 6 | 6<<6 | 6<<12 | 6<<18
	txpbsMask     uint32 = 0xC0FFFFFF
	qavRXPBS      uint32 = 0x1E
	rxpbsMask     uint32 = 0x3F
	qavDTXMXPKTSZ uint32 = (4096 - 1) / 64

	// Queue 0 gets the whole link's credit, as Linux gives it (8.12.19 wants
	// queue 0 in SR mode under Qav; Linux instead keeps it in strict priority
	// unless it launches on time, and gives it the credit): idleSlope for
	// 1 Gb/s and a high credit of one full frame (1514 bytes at 0x7735 each).
	qavQ0IdleSlope = 61034
	qavQ0HiCredit  = 0x80000000 + 1514*0x7735
)

func regTQAVCC(q int) reg { return regTQAVCC0 + 0x40*reg(q) }
func regTQAVHC(q int) reg { return regTQAVHC0 + 0x40*reg(q) }

// setupQav turns Qav mode on when Config.LaunchTime asks for it: the SR
// queues that launch on time in SR mode (the others in strict priority),
// queue 0 with the full-link credit, launch time gating on.
func (p *Port) setupQav() {
	if p.cfg.LaunchTime == 0 {
		return
	}
	v := p.r32(regTQAVCTRL)
	v |= tqavctrlXmitMode | tqavctrlSPWaitSR | tqavctrlDataTranArb | tqavctrlDataTranTIM | tqavctrlFetchDelta
	v &^= tqavctrlDataFetchArb
	p.w32(regTQAVCTRL, v)
	p.w32(regTXPBS, p.r32(regTXPBS)&^txpbsMask|qavTXPBS)
	p.w32(regRXPBS, p.r32(regRXPBS)&^rxpbsMask|qavRXPBS)
	p.w32(regDTXMXPKTSZ, qavDTXMXPKTSZ)
	for q := 0; q < min(2, p.cfg.Queues); q++ {
		cc := p.r32(regTQAVCC(q)) &^ (tqavccQueueMode | tqavccIdleSlope)
		if p.cfg.LaunchTime&(1<<q) != 0 {
			cc |= tqavccQueueMode // launch time gates every SR queue: only ours
		}
		hc := uint32(0)
		if q == 0 {
			cc |= qavQ0IdleSlope
			hc = qavQ0HiCredit
		}
		p.w32(regTQAVCC(q), cc)
		p.w32(regTQAVHC(q), hc)
	}
}
