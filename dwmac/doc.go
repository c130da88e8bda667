// Package dwmac drives the Synopsys DesignWare Ethernet QoS MAC, versions 4.x and
// 5.x (Linux stmmac's "dwmac4"), from user space through the nic.Device contract,
// in two integrations:
//
//   - Intel mGbE on Elkhart Lake, Tiger Lake, Alder Lake and Raptor Lake: a PCI
//     function (BAR 0), cache-coherent, one MSI/MSI-X vector per DMA channel and
//     direction (RX channel i on vector 2i, TX channel i on 2i+1).
//   - The i.MX8M Plus EQOS: a platform device ("nxp,imx8mp-dwmac-eqos", memory
//     resource 0), not cache-coherent, 34-bit DMA, one interrupt line.
//
// Open follows stmmac's bring-up order: it reads MAC_Version and
// MAC_HW_Feature0-3 and clamps queues, FIFO sizes and the DMA address width to
// them; enables bus mastering (PCI); on Intel SGMII parts powers the SerDes up
// (intel_serdes_powerup; on Alder Lake-S, whose BIOS owns it, refuses a
// SerDes left powered down: serdes.go); finds the PHY and takes it out of
// power-down (a PHY Linux had comes suspended, and stops its RX clock); on
// the i.MX8MP, when the Device tells it (PlatformClocks), learns the
// interface mode and the rate of the RGMII TX clock, which decide the
// speeds the PHY advertises (txclock.go);
// resets the DMA (DMA_Mode.SWR, polled in
// 10 ms steps for 1 s: a reset that never completes means the PHY's RX clock is
// missing, and the error says so); sets the system bus mode (EAME when the DMA
// address width exceeds 32 bits); sets up each DMA channel (PBL, RBSZ, ring
// bases and lengths, tail pointers); the MTL queues (TX enabled, store and
// forward both ways, FIFO split evenly); MAC_RxQ_Ctrl0; MAC_Address0; the MMC
// counters (reset on read); on Intel SGMII parts soft-resets the xPCS and
// programs it for MAC-side SGMII with clause-37 autonegotiation
// (pcs-xpcs.c xpcs_config_aneg_c37_sgmii; a 2.5G SerDes link mode is
// refused); restarts clause-22 autonegotiation on the PHY, waiting a
// bounded time; programs MAC_Configuration with the
// resolved speed and duplex; writes the packet filter; and starts the RX
// channels, then the TX channels.
//
// Rings: the driver writes the tail pointers; the DMA keeps its current
// descriptor pointers. Ownership of each descriptor is its DES3.OWN bit, which
// the driver reads and writes as one atomic 32-bit access (desc_unsafe.go). RX
// descriptors are posted with OWN|BUF1V|IOC (with Config.RxCoalesce, IOC only
// on every Nth frame's, the RX watchdog interrupting for the others:
// coalesce.go); Recv follows OWN == 0 and takes
// frames that fit one descriptor (FD and LD) without an error summary (ES); the
// others are dropped and counted. TX frames take one descriptor each; in a burst
// the first descriptor's OWN is set last. Each Recv and each Send ends with at
// most one tail-pointer write.
//
// TX requests (txmeta.go): each TX queue is a nic.TxMetaQueue. A frame's
// dma.Buf.TxFlags may ask for the L4 checksum (TDES3.CIC = 3, the MAC's
// parsing checksum engine: only where nic.ParseL4 finds the checksum, on
// cores with HW_FEATURE0.TXCOESEL and queues not in Config.NoTxCOEQueues),
// a TX timestamp (TDES2.TTSE; the write-back's TDES0/TDES1 in the PHC's time
// base, collected with TxStamps) and, on queues in Config.LaunchTimeQueues
// (enhanced 32-byte descriptors, DMA_CHx_Tx_Control.EDSE, with
// HW_FEATURE3.TBSSEL), a launch time (ETDES4/5). Send stops at the first frame
// CheckTxMeta refuses; frames that ask for nothing cost one test of TxFlags.
// Stats adds tx_hwtstamp_dropped and tx_hwtstamp_skipped.
//
// FCS: Open sets MAC_Configuration ACS and CST (strip the FCS of every frame) and
// reads the register back: a MAC that keeps them strips the FCS and PL is the
// frame length; otherwise the driver subtracts the 4 FCS bytes itself.
//
// DMA reach: the driver refuses (dma.ErrTooHigh) rings and pools above the
// device's DMA address width (HW_FEATURE1.ADDR64, narrowed to 34 bits on the
// i.MX8MP, and by Config.AddrBits), and TX buffers that Allocator.Check does not
// accept or that lie above it (counted as tx_refused_dma). Cache maintenance:
// every point where stmmac calls dma_sync_* calls Allocator.Sync (a no-op on
// coherent platforms). On a non-coherent platform (the i.MX8MP) the descriptor
// rings live in uncached memory from the allocator's AllocUncached, as
// stmmac's dma_alloc_coherent rings do, and Open refuses an allocator that
// has none (ErrCachedRings): four descriptors share a cache line, and a CPU
// write-back of that line would overwrite the DMA's write-backs (ringmem.go).
//
// Fatal DMA conditions (DMA_CHx_Status FBE, TPS, RPS) are recovered from by
// the queues themselves, as stmmac restarts a channel: an idle Recv, or a
// Reclaim with frames in flight and none done, reads the channel's status
// every 256 such polls, and on a fatal bit the RX and TX sides each reset
// their ring (buffers back to their pools, in-flight frames counted as
// tx_errors, received frames not yet taken as rx_reset_discards) and
// restart, counted in rx_dma_recoveries and tx_dma_recoveries (fatal.go). CheckDMA reports a stopped channel to a caller that asks.
//
// The link comes from the PHY: Link reads BMSR (and the advertisement registers)
// over MDIO and reprograms MAC_Configuration's speed and duplex when they change,
// as phylink does. On the i.MX8MP it first fits the TX clock to the new speed,
// as dwmac-imx's imx_dwmac_fix_speed does, where the clock can be set, and
// otherwise refuses the link: the transmitter off, the link reported down,
// LinkProblem saying why and how to fix it (txclock.go). Intel SGMII boards reach the PHY through the SerDes at MDIO
// address 0x15 and the xPCS at 0x16, both set up by Open (serdes.go).
//
// RX queues: the EQoS core has no RSS (a DWC XGMAC feature: Linux's
// rss_configure exists for dwxgmac2 only, and the EQoS feature registers
// have no RSSEN), so untagged frames land on RX queue 0 and no frame carries
// an RSS hash (RxMeta never reports nic.RxMetaHash). More than one queue
// receives through VLAN priorities (Config.VLANPriorityQueues: MAC_RxQ_Ctrl2/3).
//
// Buffers: RX buffers come from a dma.Pool per RX queue; a buffer on an RX ring
// is OwnerRx, one handed out by Recv is OwnerApp, one on a TX ring is OwnerTx
// and goes back to its own pool when Reclaim sees its descriptor done.
//
// Threads: each queue belongs to one goroutine, which calls Recv / Send /
// Reclaim; control methods (Link, Stats, SetPromisc, SetMulticast, Dump) may run
// on any goroutine. Files: regs.go (registers), desc.go and desc_unsafe.go
// (descriptor layouts and the atomic DES3 access), rx.go, tx.go (rings), phy.go
// (MDIO), serdes.go (the Intel SerDes and xPCS), txclock.go (the i.MX EQOS TX
// clock), driver.go (probe, reset, bring-up), ringmem.go (where rings live),
// txmeta.go (TX requests), ptp.go (the IEEE 1588 clock), stats.go, dump.go,
// ids.go.
package dwmac
