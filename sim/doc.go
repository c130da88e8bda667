// Package sim holds what the device models (igbsim, dwmacsim, fecsim) share:
// ModelBase (modelbase.go), which each embeds for the accessors around its
// registers (MAC, Memory, PHY, the fault log and injector, Err, Sched,
// Settle, Attach, SetTransmit, SetPaced) and the register paths (ReadReg,
// WriteReg, WriteRegOutOfReset, Unimplemented); DMA memory seen through an IOMMU-like translation that refuses
// stray accesses, a fault log, a PCI-like Device base that implements nic.Device
// (PlatformDevice presents it as a devicetree platform device),
// a clause-22 MDIO PHY (with the vendor register sets the Linux PHY drivers
// use: Marvell 88E1xxx pages through register 22 with the fiber page, Realtek
// RTL8211F pages through register 31; a reset with AN enabled negotiates
// again), and "wires" that carry whole Ethernet frames between a
// model and the outside (an in-memory pair, UDP datagrams compatible with QEMU's
// -netdev dgram, and a pcap-recording tap), with Wire, a model's Attach and
// SetTransmit plumbing onto them.
//
// Board (board.go) is the SoC around an i.MX8M MAC: the kernel driver bound
// to its node, the /proc/iomem claim, runtime PM, each clock's enable count,
// the PHY's reset GPIO and the /dev/mem policy, with Linux's transitions
// (probe, remove, power/control, the GPIO line) and Render, which writes the
// same state as sysfs, debugfs and /proc files under a root directory for a
// preflight to read. The i.MX models ask it before every register access
// (a refusal is a fault with Op OpBusError, and Faults.Err then wraps
// ErrBusError). KernelLeft (board_left.go) names the states a kernel driver
// leaves a device in; each model's Config.Left starts there.
//
// # Strictness
//
// A model that accepts anything proves nothing. Every violation a model detects
// (a DMA outside a live mapping, DMA while bus mastering is off, an unaligned or
// out-of-window register access, a Sync outside its region, ...) is recorded as a
// Fault in a Faults log. The access itself is refused: a refused DMA read yields no
// data, a refused write changes nothing. Tests end with
//
//	require.NoError(t, model.Err())
//
// # Memory
//
// Memory implements dma.Allocator with Go memory at device addresses (IOVAs) it
// assigns: by default from 0x1_0000_0000 up, so code that truncates an IOVA to 32
// bits misses; with Below4G from 0x1000_0000 up with a 4 GiB limit. IOVAs are never
// reused and mappings are separated by at least one unmapped guard page, so an
// overrun or a use after Free faults instead of landing in a neighbour.
//
// The device side (ReadDMA, WriteDMA, View) never takes a lock and never
// allocates: mappings are an immutable sorted snapshot swapped atomically on
// Alloc and Free. In non-coherent mode the device has its own copy of every
// mapping: Sync(ForDevice) copies the CPU's bytes to it and Sync(ForCPU) copies
// the device's bytes back, so a driver that forgets a Sync reads stale data.
// MemoryConfig.Cache replaces that byte-exact copying with a model of a CPU
// cache (cache.go): whole lines cleaned and invalidated, dirty lines evicted
// and clean ones refetched at seeded random moments, so a driver whose CPU
// write-back of a line can overwrite what the device wrote fails. AllocUncached
// gives memory the CPU maps non-cacheable: one copy, seen by both sides.
//
// Another party's memory (a VM's guest RAM served over vfio-user) is mapped at
// the IOVAs that party chose: MapExternal for bytes the caller has mapped,
// MapArena for pieces of one reservation laid out by IOVA (a View may then
// span IOVA-adjacent pieces, never a hole), and MapMessages for memory reached
// only by copies (GuestIO): each View of it fetches first, so it blocks and
// may allocate, and WriteBack sends what the device wrote. Accesses outside
// every mapping are refused and logged as for the driver's own regions.
//
// # The device's time
//
// Sched (sched.go) is a model's device side: work a register write asks for
// (a transmit, an MDIO frame, the end of a reset) becomes due after a seeded
// random latency and runs on a background goroutine or at a later register
// access, never inside the write, so the device can observe memory between
// any two of the driver's accesses. Sync mode (and XNIC_SIM_SYNC=1) runs it at
// the end of the write instead, for benchmarks; XNIC_SIM_SEED fixes the seed.
//
// Timer.ArmReal is due after real time even in sync mode: for what the
// physical world times, a frame's time on the wire.
//
// # The physical world
//
// A Wire carries frames at the line rate its model's PHY negotiated
// (linerate.go, IEEE 802.3: preamble, SFD, frame, FCS and inter-frame gap),
// both ways: Arrive and ArriveBurst hold the far end until a frame has
// arrived, Depart and TxWait keep the model's transmitter within its TX FIFO
// of the wire; the clock is injectable for tests. RxFIFO (rxfifo.go) is a
// MAC's receive FIFO, where frames wait while no descriptor is free and
// overflow into the counter the datasheet names; it totals the frames resets
// flush (Flushed), which with the frames that found the receiver off make
// RxUnseen, a model's count of what no register shows a driver. Injector
// (inject.go) makes
// scheduled device faults happen: sim.Device applies removal, lost and
// storming interrupts, link-down and a dead PHY (devfault.go, phydead.go:
// a dead PHY loops nothing back, PHY.Loopback);
// the models apply the rest (hangs, stalls, bus and descriptor errors) where
// their datasheets say they show.
//
// # Concurrency
//
// Memory, Faults, Device, IRQ, PHY, Sched, Injector and the links are safe
// for concurrent use. Wire's link and sink are guarded by the model's own
// lock, its line-rate state by a lock of its own; RxFIFO by the model's lock.
// A model's register callbacks run on the caller's goroutine; the model serialises
// them itself.
package sim
