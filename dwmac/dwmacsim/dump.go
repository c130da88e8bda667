package dwmacsim

import (
	"fmt"
	"strings"
)

// Dump describes the model's state in words, for test failure messages: MAC
// configuration and filter, DMA mode, each channel's rings (base, length,
// current and tail positions, run state), status and enables, and the
// counters. It reads the state without the side effects register reads have.
func (m *Model) Dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	flags := func(v uint32, names ...any) string {
		var out []string
		for i := 0; i+1 < len(names); i += 2 {
			if v&names[i].(uint32) != 0 {
				out = append(out, names[i+1].(string))
			}
		}
		if len(out) == 0 {
			return "-"
		}
		return strings.Join(out, "|")
	}
	fmt.Fprintf(&b, "%s SNPSVER 0x%02x, %d RX and %d TX channels, link %+v\n", m.cfg.Variant, m.cfg.SNPSVER, m.nrx, m.ntx, m.phy.Link())
	fmt.Fprintf(&b, "MAC_Configuration 0x%08x (%s)\n", m.macConfig, flags(m.macConfig,
		cfgRE, "RE", cfgTE, "TE", cfgDM, "DM", cfgFES, "FES", cfgPS, "PS", cfgJE, "JE", cfg2K, "2K", cfgACS, "ACS", cfgCST, "CST"))
	fmt.Fprintf(&b, "MAC_Packet_Filter 0x%08x (%s), MAC_RxQ_Ctrl0 0x%08x, MAC_Address0 %08x:%08x\n", m.pktFilter,
		flags(m.pktFilter, pfPR, "PR", pfHMC, "HMC", pfPM, "PM", pfDBF, "DBF", pfHPF, "HPF", pfRA, "RA"),
		m.rxqCtrl0, m.addrEffHi[0], m.addrEffLo[0])
	fmt.Fprintf(&b, "DMA_Mode 0x%08x (SWR in progress %v, INTM %d), DMA_SysBus_Mode 0x%08x (EAME %v)\n",
		m.busMode, m.swr, m.busMode&busINTMMask>>busINTMShift, m.sysBusMode, m.eame())
	susp := [...]string{suspNone: "running", suspTail: "suspended at tail", suspOwn: "suspended at a descriptor without OWN"}
	for c := 0; c < m.nch; c++ {
		ch := &m.ch[c]
		fmt.Fprintf(&b, "channel %d: status 0x%08x, enable 0x%08x, MTL TXQEN %d\n", c, ch.status, ch.intEn,
			m.mtlq[c].txOp&mtlTXQENMask>>mtlTXQENShift)
		for _, d := range []struct {
			name string
			r    *ring
		}{{"TX", &ch.tx}, {"RX", &ch.rx}} {
			r := d.r
			state := "stopped"
			if r.run {
				state = susp[r.susp]
			}
			tail := "unset"
			if r.tailSet {
				tail = fmt.Sprintf("0x%08x (index %d)", r.tail, int32(r.tailRaw))
			}
			fmt.Fprintf(&b, "  %s: base 0x%x, %d descriptors, cur %d, tail %s, %s\n", d.name, m.ringBase(r), r.n(), r.cur, tail, state)
		}
		if rb := ch.rxCtrl & rxcRBSZMask >> 1; rb != 0 {
			fmt.Fprintf(&b, "  RBSZ %d\n", rb)
		}
	}
	fmt.Fprintf(&b, "counters %+v\n", m.cnt)
	return b.String()
}
