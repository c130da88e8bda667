//go:build amd64 || 386

package physmem

import "github.com/xnic-dev/xnic/dma"

// canSync is true: on x86 DMA snoops the CPU caches, so there is nothing to
// maintain and cached memory is coherent with the device as it is.
const canSync = true

// archSync does nothing on x86: DMA snoops the CPU caches.
func archSync([]byte, dma.SyncDir) {}

// writebackGranule is 0: DMA snoops the caches, no line is ever written back
// over the device's data.
const writebackGranule = 0
