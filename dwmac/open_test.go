package dwmac

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

func openFake(t *testing.T, d *fakeDev, cfg Config) *Port {
	t.Helper()
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = 2 * time.Second
	}
	p, err := Open(d, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func TestOpenAllOnesIsNoDevice(t *testing.T) {
	d := newFakeDev(t)
	d.allOnes = true
	_, err := Open(d, Config{})
	if !errors.Is(err, nic.ErrNoDevice) {
		t.Fatalf("Open on a device reading all ones: %v, want ErrNoDevice", err)
	}
	if len(d.log) != 0 {
		t.Fatalf("%d register writes to a device that is not there", len(d.log))
	}
}

func TestOpenRefusesOtherDevices(t *testing.T) {
	d := newFakeDev(t)
	d.info.Device = 0x0937 // Quark: a 3.x GMAC
	if _, err := Open(d, Config{}); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("Open on Quark: %v, want ErrNotSupported", err)
	}
	d = newFakeDev(t)
	d.info = nic.DeviceInfo{Name: "plat", Bus: "platform", Compatible: "fsl,imx8mp-fec"}
	if _, err := Open(d, Config{}); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("Open on an FEC platform device: %v, want ErrNotSupported", err)
	}
	d = newFakeDev(t)
	d.regs[fVersion] = 0x37 // GMAC 3.70
	if _, err := Open(d, Config{}); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("Open on SNPSVER 0x37: %v, want ErrNotSupported", err)
	}
}

