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
// the model's sim.Memory at the client's IOVAs (sim.Memory.MapExternal), so the
// model refuses and logs DMA outside what the guest mapped, as it does for a
// driver in the same process. DMA_UNMAP removes every mapping inside the range
// it names (or all, with VFIO_DMA_UNMAP_FLAG_ALL), as the kernel's type1 IOMMU
// does, which QEMU's vIOMMU path relies on. Memory passed without a descriptor is reachable
// only by DMA_READ/DMA_WRITE messages (Session.ReadGuest/WriteGuest), not by the
// model's own direct accesses. Not implemented: migration (not offered in the
// capabilities), twin sockets, DEVICE_FEATURE, REGION_IO_FDS, dirty page
// logging; such requests get an ENOTSUP reply.
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
// types). Without share=on QEMU passes no descriptors and the model sees no
// guest memory.
//
// # Goroutines
//
// Session.Run reads and answers commands on the caller's goroutine, in order
// (the protocol's "Command Concurrency"). One goroutine per enabled model vector
// forwards its signals to the eventfd. A client disconnect ends Run: every
// mapping is removed from the model and unmapped, every descriptor closed, the
// model's vectors torn down; the model keeps its state for the next client.
package vfiouser
