package fec

import "fmt"

// Checks at Open of what the MAC really has, so that a MAC without a part
// (QEMU's imx.enet, which models neither receive rings 1-2 nor the MIB) is
// reported as such instead of leaving queues that never receive or counters
// that stay 0.

// mibcDIS is MIB_CTRLSTAT.MIB_DIS (bit 31): the MIB stops counting, and its
// counters may be written (Linux fec_enet_clear_ethtool_stats clears them so).
const mibcDIS = 1 << 31

// mibProbe is the counter and value probeMIB writes: RMON_T_PACKETS, a value
// that fits in the narrowest MIB counter field (16 bits).
const (
	mibProbe      reg    = 0x204
	mibProbeValue uint32 = 0x5A
)

// probeMIB reports whether the MIB holds what is written to it while it is
// disabled. It disables the MIB, writes mibProbeValue to RMON_T_PACKETS, reads
// it back, and puts the old value back; start enables the MIB again. QEMU's
// imx.enet has no MIB: the write is dropped and the read gives 0.
func (p *Port) probeMIB() bool {
	p.w32(regMIBC, mibcDIS)
	old := p.r32(mibProbe)
	p.w32(mibProbe, mibProbeValue)
	got := p.r32(mibProbe)
	p.w32(mibProbe, old)
	return got == mibProbeValue
}

// checkRxRings reads back the descriptor ring start of every receive ring
// above 0 after start programmed it: a MAC without that ring (QEMU's imx.enet
// has receive ring 0 only and drops writes to RDSR1/2) would leave the queue
// without a frame for ever.
func (p *Port) checkRxRings() error {
	for i := 1; i < len(p.rx); i++ {
		want := uint32(p.rx[i].Ring.IOVA)
		if got := p.r32(rings[i].rdsr); got != want {
			return fmt.Errorf("receive ring %d: its descriptor ring start (RDSR%d at %#x) reads %#x after %#x was written: "+
				"this MAC has no receive ring %d (QEMU's imx.enet models ring 0 only); use Config.Queues 1", i, i, uint32(rings[i].rdsr), got, want, i)
		}
	}
	return nil
}