func TestSWRTimeoutSaysRXClockMissing(t *testing.T) {
	d := newFakeDev(t)
	d.swrStuck = true
	t0 := time.Now()
	_, err := Open(d, Config{})
	if !errors.Is(err, nic.ErrTimeout) {
		t.Fatalf("Open with SWR stuck: %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "RX clock is missing") || !strings.Contains(err.Error(), "PHY") {
		t.Fatalf("error does not name the missing PHY RX clock: %v", err)
	}
	if el := time.Since(t0); el < 900*time.Millisecond || el > 5*time.Second {
		t.Fatalf("gave up after %v, want about 1 s", el)
	}
	if !d.busMaster {
		t.Fatal("bus mastering was not enabled before the reset on a PCI device")
	}
}

func TestMDIOBusyNeverClearsTimesOut(t *testing.T) {
	d := newFakeDev(t)
	d.mdioStuck = true
	_, err := Open(d, Config{})
	if !errors.Is(err, nic.ErrTimeout) || !strings.Contains(err.Error(), "GB") {
		t.Fatalf("Open with MDIO GB stuck: %v, want a GB timeout", err)
	}
}

func TestNoPHY(t *testing.T) {
	d := newFakeDev(t)
	d.phy = nil
	if _, err := Open(d, Config{}); !errors.Is(err, ErrNoPHY) {
		t.Fatalf("Open with nothing on MDIO: %v, want ErrNoPHY", err)
	}
	d = newFakeDev(t)
	if _, err := Open(d, Config{PHYAddr: 7}); !errors.Is(err, ErrNoPHY) {
		t.Fatalf("Open with the PHY elsewhere than PHYAddr: %v, want ErrNoPHY", err)
	}
}

func TestQueuesClampedToHardware(t *testing.T) {
	d := newFakeDev(t)
	d.regs[fHWF2] = 1 | 1<<6 | 1<<12 | 0<<18 // 2 RX queues, 2 TX, 2 RX channels, 1 TX channel
	if _, err := Open(d, Config{Queues: 2}); err == nil || !strings.Contains(err.Error(), "2 queues") {
		t.Fatalf("Open with 2 queues on a MAC with one TX channel: %v", err)
	}
}

// TestBringUpSequence checks the order and values of the bring-up against
// stmmac's (stmmac_hw_setup and the dwmac4 callbacks: the DMA reset first,
// the channels started last, RX before TX).
func TestBringUpSequence(t *testing.T) {
	d := newFakeDev(t)
	mac := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	p := openFake(t, d, Config{RxRingSize: 64, TxRingSize: 32, MAC: mac})

	idx := func(name string, off uint32, pred func(uint32) bool) int {
		i := d.firstWrite(off, pred)
		if i < 0 {
			t.Fatalf("%s (0x%x) never written", name, off)
		}
		return i
	}
	order := []struct {
		name string
		i    int
	}{
		{"SWR", idx("DMA_MODE.SWR", fBusMode, func(v uint32) bool { return v&1 != 0 })},
		{"SYS_BUS_MODE", idx("DMA_SYSBUS_MODE", fSysBusMode, nil)},
		{"CH0 RX base", idx("RX base", fCh0+fChRxBaseLo, nil)},
		{"CH0 RX tail", idx("RX tail", fCh0+fChRxTail, nil)},
		{"MTL TXQ0", idx("MTL_TXQ0_OP", fMTLTxOp0, nil)},
		{"RXQ_CTRL0", idx("MAC_RXQ_CTRL0", fRxQCtrl0, nil)},
		{"ADDR_HIGH0", idx("MAC_ADDR0_HIGH", fAddrHigh0, nil)},
		{"MAC_CONFIG", idx("MAC_CONFIG", fMACConfig, func(v uint32) bool { return v&3 == 3 })},
		{"PKT_FILTER", idx("MAC_PACKET_FILTER", fPktFilter, nil)},
		{"SR", idx("RX SR", fCh0+fChRxCtrl, func(v uint32) bool { return v&1 != 0 })},
		{"ST", idx("TX ST", fCh0+fChTxCtrl, func(v uint32) bool { return v&1 != 0 })},
	}
	for k := 1; k < len(order); k++ {
		if order[k].i < order[k-1].i {
			t.Errorf("%s written before %s", order[k].name, order[k-1].name)
		}
	}

	if v := d.reg(fSysBusMode); v&(1<<11) == 0 {
		t.Errorf("SYS_BUS_MODE 0x%08x: EAME clear on a 40-bit MAC with memory above 4 GiB", v)
	}
	if v := d.reg(fCh0 + fChCtrl); v&(1<<16) == 0 || v>>18&7 != 0 {
		t.Errorf("CH0 CONTROL 0x%08x: want PBLx8 and DSL 0", v)
	}
	rxc := d.reg(fCh0 + fChRxCtrl)
	if rbsz := rxc >> 1 & 0x3fff; rbsz != (dma.DefaultFrameSize-dma.Headroom)&^15 {
		t.Errorf("RBSZ %d, want %d", rbsz, (dma.DefaultFrameSize-dma.Headroom)&^15)
	}
	if pbl := rxc >> 16 & 0x3f; pbl != 32 {
		t.Errorf("RxPBL %d, want 32 on Intel", pbl)
	}
	if v := d.reg(fCh0 + fChRxLen); v != 63 {
		t.Errorf("RX ring length register %d, want 63", v)
	}
	if v := d.reg(fCh0 + fChTxLen); v != 31 {
		t.Errorf("TX ring length register %d, want 31", v)
	}
	base, _ := d.ring(0, fChRxBaseHi, fChRxBaseLo, fChRxLen)
	if base < 1<<32 {
		t.Fatalf("RX ring base 0x%x: the high half was not written", base)
	}
	if tail := d.reg(fCh0 + fChRxTail); tail != uint32(base)+63*16 {
		t.Errorf("RX tail 0x%x, want base+63*16 = 0x%x (63 of 64 descriptors posted)", tail, uint32(base)+63*16)
	}
	tbase, _ := d.ring(0, fChTxBaseHi, fChTxBaseLo, fChTxLen)
	if tail := d.reg(fCh0 + fChTxTail); tail != uint32(tbase) {
		t.Errorf("TX tail 0x%x, want the ring base 0x%x (nothing to send)", tail, uint32(tbase))
	}
	tx := d.reg(fMTLTxOp0)
	if tx>>2&3 != 2 || tx&2 == 0 {
		t.Errorf("MTL_TXQ0_OP_MODE 0x%08x: want TXQEN=2 and TSF", tx)
	}
	if tqs := (tx>>16&0x1ff + 1) * 256; tqs != 4096 {
		t.Errorf("TX queue size %d, want 4096 (Intel's per-queue FIFO)", tqs)
	}
	rx := d.reg(fMTLRxOp0)
	if rx&(1<<5) == 0 {
		t.Errorf("MTL_RXQ0_OP_MODE 0x%08x: want RSF", rx)
	}
	if rqs := (rx>>20&0x3ff + 1) * 256; rqs != 4096 {
		t.Errorf("RX queue size %d, want 4096", rqs)
	}
	if v := d.reg(fRxQCtrl0); v&3 != 2 {
		t.Errorf("MAC_RXQ_CTRL0 0x%08x: queue 0 not enabled for generic traffic", v)
	}
	if hi, lo := d.reg(fAddrHigh0), d.reg(fAddrLow0); hi != 1<<31|0x5544 || lo != 0x33221102 {
		t.Errorf("MAC address registers 0x%08x/0x%08x", hi, lo)
	}
	if !bytes.Equal(p.MAC(), mac) {
		t.Errorf("MAC %s, want %s", p.MAC(), mac)
	}
	if v := d.reg(fMMCCntrl); v&4 == 0 {
		t.Errorf("MMC_CONTROL 0x%08x: reset-on-read not set", v)
	}
	// The sim PHY's partner does 1000BASE-T full duplex: PS and FES clear, DM set.
	cfg := d.reg(fMACConfig)
	if cfg&(1<<15|1<<14) != 0 || cfg&(1<<13) == 0 || cfg&3 != 3 {
		t.Errorf("MAC_CONFIG 0x%08x: want RE|TE, 1000 Mb/s full duplex", cfg)
	}
	if !p.StripsFCS() {
		t.Error("MAC_CONFIG kept ACS|CST but the driver does not take PL as the frame length")
	}
	if l := p.Link(); !l.Up || l.SpeedMbps != 1000 || !l.FullDuplex {
		t.Errorf("Link %+v, want up at 1000 full", l)
	}
	if p.PHYAddr() != 1 || p.PHYID() != 0x001cc916 {
		t.Errorf("PHY %d ID 0x%08x", p.PHYAddr(), p.PHYID())
	}
	// MDIO used CR 5 (Intel's 250-300 MHz CSR clock).
	for _, v := range d.writes(fMDIOAddr) {
		if v>>8&0xf != 5 {
			t.Fatalf("MDIO command 0x%08x: CR %d, want 5", v, v>>8&0xf)
		}
	}
}

func TestLinkSpeedProgrammedFromPHY(t *testing.T) {
	d := newFakeDev(t)
	d.phy = sim.NewPHY(sim.PHYConfig{Addr: 3, ID1: 0x0141, ID2: 0x0cc2, AutonegDelay: 1, PartnerNo1000: true})
	p := openFake(t, d, Config{})
	cfg := d.reg(fMACConfig)
	if cfg&(1<<15|1<<14|1<<13) != 1<<15|1<<14|1<<13 {
		t.Fatalf("MAC_CONFIG 0x%08x: want PS|FES|DM for 100 Mb/s full duplex", cfg)
	}
	if l := p.Link(); l.SpeedMbps != 100 || !l.FullDuplex {
		t.Fatalf("Link %+v, want 100 full", l)
	}
	// Unplug: Link reports down, WaitLink says why.
	d.phy.SetConnected(false)
	if l := p.Link(); l.Up {
		t.Fatalf("Link %+v after unplugging", l)
	}
	_, err := p.WaitLink(30 * time.Millisecond)
	if !errors.Is(err, nic.ErrLinkDown) || !strings.Contains(err.Error(), "BMSR") {
		t.Fatalf("WaitLink while unplugged: %v", err)
	}
}

func TestDMARefusedAboveAddressWidth(t *testing.T) {
	// A 32-bit MAC (ADDR64 = 0) and memory above 4 GiB: refused, not truncated.
	d := newFakeDev(t)
	d.regs[fHWF1] &^= 3 << 14
	_, err := Open(d, Config{})
	if !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("Open of a 32-bit MAC with memory above 4 GiB: %v, want ErrTooHigh", err)
	}
	if d.mem.Regions() != 0 {
		t.Fatalf("%d DMA regions left behind by the failed Open", d.mem.Regions())
	}
	// The same MAC with memory below 4 GiB: EAME off.
	d = newFakeDev(t)
	d.regs[fHWF1] &^= 3 << 14
	d.mem = sim.NewMemory(sim.MemoryConfig{Below4G: true}, nil)
	p := openFake(t, d, Config{})
	if v := d.reg(fSysBusMode); v&(1<<11) != 0 {
		t.Fatalf("SYS_BUS_MODE 0x%08x: EAME set on a 32-bit MAC", v)
	}
	if p.AddrBits() != 32 {
		t.Fatalf("AddrBits %d", p.AddrBits())
	}
}

