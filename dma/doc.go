// Package dma describes memory that both the CPU and a device can reach, and the
// fixed-size frame buffers that drivers put on their descriptor rings.
//
// A Region has two views of the same bytes: CPU, a []byte the Go program reads and
// writes, and IOVA, the address the device uses for CPU[0]. An Allocator hands out
// Regions; there is one per way of reaching a device: VFIO type1 (package vfio), the
// physical-address path for SoCs without an IOMMU, and the device models (package sim).
//
// A Pool carves one Region into frames of a fixed size (2 KiB by default) with
// Headroom bytes in front of the data, as XDP_PACKET_HEADROOM in the kernel, so
// programs can grow the frame at its head. Every Buf has exactly one owner at a time
// (see Owner); the pool counts what it handed out so a test can prove that nothing
// leaked after a run.
package dma
