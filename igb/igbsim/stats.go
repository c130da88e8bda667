package igbsim

// Statistics (82576 datasheet 8.19): 32-bit counters that stick at their maximum
// and clear when read. The 64-bit octet counters (GORC, GOTC, TOR, TOT) are a low
// and a high register; reading the high one clears both, so software reads low
// then high.

func (m *Model) readStatLocked(i int) uint32 {
	v := m.stats[i]
	switch i {
	case stGORCL, stGOTCL, stTORL, stTOTL:
		return v
	case stGORCH, stGOTCH, stTORH, stTOTH:
		m.stats[i], m.stats[i-1] = 0, 0
		return v
	}
	m.stats[i] = 0
	return v
}

func (m *Model) incStat(i int) {
	if m.stats[i] != ^uint32(0) {
		m.stats[i]++
	}
}

func (m *Model) addStat64(lo int, n int) {
	v := uint64(m.stats[lo+1])<<32 | uint64(m.stats[lo])
	v += uint64(n)
	m.stats[lo], m.stats[lo+1] = uint32(v), uint32(v>>32)
}

// sizeBucket is the PRC/PTC bucket of a frame of wire bytes (FCS included):
// 64, 65-127, 128-255, 256-511, 512-1023, 1024 and more.
func sizeBucket(wire int) int {
	switch {
	case wire <= 64:
		return 0
	case wire <= 127:
		return 1
	case wire <= 255:
		return 2
	case wire <= 511:
		return 3
	case wire <= 1023:
		return 4
	}
	return 5
}
