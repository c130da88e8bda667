package physmem

import (
	"math/bits"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// TestArm64CacheGeometry: the line sizes read from CTR_EL0 are what the
// architecture allows (DminLine: 4 << 0..15 bytes, in practice 16-2048; CWG 0
// or 4 << 1..9), so the maintenance loops step by a sane power of two. Under
// qemu-user the register is that of QEMU's CPU model.
func TestArm64CacheGeometry(t *testing.T) {
	ctr := readCTR()
	if ctr>>31&1 != 1 {
		t.Fatalf("CTR_EL0 %#x: bit 31 (RES1) clear, not a CTR_EL0 read", ctr)
	}
	if dcacheLine < 16 || dcacheLine > 2048 || bits.OnesCount(uint(dcacheLine)) != 1 {
		t.Fatalf("data cache line %d from CTR_EL0 %#x", dcacheLine, ctr)
	}
	if writebackGranule < int(dcacheLine) || writebackGranule > 2048 || bits.OnesCount(uint(writebackGranule)) != 1 {
		t.Fatalf("write-back granule %d (line %d) from CTR_EL0 %#x", writebackGranule, dcacheLine, ctr)
	}
	t.Logf("CTR_EL0 %#x: line %d, write-back granule %d", ctr, dcacheLine, writebackGranule)
}

// TestArm64CacheMaintenance runs DC CVAC and DC CIVAC (then DSB SY) over
// ranges of every alignment, including ones that start or end inside a line
// and the last byte of a page: the instructions must execute (a wrong
// encoding is SIGILL, a wrong address a fault) and leave memory as it was.
func TestArm64CacheMaintenance(t *testing.T) {
	buf := make([]byte, 3*4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	line := int(dcacheLine)
	for _, r := range [][2]int{{0, 1}, {1, 1}, {line - 1, 2}, {0, line}, {3, 5 * line}, {4095, 1}, {4096 - line/2, line}, {0, len(buf)}, {17, len(buf) - 17}} {
		b := buf[r[0] : r[0]+r[1]]
		archSync(b, dma.ForDevice)
		archSync(b, dma.ForCPU)
		dcacheCleanRange(b, dcacheLine)
		dcacheFlushRange(b, dcacheLine)
	}
	archSync(buf[:0], dma.ForCPU) // empty: nothing
	for i := range buf {
		if buf[i] != byte(i*7) {
			t.Fatalf("byte %d changed to %#x by cache maintenance", i, buf[i])
		}
	}
}
