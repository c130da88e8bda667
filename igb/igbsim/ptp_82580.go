package igbsim

// The I350's clock, in the 82580's format (I350 datasheet 7.9, "Time SYNC":
// SYSTIML, SYSTIMH, SYSTIMR, TIMINCA; Linux igb_ptp.c igb_ptp_read_82580,
// igb_ptp_gettimex_82580, igb_ptp_adjfine_82580, IGB_NBITS_82580). The
// time is one 40-bit count of nanoseconds: SYSTIML its low 32 bits,
// SYSTIMH bits 7:0 its high 8 (the rest of SYSTIMH reads 0), and SYSTIMR
// the sub-nanosecond residue. It wraps after 2^40 ns (about 18 minutes);
// Linux keeps the wall-clock time in a timecounter over it (cc.mask 40
// bits, mult 1, shift 0), reads it often enough to see every wrap
// (IGB_PTP_OVERFLOW_CHECK) and never writes it: settime and adjtime move
// the timecounter only. The rate is the I210's: every 8 ns period adds
// 8 ns plus TIMINCA.INCVALUE*2^-32 ns (ISGN: minus), which is what
// igb_ptp_adjfine_82580 computes for both. Reading SYSTIMR latches the
// clock for SYSTIML and SYSTIMH (Linux reads SYSTIMR first and ignores it);
// writing SYSTIML holds the low bits until SYSTIMH sets the clock.
//
// The RX timestamp in the buffer and TXSTMPL/H carry the same two words.

// systimMask82580 is the 40-bit clock of the 82580 and I350.
const systimMask82580 = 1<<40 - 1

// split is SYSTIMH and SYSTIML for a clock value in the device's format.
func (p *ptpState) split(ns int64) (hi, lo uint32) {
	if !p.fmt40 {
		return splitNS(ns)
	}
	if ns < 0 {
		return 0, 0
	}
	v := uint64(ns) & systimMask82580
	return uint32(v >> 32), uint32(v)
}

// writeSYSTIMH82580Locked sets the 40-bit clock from SYSTIMH (val, at off)
// and the SYSTIML written before it.
func (m *Model) writeSYSTIMH82580Locked(off, val uint32) {
	if val > systimMask82580>>32 {
		m.faults.Add("write32", "SYSTIMH", uint64(off), "SYSTIMH 0x%08x: the I350's clock has 40 bits, SYSTIMH only bits 7:0", val)
		return
	}
	m.ptp.clock.Set(int64(val)<<32 | int64(m.ptp.pendL))
}
