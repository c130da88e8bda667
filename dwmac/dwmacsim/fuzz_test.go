package dwmacsim

import (
	"encoding/binary"
	"testing"
)

// FuzzInject: any frame from the wire is received or dropped, never a panic
// and never a fault (the wire cannot make the driver wrong), and a received
// frame is written back with its length.
func FuzzInject(f *testing.F) {
	f.Add(frame(factoryMAC, 60), uint8(0))
	f.Add(frame(bcast, 1514), uint8(1))
	f.Add([]byte{}, uint8(2))
	f.Add(make([]byte, 3000), uint8(3))
	f.Add(append([]byte{0x01, 0, 0x5e, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x81, 0, 0, 1, 0x81, 0}, make([]byte, 60)...), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		r := newRig(t, testCfg())
		r.bringUp()
		rx := r.setupRx(0, 8, 512)
		r.Wr(tPktFilter, []uint32{0, tPR, tHMC, tPM | tDBF, tRA}[mode%5])
		if mode&8 != 0 {
			r.Wr(tMACConfig, r.Rd(tMACConfig)|1<<16) // JE
		}
		if mode&16 != 0 {
			r.Wr(tMACConfig, r.Rd(tMACConfig)|tCST|1<<20)
		}
		ok := r.m.Inject(data)
		if err := r.m.Err(); err != nil {
			t.Fatal(err)
		}
		if ok {
			pl := 0
			for i := 0; i < rx.n; i++ {
				if d3 := rx.des3(i); d3&tOWN == 0 && d3&tLD != 0 {
					pl = int(d3 & 0x7fff)
				}
			}
			if pl != len(data) && pl != len(data)+4 {
				t.Fatalf("PL %d for a %d-byte frame", pl, len(data))
			}
		}
	})
}

// FuzzTxDescriptor: any descriptor contents are sent or refused with a fault,
// never a panic, and the descriptor is handed back or left for a later tail.
func FuzzTxDescriptor(f *testing.F) {
	f.Add(uint64(0), uint32(60), uint32(0xb0000000|60))
	f.Add(uint64(1<<40), uint32(0xffffffff), uint32(0xffffffff))
	f.Add(uint64(0), uint32(0), uint32(0x80000000))
	f.Add(uint64(3), uint32(0x80000000|100), uint32(0xa0000000|100))
	f.Fuzz(func(t *testing.T, addr uint64, des2, des3 uint32) {
		r := newRig(t, testCfg())
		r.bringUp()
		tx := r.setupTx(0, 4)
		r.m.SetTransmit(func([]byte) {})
		if addr < 4*bufSize {
			addr += tx.bufs.IOVA
		}
		d := tx.ring.CPU[0:16]
		binary.LittleEndian.PutUint32(d[0:], uint32(addr))
		binary.LittleEndian.PutUint32(d[4:], uint32(addr>>32))
		binary.LittleEndian.PutUint32(d[8:], des2)
		binary.LittleEndian.PutUint32(d[12:], des3)
		tx.tail = 1
		tx.kick()
		cur := r.Rd(tCh(0) + tCurTx)
		if cur != uint32(tx.ring.IOVA) && cur != uint32(tx.ring.IOVA)+16 {
			t.Fatalf("current descriptor 0x%x after one descriptor", cur)
		}
		if got := tx.des3(0); cur != uint32(tx.ring.IOVA) && got&tOWN != 0 {
			t.Fatalf("descriptor consumed but OWN still set: 0x%08x", got)
		}
	})
}
