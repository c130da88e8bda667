// Package fec drives NXP's FEC / ENET Ethernet MAC from user space through the
// nic.Device contract: i.MX8M Plus, Mini, Nano and Quad (three rings, enhanced
// descriptors, gigabit), i.MX6SX/7D, and the single-ring i.MX6Q/6UL class. The
// device is a physmem.Device (registers from /dev/mem, DMA memory from huge
// pages at physical addresses: these SoCs have no IOMMU for the MAC), the
// fecsim model, or QEMU's imx.enet on the imx8mp-evk machine.
//
// Open follows Linux's fec_restart: reset (ECR = 0 on multi-queue parts, ECR.RESET
// otherwise), MDIO set-up (MSCR from Config.ModuleClockHz; MMFR cleared first
// on CLEAR_SETUP_MII parts), PHY ID and autonegotiation restart over clause-22
// MDIO (completion seen as EIR.MII, with a deadline; through another MAC's
// MMFR when Config.MDIOBus says the PHY is on that MAC's bus, as on the i.MX6UL
// EVK), a wait for the link, then
// MAC address into PALR/PAUR, EIR cleared, rings prepared (every RX descriptor
// empty with a buffer, W on the last), RDSR/TDSR/MRBR, TCR.FDEN, RACC, FTRL,
// RCR (MAX_FL, MII_MODE, RGMII/RMII), TFWR.STRFWD, the hash filters, MIBC,
// ECR (ETHEREN, DBSWP for little-endian descriptors, EN1588 with enhanced
// descriptors, SPEED at 1000 Mb/s), RDAR of each ring, and EIMR.
//
// DMA: the descriptors carry 32-bit buffer addresses. Open refuses an allocator
// whose Limit is 0 or above 4 GiB (dma.ErrTooHigh), and every ring and pool is
// checked to lie below 4 GiB. The MAC is not cache coherent on i.MX8: the
// driver calls Allocator.Sync wherever Linux calls dma_sync_* (or relies on
// coherent memory): before reading a descriptor (ForCPU), after writing one
// (ForDevice), on each RX buffer before posting it (ForDevice) and before
// handing it out (ForCPU), on each TX buffer before posting it (ForDevice).
//
// Rings: there are no head or tail registers. Ownership is a bit in each
// descriptor: E on RX, R on TX, set by the driver (stored last, with one
// atomic 32-bit store of the word holding datlen and sc), cleared by the
// device. The driver follows the bits from its own indices, which only it
// writes; RDAR and TDAR only wake the device. Recv writes RDAR at most once
// (when it posted buffers), Send writes TDAR at most once, under ERR007885
// only when one of four reads of TDAR returns 0; Reclaim re-kicks a ring that
// went idle with descriptors ready. Received frames carry their 4-byte FCS in
// the buffer; Recv cuts it off.
//
// Buffers: RX buffers come from a dma.Pool per ring; a buffer on an RX ring is
// OwnerRx, one handed out by Recv is OwnerApp, one on a TX ring is OwnerTx and
// goes back to its own pool when Reclaim sees R clear. A buffer that did not
// come from a pool the device's allocator maps is checked with
// dma.Allocator.Check and refused (tx_refused_dma) when the device could not
// reach it. A frame whose start is not 16-byte aligned (the ENET's TX DMA
// needs it) is moved down inside its own buffer first (tx_realigned).
//
// Interrupts: none on the physical path (physmem has no way to deliver a
// platform IRQ to a process): queues are polled. With Config.Interrupts and a
// Device that offers one (the model), ring 0's RXF raises it; ArmIRQ clears
// RXF so the next frame raises it again.
//
// Statistics: the MIB counters do not clear when read; Stats accumulates the
// difference between readings, plus the driver's own counters per ring.
//
// Cache lines: the kernel keeps descriptors in uncached (coherent) memory,
// and so does this driver when the allocator is not coherent and offers
// AllocUncached (ringmem.go). Without it the rings are in cached memory with
// explicit maintenance, and one cache line
// holds several descriptors (eight legacy, two enhanced in 64 bytes), so
// cleaning a line the driver wrote would also write back stale copies of
// neighbours the device updated meanwhile. With a cache line configured
// (Config.CacheLine, or the allocator's CacheLine method: physmem reports
// CTR_EL0.CWG on arm64), the rings work in whole lines: RX buffers are posted
// one line at a time once the device is done with all of it, and TX never
// writes a line that holds a descriptor in flight. This costs up to a line
// less one of RX descriptors, and serialises TX bursts smaller than a line.
//
// Link: the FEC has no link register; Link asks the PHY over MDIO. Open
// programs speed and duplex from what the PHY resolved (or 1000/full on RGMII,
// 100/full otherwise, when the link is still down). Link reports the PHY's
// state and ProgrammedLink what the MAC was set up for. The reference manual
// lets TCR.FDEN and the RCR speed bits change only while ECR.ETHEREN is clear,
// which resets the rings, so following a change of speed or duplex is a
// restart (Linux: fec_enet_adjust_link calls fec_restart with NAPI and TX
// stopped): AdjustLink (nic.LinkAdjuster), which the dataplane calls with the
// port's queues parked. A restart, and ResetPort after a TX hang, stop the
// receiver before reading the MIB and count the frames the RX rings held as
// rx_reset_discards (reset.go).
//
// RX metadata (nic.RxMetaPort) with enhanced BDs: the VLAN tag the esc VLAN
// bit flags (read from the frame, which keeps it) and, with
// Config.RxTimestamp, each frame's 1588 timer value extended to 64 bits; the
// timer is the port's nic.PHC (ptp.go).
//
// TX metadata (nic.TxMetaQueue, txmeta.go) with enhanced BDs: per-frame TX
// timestamps (esc.TS; the BD's ts word in the PHC's time base, through
// TxStamps) and L4 checksum insertion (esc.PINS, on variants with the
// accelerator): the ENET finds the TCP or UDP checksum itself, so a request
// must name exactly that field (nic.ParseL4), and Send zeroes the field first
// as Linux's fec_enet_clear_csum does. No launch time: the ENET has none.
// Legacy BDs carry no requests. Stats adds tx_hwtstamp_dropped and
// tx_hwtstamp_skipped.
//
// Not done: no RX checksum offload, coalescing, multicast filters or
// clause-45 MDIO. Not run on real i.MX8 hardware.
//
// Threads: each queue belongs to one goroutine, which calls Recv / Send /
// Reclaim; control methods (Link, Stats, SetPromisc, Dump) may run on any
// goroutine. Files: regs.go (registers), desc.go and desc_unsafe.go
// (descriptor layouts and the atomic word), rx.go, tx.go (rings), phy.go
// (MDIO), driver.go (probe, reset, bring-up), ringmem.go (where rings live),
// txmeta.go (per-frame TX requests), ptp.go (the 1588 timer), stats.go,
// dump.go, ids.go (compatible strings and quirks).
package fec
