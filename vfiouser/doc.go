// Package vfiouser is the server side of the vfio-user protocol (QEMU's
// docs/interop/vfio-user.rst, protocol version 0.1): it serves one of xnic's PCI
// device models (a sim.Device: igbsim's 82576/I350/I210, dwmacsim's Intel mGbE
// variants) to a vfio-user client such as QEMU's vfio-user-pci, so that a guest
// kernel's own driver (Linux igb, stmmac/dwmac-intel) drives the model.
//
// # What the server presents
//
// A PCI function (DEVICE_GET_INFO: PCI, reset supported, 9 regions, 5 IRQ
// indexes) with:
//   - region 0, BAR0: the model's register window, every access a message that
//     becomes the model's Read32/Write32 (see region.go for how 1-, 2- and 8-byte
//     accesses are split or refused);
//   - region 3, BAR3: the MSI-X table and PBA;
//   - region 7: a 4096-byte configuration space with the model's IDs and
//     command register and the capabilities Linux looks for: power management,
//     MSI, MSI-X, PCI Express (see config.go);
//   - IRQ indexes INTx (automasked, and held while the command register's
//     Interrupt Disable is set), MSI (1 vector) and MSI-X (the model's vectors),
//     signalled through the eventfds SET_IRQS passes; ERR and REQ take one
//     eventfd each, never signalled.
//
// No region is mmappable: every register access reaches the model as a message,
// in order. Guest memory passed with DMA_MAP as a file descriptor is mapped into
// the model's sim.Memory at the client's IOVAs, so the model refuses and logs
// DMA outside what the guest mapped, as it does for a driver in the same
// process. Each descriptor is mapped at the place of its IOVA in an arena, a
// reservation of inaccessible address space per 1 GiB IOVA window
// (sim.Memory.MapArena; see arena.go): behind a guest IOMMU QEMU sends one
// DMA_MAP per 4 KiB page, and IOVA-adjacent pages then form one view for the
// model although they come from unrelated offsets of the guest's memory file.
// DMA_UNMAP removes every mapping inside the range it names (or all, with
// VFIO_DMA_UNMAP_FLAG_ALL), as the kernel's type1 IOMMU does, which QEMU's
// vIOMMU path relies on; the pages become zero pages at once and inaccessible
// again after a grace period.
//
// Memory passed without a descriptor (guest RAM not shared) is given to the
// model as a mirror (sim.Memory.MapMessages; see msgdma.go): every device
// access to it fetches the bytes with DMA_READ, and the bytes the device wrote
// go back with DMA_WRITE before each interrupt and every millisecond. Every
// access is a round trip to the client. A client that does not serve DMA while
// it waits for a register read (QEMU holds its big lock then) gets the
// model's request given up after 50 ms, logged as a fault, instead of a
// deadlock. Session.ReadGuest and WriteGuest reach either kind of memory.
//
// Not implemented: migration (not offered in the capabilities), twin
// sockets, DEVICE_FEATURE, REGION_IO_FDS, dirty page logging; such requests
// get an ENOTSUP reply.
//
// # Running it
//
// In Go: build a model, then serve its device on a socket:
//
//	m, _ := igbsim.New(igbsim.Config{})
//	err := vfiouser.ListenAndServe(ctx, "/tmp/igb.sock", m.SimDevice(), vfiouser.Options{Once: true})
//
// or run "xnic serve --sim igb:82576 --vfio-user /tmp/igb.sock". Then start QEMU
// (10.1 or newer has vfio-user-pci) with its guest RAM in a shared memfd, so
// the server can map it, and the device on that socket:
//
//	qemu-system-x86_64 -machine q35,memory-backend=mem -m 1G \
//	    -object memory-backend-memfd,id=mem,size=1G,share=on \
//	    -device '{"driver":"vfio-user-pci","socket":{"path":"/tmp/igb.sock","type":"unix"}}' ...
//
// (with -numa node,memdev=mem instead of memory-backend= on older machine
// types). Without share=on QEMU passes no descriptors and every device access
// becomes DMA_READ/DMA_WRITE messages: correct, but slow.
//
// # Goroutines
//
// Session.Run answers commands on the caller's goroutine, in order (the
// protocol's "Command Concurrency"); a second goroutine reads the socket, so
// the replies to the server's own DMA_READ/DMA_WRITE requests arrive while a
// command is being handled, and a third writes message-only memory back every
// millisecond. One goroutine per enabled model vector forwards its signals to
// the eventfd (after writing message-only memory back). A client disconnect ends Run: every
// mapping is removed from the model and unmapped, every descriptor closed, the
// model's vectors torn down; the model keeps its state for the next client.
package vfiouser