func TestIMX8MPNarrowsDMATo34Bits(t *testing.T) {
	d := newFakeDev(t)
	d.info = nic.DeviceInfo{Name: "30bf0000.ethernet", Bus: "platform", Compatible: CompatibleIMX8MP}
	d.mem = sim.NewMemory(sim.MemoryConfig{Base: 1 << 34}, nil) // just above 16 GiB
	_, err := Open(d, Config{})
	if !errors.Is(err, dma.ErrTooHigh) || !strings.Contains(err.Error(), "34-bit") {
		t.Fatalf("Open of the i.MX8MP EQOS with memory at 16 GiB: %v, want ErrTooHigh (34-bit)", err)
	}
	if d.busMaster {
		t.Fatal("EnableBusMaster called on a platform device")
	}
	d = newFakeDev(t)
	d.info = nic.DeviceInfo{Name: "30bf0000.ethernet", Bus: "platform", Compatible: CompatibleIMX8MP}
	p := openFake(t, d, Config{})
	if p.AddrBits() != 34 || d.reg(fSysBusMode)&(1<<11) == 0 {
		t.Fatalf("AddrBits %d, SYS_BUS_MODE 0x%08x: want 34 and EAME", p.AddrBits(), d.reg(fSysBusMode))
	}
	if pbl := d.reg(fCh0+fChTxCtrl) >> 16 & 0x3f; pbl != 8 {
		t.Fatalf("TxPBL %d on i.MX, want 8", pbl)
	}
	// i.MX CSR clock 266 MHz: CR 5, 1US_TIC 265.
	if v := d.reg(0xdc); v != 265 {
		t.Fatalf("MAC_1US_TIC %d, want 265", v)
	}
}

