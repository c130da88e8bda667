// Package vfiousertest is a minimal vfio-user client for tests: it speaks the
// client side of the protocol (QEMU's docs/interop/vfio-user.rst) over a Unix
// stream socket, passes file descriptors (memfds for DMA, eventfds for
// interrupts) and answers the server's DMA_READ and DMA_WRITE from memory the
// test registers. It checks the server from the outside, the way QEMU's
// vfio-user-pci would drive it, and also gives tests memfd and eventfd helpers.
package vfiousertest
