package igb

import "github.com/xnic-dev/xnic/dma"

// Coherent is the optional interface an allocator implements to say that its
// memory needs no Sync: the rings and the TX queues then skip it on the fast
// path (dma.IsCoherent).
type Coherent = dma.Coherent