func TestFCSKeptWhenMACDoesNotStrip(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{RxRingSize: 8})
	if !p.StripsFCS() {
		t.Fatal("fake keeps ACS|CST")
	}
	// A MAC that refuses ACS|CST (reads them back 0): the driver strips itself.
	d2 := newFakeDev(t)
	r := &maskRegs{fakeDev: d2, off: fMACConfig, clear: 3 << 20}
	p2, err := Open(r, Config{RxRingSize: 8, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if p2.StripsFCS() {
		t.Fatal("driver believes the MAC strips the FCS though ACS|CST read back 0")
	}
	frame := bytes.Repeat([]byte{0xab}, 60)
	var st rxState
	if n := d2.deliver(t, &st, frame, 1, 0); n != 1 {
		t.Fatal("no RX descriptor posted")
	}
	bufs := make([]*dma.Buf, 4)
	if n := p2.RxQueue(0).Recv(bufs); n != 1 || bufs[0].Len != 60 {
		t.Fatalf("Recv %d, len %d: want one 60-byte frame (PL 64 minus the FCS)", n, bufs[0].Len)
	}
	bufs[0].Free()
}

// maskRegs clears some bits of one register on write, as a MAC without them.
type maskRegs struct {
	*fakeDev
	off, clear uint32
}

func (m *maskRegs) Regs(n int) (nic.Regs, error) { return m, nil }
func (m *maskRegs) Write32(off, val uint32) {
	if off == m.off {
		val &^= m.clear
	}
	m.fakeDev.Write32(off, val)
}

func TestSetMulticastHash(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{})
	group := net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	if err := p.SetMulticast([]net.HardwareAddr{group}); err != nil {
		t.Fatal(err)
	}
	if v := d.reg(fPktFilter); v&(1<<2) == 0 || v&(1<<4) != 0 {
		t.Fatalf("MAC_PACKET_FILTER 0x%08x: want HMC, not PM", v)
	}
	h := mcHash(group, 64)
	if v := d.reg(0x10 + 4*(h>>5)); v != 1<<(h&31) {
		t.Fatalf("hash register %d = 0x%08x, want bit %d only", h>>5, v, h&31)
	}
	if err := p.SetMulticast([]net.HardwareAddr{{0x02, 0, 0, 0, 0, 1}}); err == nil {
		t.Fatal("SetMulticast took a unicast address")
	}
	if err := p.SetPromisc(true); err != nil || d.reg(fPktFilter)&1 == 0 {
		t.Fatalf("SetPromisc: %v, filter 0x%08x", err, d.reg(fPktFilter))
	}
}

