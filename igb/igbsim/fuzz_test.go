package igbsim

import (
	"testing"
)

// FuzzInject: any frame from the wire is received or dropped, never a panic and
// never a fault (the wire cannot make the driver wrong).
func FuzzInject(f *testing.F) {
	f.Add(frame(factoryMAC, 60))
	f.Add(l4FrameSeed(6))
	f.Add(l4FrameSeed(17))
	f.Add([]byte{})
	f.Add(make([]byte, 3000))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRig(t, testCfg())
		r.linkUp()
		for q := 0; q < 4; q++ {
			r.setupRx(q, 8, 1)
			r.Wr(tRDBAL(q)+0x18, 7)
		}
		r.enableRx(tRctlUPE | tRctlLPE)
		r.Wr(tMRQC, 2|0x1FF<<16)
		r.Wr(tRXCSUM, 1<<13)
		r.Wr(tRETA, 0x03020100)
		r.m.Inject(data)
		if err := r.m.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

func l4FrameSeed(proto byte) []byte {
	f := frame(factoryMAC, 80)
	f[12], f[13], f[14], f[23] = 0x08, 0x00, 0x45, proto
	return f
}

// FuzzTxDescriptor: any descriptor contents are sent or refused with a fault,
// never a panic, and the ring keeps moving.
func FuzzTxDescriptor(f *testing.F) {
	f.Add(uint64(0), uint32(0x2B300000|60), uint32(60<<14))
	f.Add(uint64(1<<40), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF))
	f.Add(uint64(0), uint32(0x20200000), uint32(0))
	f.Fuzz(func(t *testing.T, addr uint64, cmd, olinfo uint32) {
		r := newRig(t, testCfg())
		r.linkUp()
		tx := r.setupTx(0, 8)
		r.Wr(tTCTL, tTctlEN|tTctlPSP)
		r.m.SetTransmit(func([]byte) {})
		if addr < 8*txBufSize {
			addr += tx.bufs.IOVA
		}
		d := tx.ring.CPU[0:16]
		le.PutUint64(d[0:], addr)
		le.PutUint32(d[8:], cmd|1<<24) // EOP, so the frame ends here
		le.PutUint32(d[12:], olinfo)
		r.Wr(tTDBAL(0)+0x18, 1)
		if got := r.Rd(tTDBAL(0) + 0x10); got != 1 {
			t.Fatalf("TDH %d after one descriptor", got)
		}
	})
}

// FuzzTxContext: any context descriptor followed by a data descriptor with
// any offload bits is sent or refused with a fault, never a panic, and the
// ring keeps moving (on an I210, with or without Qav launch times; a timed
// frame may wait for its launch time, here at most about a millisecond).
func FuzzTxContext(f *testing.F) {
	f.Add(uint32(14<<9|20), uint32(0), uint32(0), uint32(0), uint32(0), uint32(1<<9), false)
	f.Add(uint32(14<<9|40), uint32(5), uint32(1<<11), uint32(1<<4), uint32(1<<19), uint32(1<<9|1<<4), true)
	f.Add(uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), true)
	f.Fuzz(func(t *testing.T, mli, lt, tucmd, idx, cmd, olinfo uint32, timed bool) {
		cfg := testCfg()
		cfg.DeviceID = 0x1533
		r := newRig(t, cfg)
		r.linkUp()
		tx := r.setupTx(0, 8)
		r.Wr(tTCTL, tTctlEN|tTctlPSP)
		r.Wr(tTSYNCTXCTL, tTsyncTxEN)
		if timed {
			r.Wr(tTQAVCTRL, tQavMode|tQavTIM)
			r.Wr(tTQAVCC0, tQueueModeSR)
		}
		r.m.SetTransmit(func([]byte) {})
		d := tx.ring.CPU[0:16]
		le.PutUint32(d[0:], mli)
		// The clock starts at 0 with the rig: LaunchTimes below 2^15 (1 ms)
		// keep a held frame short; the reserved bits 31:25 stay fuzzed.
		le.PutUint32(d[4:], lt&(0xFE000000|0x7FFF))
		le.PutUint32(d[8:], tTxDtypCtxt|tTxDEXT|tucmd&^(0xF<<20|1<<29))
		le.PutUint32(d[12:], idx)
		tx.tail = 1
		f := frame(factoryMAC, 60+int(mli>>20))
		i := tx.put(f)
		d = tx.ring.CPU[i*16:]
		le.PutUint32(d[8:], le.Uint32(d[8:])|cmd&^(0xF<<20|0xFFFF|1<<31|1<<30))
		le.PutUint32(d[12:], le.Uint32(d[12:])|olinfo&0x3FFF)
		r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
		r.WaitFor("TDH past both descriptors", func() bool { return r.Rd(tTDBAL(0)+0x10) == 2 })
	})
}
