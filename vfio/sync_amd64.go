package vfio

// archSync is the cache maintenance Type1Allocator.Sync performs by default. On
// x86 DMA is cache coherent (PCIe snoops the CPU caches), so there is nothing to
// do.
var archSync = noSync