func TestMulticastHashValue(t *testing.T) {
	// 01:00:5e:00:00:01: IEEE CRC-32 0x2a7be7c6... computed independently here
	// bit by bit, then bit-reversed; the top 6 bits select one of 64 bins.
	a := net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	crc := uint32(0xffffffff)
	for _, b := range a {
		for i := 0; i < 8; i++ {
			bit := (uint32(b)>>i ^ crc) & 1
			crc >>= 1
			if bit != 0 {
				crc ^= 0xedb88320
			}
		}
	}
	crc = ^crc
	var rev uint32
	for i := 0; i < 32; i++ {
		rev |= (crc >> i & 1) << (31 - i)
	}
	if got, want := mcHash(a, 64), rev>>26; got != want {
		t.Fatalf("mcHash = %d, want %d", got, want)
	}
	if got, want := mcHash(a, 256), rev>>24; got != want {
		t.Fatalf("mcHash(256 bins) = %d, want %d", got, want)
	}
}

func TestDumpDecodes(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{})
	dump := p.Dump()
	r, ok := dump.Reg("MAC_CONFIG")
	if !ok {
		t.Fatal("no MAC_CONFIG in the dump")
	}
	if v, _ := r.Field("SPEED"); v != "1000" {
		t.Fatalf("MAC_CONFIG SPEED %q", v)
	}
	if v, _ := r.Field("RE"); v != "1" {
		t.Fatalf("MAC_CONFIG RE %q", v)
	}
	if r, _ := dump.Reg("MAC_VERSION"); !strings.Contains(r.Fields[0].Value, "5.10") {
		t.Fatalf("MAC_VERSION %+v", r)
	}
	if r, _ := dump.Reg("DMA_CH0_RX_RING_LEN"); r.Fields[0].Value != "512" {
		t.Fatalf("RX ring length %+v", r)
	}
	if r, _ := dump.Reg("MAC_ADDR0_HIGH"); r.Fields[1].Value != p.MAC().String() {
		t.Fatalf("MAC address in dump %+v, port %s", r, p.MAC())
	}
	if !strings.Contains(dump.String(), "DMA_SYSBUS_MODE") {
		t.Fatal("String lacks DMA_SYSBUS_MODE")
	}
	for _, reg := range dump.Registers {
		if reg.Offset >= 0x700 && reg.Offset < 0x800 && reg.Offset != 0x700 {
			t.Fatalf("dump read MMC counter 0x%x (reset on read)", reg.Offset)
		}
	}
}

func TestCheckDMAReportsFatalBusError(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{})
	if err := p.CheckDMA(); err != nil {
		t.Fatalf("CheckDMA on a healthy channel: %v", err)
	}
	d.mu.Lock()
	d.regs[fCh0+fChStatus] = 1<<12 | 1<<14 | 2<<16 // FBE | AIS, TEB = 2
	d.mu.Unlock()
	err := p.CheckDMA()
	if !errors.Is(err, ErrDMAStopped) || !strings.Contains(err.Error(), "channel 0") || !strings.Contains(err.Error(), "TEB=2") {
		t.Fatalf("CheckDMA with FBE: %v", err)
	}
}
