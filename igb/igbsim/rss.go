package igbsim

// Receive-side scaling (82576 datasheet 7.1.1.7): a Toeplitz hash over the
// source and destination addresses (and ports, for TCP and UDP when MRQC enables
// those fields) with the 40-byte RSSRK key; the low 7 bits index the 128-entry
// redirection table RETA, whose entry names the queue.

// rssKeyLen is the size of the RSS key (RSSRK 0-9).
const rssKeyLen = 40

// maxHashInput is the longest hash input: IPv6 source and destination, two ports.
const maxHashInput = 36

// Toeplitz computes the Toeplitz hash of input with key, bit by bit as the
// datasheet defines it: for every set bit of the input, XOR in the 32 key bits
// that start at that bit position. key must be at least len(input)+4 bytes.
// It is the reference the table-driven hash is tested against.
func Toeplitz(key, input []byte) uint32 {
	if len(key) < len(input)+4 {
		return 0
	}
	var hash uint32
	window := uint32(key[0])<<24 | uint32(key[1])<<16 | uint32(key[2])<<8 | uint32(key[3])
	for i, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				hash ^= window
			}
			window <<= 1
			if key[i+4]&(1<<bit) != 0 {
				window |= 1
			}
		}
	}
	return hash
}

// toeplitzTable holds, for each input byte position and byte value, the XOR of
// the key windows its set bits select, so a hash is one lookup per input byte.
type toeplitzTable [maxHashInput][256]uint32

func (t *toeplitzTable) build(key *[rssKeyLen]byte) {
	for pos := 0; pos < maxHashInput; pos++ {
		var bitWin [8]uint32 // key window for bit 7-k of this byte
		for k := 0; k < 8; k++ {
			bitpos := pos*8 + k
			var w uint32
			for j := 0; j < 32; j++ {
				kb := bitpos + j
				if key[kb/8]&(0x80>>(kb%8)) != 0 {
					w |= 1 << (31 - j)
				}
			}
			bitWin[k] = w
		}
		for v := 0; v < 256; v++ {
			var h uint32
			for k := 0; k < 8; k++ {
				if v&(0x80>>k) != 0 {
					h ^= bitWin[k]
				}
			}
			t[pos][v] = h
		}
	}
}

func (t *toeplitzTable) hash(input []byte) uint32 {
	var h uint32
	for i, b := range input {
		h ^= t[i][b]
	}
	return h
}

// rssInput extracts the hash input of frame as MRQC selects it, and returns the
// RSS type for the write-back and the packet type bits. n is 0 when the frame
// gets no hash.
func rssInput(frame []byte, mrqc uint32, buf *[maxHashInput]byte) (n int, rssType uint16, pktType uint16) {
	if len(frame) < 14 {
		return 0, rssTypeNone, 0
	}
	off := 12
	etype := uint16(frame[off])<<8 | uint16(frame[off+1])
	if etype == 0x8100 && len(frame) >= 18 { // one VLAN tag
		off += 4
		etype = uint16(frame[off])<<8 | uint16(frame[off+1])
	}
	l3 := off + 2
	switch etype {
	case 0x0800:
		if len(frame) < l3+20 || frame[l3]>>4 != 4 {
			return 0, rssTypeNone, 0
		}
		pktType = pktTypeIPv4
		ihl := int(frame[l3]&0xF) * 4
		proto := frame[l3+9]
		frag := (uint16(frame[l3+6])<<8|uint16(frame[l3+7]))&0x3FFF != 0 // MF or offset
		copy(buf[0:8], frame[l3+12:l3+20])
		l4 := l3 + ihl
		ports := !frag && ihl >= 20 && len(frame) >= l4+4
		switch {
		case proto == 6 && ports:
			pktType |= pktTypeTCP
			if mrqc&mrqcTCPIPv4 != 0 {
				copy(buf[8:12], frame[l4:l4+4])
				return 12, rssTypeTCPIPv4, pktType
			}
		case proto == 17 && ports:
			pktType |= pktTypeUDP
			if mrqc&mrqcUDPIPv4 != 0 {
				copy(buf[8:12], frame[l4:l4+4])
				return 12, rssTypeUDPIPv4, pktType
			}
		}
		if mrqc&mrqcIPv4 != 0 {
			return 8, rssTypeIPv4, pktType
		}
		return 0, rssTypeNone, pktType
	case 0x86DD:
		if len(frame) < l3+40 || frame[l3]>>4 != 6 {
			return 0, rssTypeNone, 0
		}
		pktType = pktTypeIPv6
		next := frame[l3+6]
		copy(buf[0:32], frame[l3+8:l3+40])
		l4 := l3 + 40
		ports := len(frame) >= l4+4
		switch {
		case next == 6 && ports:
			pktType |= pktTypeTCP
			if mrqc&(mrqcTCPIPv6|mrqcTCPIPv6Ex) != 0 {
				copy(buf[32:36], frame[l4:l4+4])
				return 36, rssTypeTCPIPv6, pktType
			}
		case next == 17 && ports:
			pktType |= pktTypeUDP
			if mrqc&(mrqcUDPIPv6|mrqcUDPIPv6Ex) != 0 {
				copy(buf[32:36], frame[l4:l4+4])
				return 36, rssTypeUDPIPv6, pktType
			}
		}
		if mrqc&(mrqcIPv6|mrqcIPv6Ex) != 0 {
			return 32, rssTypeIPv6, pktType
		}
		return 0, rssTypeNone, pktType
	}
	return 0, rssTypeNone, 0
}
