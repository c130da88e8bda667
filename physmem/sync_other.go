//go:build !arm64

package physmem

import "github.com/xnic-dev/xnic/dma"

// archSync does nothing off arm64: on amd64 DMA snoops the CPU caches. (Other
// architectures would need their own cache maintenance; xnic's physical path
// targets arm64 SoCs.)
func archSync([]byte, dma.SyncDir) {}

// writebackGranule is 0: DMA snoops the caches, no line is ever written back
// over the device's data.
const writebackGranule = 0
