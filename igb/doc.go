// Package igb drives Intel's 82576, I350, I210 and I211 Gigabit Ethernet
// controllers from user space, through the nic.Device contract: on a real device
// bound to vfio-pci, on the igbsim device model, or on QEMU's igb model in a VM.
//
// Open resets the device, reads the MAC address, restarts autonegotiation over
// MDIO (on a fiber/SerDes port, powers the SerDes up and negotiates or forces
// 1000BASE-X on the PCS instead, pcs.go; SGMII ports are refused) and sets up
// one to four RX/TX queue pairs with advanced descriptors, RSS
// (spreading flows over the RX queues when there is more than one; the hash is
// in every write-back), and optionally MSI-X interrupts (one vector per queue
// pair, one for link and other causes).
//
// RX metadata (nic.RxMetaPort, for the XDP metadata kfuncs): the RSS hash and
// its enum xdp_rss_hash_type on every port; the 802.1Q tag with
// Config.VLANStrip (CTRL.VME); the receive timestamp with Config.RxTimestamp on
// the I210/I211, whose clock the port also exposes as a nic.PHC (ptp.go). The
// 82576 and I350 get no timestamps and no PHC here: their SYSTIM is a raw
// counter (the 82576 also has no timestamp in the buffer).
//
// TX metadata (nic.TxMetaQueue, AF_XDP's xsk_tx_metadata; txmeta.go): every
// TX queue inserts TCP/UDP checksums for CHECKSUM_PARTIAL requests through
// context descriptors (CsumOffset 16 or 6, CsumStart 34 to 638); the I210/I211
// report TX timestamps in the PHC's time base (one latch per port: frames
// asking while one is in flight complete without, tx_hwtstamp_skipped); the
// I210's queues 0 and 1 hold frames until their launch time with
// Config.LaunchTime (Qav mode, qav.go). Frames that ask for nothing take the
// plain path.
//
// Rings: the driver writes the tail registers (RDT, TDT), the device writes the
// heads (RDH, TDH). The driver never reads a head on the fast path; it follows
// the DD bit the device writes back into each descriptor, reading the status
// dword with one atomic 32-bit load and the rest of the write-back only after it
// (desc_unsafe.go; the kernel's dma_rmb()). Each burst ends with at most one tail
// write per ring. Descriptors are little-endian; big-endian hosts swap after the
// atomic load (endian_*.go), and a GOARCH in neither list does not build.
//
// Buffers: RX buffers come from a dma.Pool per RX queue; a buffer on an RX ring
// is OwnerRx, one handed out by Recv is OwnerApp, one on a TX ring is OwnerTx and
// goes back to its own pool when Reclaim sees its descriptor done. A buffer that
// did not come from a pool whose memory the device's allocator maps is checked
// with dma.Allocator.Check before Send writes a descriptor for it, and refused
// (counted as tx_refused_dma) when the device could not reach it.
//
// Devices differ: QEMU's igb (the VM tier) never sets EECD.AUTO_RD after a
// reset, so its absence is a warning, not an error (Linux carries on too); it
// brings the link up only after the MDIO autonegotiation restart that Open
// always does; it ignores EIAM, so a queue's vector keeps firing until masked
// (ArmIRQ works either way); and it reports the RSS hash only with RXCSUM.PCSD,
// which Open sets. EICR clears when read in MSI-X mode: Dump never reads it.
//
// Threads: each queue belongs to one goroutine, which calls Recv / Send /
// Reclaim; control methods (Link, Stats, SetPromisc, Dump) may run on any
// goroutine. Files: regs.go (registers), desc.go (descriptor layouts), rx.go,
// tx.go (rings), ring.go (their shared set-up), phy.go (MDIO), pcs.go (SerDes
// ports' PCS link), driver.go
// (probe, reset, bring-up), ptp.go (clock and metadata), txmeta.go and qav.go
// (TX requests), stats.go, dump.go,
// ids.go (PCI IDs), desc_unsafe.go
// (atomic status loads), coherent.go (Sync skipped on the fast path for
// allocators that say they are coherent).
package igb
