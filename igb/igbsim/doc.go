// Package igbsim is a strict model of the Intel 82576, I350 and I210/I211
// Ethernet controllers as a driver sees them through BAR0, for testing the igb
// driver and the dataplane without hardware.
//
// It is written from the datasheet's side (82576 and I210 datasheets, with facts
// cross-checked against Linux's e1000_regs.h/e1000_defines.h/e1000_82575.h and
// QEMU's igb model) and never imports the driver: a register map shared between
// the two would let a wrong offset pass every test.
//
// # What is modelled
//
//   - Reset: CTRL.RST (and CTRL.DEV_RST) resets every register; the reset lasts
//     Config.ResetDelay, during which CTRL reads RST, EECD.AUTO_RD reads 0 and
//     register writes are faults. RAL0/RAH0 come back with the factory MAC and AV.
//     A function-level reset (Device().Reset) does the same but is over when it
//     returns, as VFIO_DEVICE_RESET waits for the function.
//     CTRL.GIO_MASTER_DISABLE clears STATUS.GIO_MASTER_ENABLE at once and blocks
//     DMA. EERD reads a small NVM image (MAC in words 0-2, checksum 0xBABA;
//     on the I350 each port's LAN section; EECD.EE_SIZE_EX gives its 2048
//     words); the flash-less I211/I210 SKUs report no flash and hold the MAC
//     in iNVM word autoload records (variant.go).
//   - Per variant, what Linux's igb touches there (variant.go): PHPM and
//     TSSDP on the I350 and I210 (D0 LPLU, GO_LINKD and SDP functions
//     refused), RQDPC cleared by writing on the I210/I211 (clear-on-read
//     elsewhere), the I350's DVMOLR, TXSWC and LVMMC.
//   - IEEE 1588 clocks (ptp.go): the I210's (SYSTIMH seconds, SYSTIML
//     nanoseconds) and the I350's in the 82580's 40-bit nanosecond count
//     (ptp_82580.go), both run at 8 ns per 8 ns plus TIMINCA, latched by a
//     SYSTIMR read; RX timestamps in the buffer (SRRCTL.TIMESTAMP) and TX
//     timestamps in TXSTMPL/H. The 82576's clock is not modelled.
//   - PHY and link: MDIC reaches a sim.PHY at address 1 (READY after the device
//     side's latency; ERROR for another address; an MDIC write before READY is
//     a fault). The link comes up only after software restarts
//     autonegotiation through MDIC and Config.AutonegDelay has passed, and
//     STATUS.LU also needs CTRL.SLU. Link changes raise ICR.LSC.
//   - As Linux leaves it (Config.Left, left.go): the PHY powered down
//     (igb_power_down_link), interrupts masked, stale ring registers,
//     CTRL_EXT.DRV_LOAD clear, on SerDes ports the SerDes shut down
//     (igb_shutdown_serdes_link_82575: PCS disabled, laser off);
//     CTRL_EXT.LINK_MODE after reset is SerDes on the fiber/SerDes IDs and
//     SGMII on the SGMII IDs, as their NVMs set it.
//   - SerDes ports (pcs.go): the link is the PCS's, 1000BASE-X only, clause-37
//     negotiation or forced (Config.SerDesPartnerForced, NVMPCSAutonegOff,
//     Backplane: LINK_MODE 1000BASE-KX),
//     PCS_LSTAT/LPAB as the datasheet gives them; MDIC reaches no PHY (a
//     fault); LINK_MODE changes, other speeds and frames sent with the PCS
//     disabled or the laser off are faults. SetSerDesSignal lights the fiber.
//   - Receive: RCTL (EN, UPE, MPE, BAM, LPE, SECRC, MO), RAL/RAH (24, 32 or 16
//     entries), MTA, RLPML; queues at 0x2800+0x100n (0-3) and 0xC000+0x40n (all),
//     advanced one-buffer descriptors only; frames larger than a buffer are split
//     over several descriptors; frames that find too few free descriptors are
//     dropped and counted in MPC, RNBC and RQDPC; undersize and oversize frames
//     count in RUC and ROC; InjectBadFCS counts CRCERRS. RSS: MRQC (MRQE 2 with RXCSUM.PCSD, as the hardware
//     needs for the hash to reach the descriptor), RSSRK, RETA; the Toeplitz hash
//     over IPv4/IPv6 addresses and TCP/UDP ports goes into the write-back.
//   - Transmit: queues at 0x3800+0x100n and 0xE000+0x40n, advanced data
//     descriptors; TDT starts transmission on the device side's time (below);
//     DD is written back where RS is set; PSP pads short frames to 60 bytes.
//     Context descriptors load the queue's two context slots; POPTS.TXSM has
//     the frame leave with its TCP/UDP checksum summed from the context's
//     MACLEN+IPLEN (the buffer itself is not written); MAC.TSTAMP latches the
//     transmit time in TXSTMPL/H (I210 and I350); the I210's Qav SR queues with
//     TQAVCTRL.DataTranTIM hold each frame until SYSTIML reaches its context's
//     LaunchTime (txoffload.go, qav.go).
//   - Interrupts: GPIE (MSIX_MODE, EIAME), IVAR (82576 layout for the 82576,
//     82580 layout for the I350 and I210), IVAR_MISC, EICR (read clears, write 1
//     clears), EICS, EIMS/EIMC, EIAC auto-clear, EIAM auto-mask, EITR minimum
//     interval, ICR/IMS/IMC for link changes; vectors are signalled through the
//     sim.Device's MSI-X IRQs.
//   - Statistics at their real offsets (0x4000-0x415C), clear on read; the
//     64-bit octet counters clear when their high half is read.
//
// Queue enables (RXDCTL/TXDCTL.ENABLE) read back set as soon as they are written.
//
// # Strictness
//
// The model records a fault (see sim.Faults) and refuses the access for: a ring
// base not 128-byte aligned; a ring length of 0 or not a multiple of 128; a head
// or tail written beyond the ring; a queue enabled before its base and length
// were written, or with an unmapped ring, legacy descriptors or a zero buffer
// size; ring registers changed while the queue is enabled; DMA while bus
// mastering is off; any descriptor or buffer address outside the mapped memory;
// a register write during reset; TX descriptors of length 0, frames over 9728
// bytes, legacy or unknown descriptor types, missing IFCS, a PAYLEN that is not
// the frame length, TSO or VLAN insertion; context descriptors and offload
// requests the hardware refuses or would get wrong (see txoffload.go); an interrupt on a vector that was not
// enabled; and any access to an offset the model does not implement (reads 0).
//
// # Concurrency
//
// The device side runs on a sim.Sched (Config.Sched): transmission and MDI
// cycles finish a few microseconds after the register write that asked for
// them (seeded random latencies, on a background goroutine or at a later
// register access), never inside it, so a TX buffer reused before DD goes out
// with its new bytes and an MDIC command before READY is caught. An event fires
// only the EICR causes it newly sets: a cause left set (no EIAC, not cleared)
// raises no new message. Model.Settle finishes the pending work at once
// (tests); Config.Sched.Sync runs it inside the write (benchmarks); Model.Err
// names the schedule's seed.
//
// Register accesses, Inject and transmit are safe from any goroutine: register
// state is under one mutex, and transmission runs on the device side with that
// mutex released while frames are on the wire (a second mutex keeps
// transmissions in order), so two models joined by a synchronous wire cannot
// deadlock. The per-frame paths (Inject, TDT) do not allocate.
//
// Translation: a TDT pass, and an InjectBurst, translates each descriptor ring
// it uses once (like an IOTLB filled for the pass) when all of the ring is
// mapped, and otherwise each descriptor on its own, so an unmapped descriptor
// faults as before. Inject translates its RX descriptor alone, and buffers are
// translated per access: sim.Memory has no unmap signal that would let a
// translation outlive one pass safely.
package igbsim
