// Package fecsim is a strict model of the NXP FEC/ENET Ethernet MAC as a driver
// sees it through its register window: the multi-queue ENET of the i.MX8M Plus
// ("fsl,imx8mp-fec": three RX and three TX rings, gigabit, enhanced BDs) and the
// single-ring i.MX6/7-class ENET ("fsl,imx6q-fec"). It exists to test the fec
// driver and the dataplane without hardware.
//
// It is written from the reference manual's side (the i.MX 8M Plus and i.MX 6
// reference manuals' ENET chapter, cross-checked against Linux's fec.h/fec_main.c and QEMU's hw/net/imx_fec.c)
// and never imports the driver: a register map shared between the two would let
// a wrong offset pass every test.
//
// # The device
//
// Model.Device is a platform nic.Device: Info().Bus is "platform" with the
// devicetree compatible; ReadConfig/WriteConfig return nic.ErrNotSupported;
// EnableBusMaster does nothing (there is no bus-master bit: DMA is always on);
// EnableMSIX hands out the interrupt lines (4 on the i.MX8MP, GIC SPI 118-121;
// 1 on the i.MX6). The register window is 16 KiB and takes aligned 32-bit
// accesses only: the window's Read8/16/64 and Write8/16/64 exist only to be
// refused. DMA memory (sim.Memory) lies below 4 GiB (legacy BDs hold 32-bit
// addresses) and is non-coherent unless Config.Coherent: the device sees only
// what the driver synced, as on the i.MX8, whose ENET is not cache-coherent.
// Config.HighMemory places memory above 4 GiB instead, as on a board whose
// hugepages landed high: every BD address then misses.
//
// A Sync(ForDevice) copies the whole range it names, so a driver that cleans a
// whole ring after writing a few BDs overwrites the BDs the device wrote since
// with its own stale copies. On the i.MX8 the same happens to BDs that share a
// dirty cache line with the CPU's writes (eight legacy BDs per 64-byte line),
// which is why Linux keeps FEC rings in uncached memory: sync exactly the BDs
// written, or use uncached ring memory.
//
// # What is modelled
//
//   - Reset values as QEMU's imx8mp reports them (ECR 0xf0000000, MIBC
//     0xc0000000, RCR 0x05ee0001 with LOOP set, OPD 0x00010000, FTRL 0x7ff,
//     PALR/PAUR holding Config.MAC). ECR.RESET resets every register, the
//     rings and the MIB at once, on both variants (Linux avoids it on
//     multi-queue parts and writes ECR = 0 instead, which just clears
//     ETHEREN). Device().Reset does the same.
//   - ECR: ETHEREN (its rising edge checks RCR.MII_MODE and that RCR's
//     RGMII/RMII selection matches the board, else it is refused; clearing it
//     stops both directions and moves every ring back to RDSR/TDSR), SPEED,
//     DBSWP (little-endian BDs when set, big-endian otherwise: a
//     little-endian driver that forgets it sees no empty or ready BD), EN1588
//     (32-byte enhanced BDs instead of 8-byte ones).
//   - MDIO: MMFR clause-22 frames (ST 01, OP 01 write / 10 read, PA, RA, TA
//     10) reach the sim.PHY at Config.PHYAddr on this MAC's bus (its own,
//     and those of models wired here with Config.PHYOnBusOf; a PHY wired to
//     another MAC's bus is not on its own) and complete on the device side's
//     time (see below) with EIR.MII; other addresses read 0xffff. Clause 45 on the i.MX8MP completes
//     with nothing answering. MSCR[7:0] must be non-zero for a frame to go out;
//     the write of MSCR from 0 while MMFR is non-zero raises a spurious MII
//     event, as the hardware does (Linux FEC_QUIRK_CLEAR_SETUP_MII).
//   - Rings: RDSR/TDSR/MRBR per ring (rings 1-2 only on the i.MX8MP),
//     RDAR/TDAR per ring. RX: E/L/W, length including the 4-byte FCS and
//     the 2 SHIFT16 bytes (RACC.SHIFT16), frames spanning BDs of MRBR bytes,
//     BC/MC/M/LG/TR flags, RCR.CRCFWD/PADEN stripping the FCS, FTRL
//     truncation, address filter (PALR/PAUR, IAUR/IALR and GAUR/GALR hashes,
//     PROM, BC_REJ), VLAN-priority classification into rings 1-2 by
//     RCMR1/RCMR2. RDAR reads set while the next BD is empty; when the ring
//     runs out it clears and frames are dropped and counted in IEEE_R_DROP
//     until RDAR is written again. TX: R/L/TC/ABC/W, frames spanning BDs,
//     TACC.SHIFT16, TCR.ADDINS, padding of short frames to 60 bytes with TC,
//     transmission on the device side's time after the TDAR write with R
//     cleared after sending (a running ring picks up BDs made ready meanwhile;
//     an idle ring fetches its first BD at the TDAR write, so one that is
//     ready only in the CPU's cache leaves TDAR clear and nothing sent), TCR.GTS holding transmission and raising
//     EIR.GRA, RCR.LOOP looping frames back into the receiver. Enhanced BDs:
//     esc.INT gates the RXB/RXF/TXB/TXF events, BDU is written, RX gets a
//     timestamp and the VLAN flag, TX esc.TS timestamps (the 1588 counter
//     in the BD's ts word and ATSTMP, EIR.TS_AVAIL).
//   - The TX checksum accelerator (csum.go): esc.PINS/IINS per frame, or
//     TACC.PROCHK/IPCHK for every frame, insert the TCP/UDP and IPv4 header
//     checksums into the frame on the wire (sim.InsertFull), for Ethernet
//     with at most one VLAN tag, IPv4 (no fragment) or IPv6 without
//     extension headers; it needs TFWR.STRFWD and TC, and adds a field not
//     cleared into its sum, as the RM warns.
//   - Interrupts: EIR (write 1 to clear) and EIMR with per-ring RXF/TXF/RXB/TXB
//     (ring 1 bits 1/3/0/2, ring 2 bits 5/7/4/6), MII, GRA, BABT, UN,
//     TS_AVAIL; lines signalled as described in irq.go. Coalescing registers
//     (TXIC/RXIC) are stored and have no effect.
//   - MIB counters at 0x200-0x2e0 (packets, octets, broadcast, multicast,
//     size buckets, undersize, oversize, CRC, IEEE_R_DROP, frame OK): they
//     count only while MIBC.MIB_DIS is clear (it is set at reset), never
//     clear on read, may be written only while MIB_DIS is set, and read 0 while
//     MIBC.MIB_CLEAR is set.
//   - The 1588 timer (ATCR EN/PEREN/CAPTURE/RESTART, ATVR, ATPER, ATINC with
//     the ATCOR correction) runs in model time at the timer clock (timer.go).
//   - The SoC (soc.go): with Config.Board (a sim.Board), a register access
//     while the ipg or ahb clock is gated, or through a /dev/mem mapping the
//     board refuses or revoked, is a bus-error fault ("real hardware hangs
//     here") and fails (all ones, lost write); a PHY held in reset answers
//     0xffff on MDIO and has no link. Config.Left starts the ENET as Linux's
//     fec leaves it (PHY powered down or in reset, clocks gated, interrupts
//     masked, stale ring registers).
//
// # The device's time
//
// The device side runs on a sim.Sched (Config.Sched): a TDAR write, an MMFR
// frame and ECR.RESET finish a few microseconds later (seeded random
// latencies), on a background goroutine or at the driver's next register
// access after that time, never inside the write. So the model catches what a
// model that works inside the write lets pass:
//
//   - R set before the rest of a BD is written: a running ring fetches the BD
//     when it gets to it (a fault for the address, or the wrong bytes sent);
//   - a TX buffer reused before R clears: the device reads it later, and the
//     new bytes go on the wire;
//   - MMFR written while the last frame is still clocked out (EIR.MII not yet
//     set): a fault, the write is refused;
//   - any register access but a read of ECR while ECR.RESET is in progress
//     (1-8 us, inside the 10 us Linux waits): a fault, the access is lost;
//   - ERR007885 (i.MX8MP; Linux FEC_QUIRK_ERR007885): a TDAR write while TDAR
//     reads 1 is the erratum's race with the uDMA clearing it, which hangs
//     the transmit state machines: a fault, and the ring stops until ETHEREN
//     clears. The work-around (write only after a read returns 0) is exact;
//   - ERR006358 (i.MX6; Linux FEC_QUIRK_ERR006358): once the device found no
//     ready BD it clears TDAR at its next step even if TDAR was written
//     meanwhile, so the frame waits until a driver that sees TDAR read 0 with
//     BDs ready writes it again.
//
// Interrupts follow EIR: a bit left set raises no new signal when its event
// recurs. Model.Settle finishes all pending device work at once (tests);
// Config.Sched.Sync finishes it inside each register access (benchmarks).
// Model.Err names the schedule's seed (XNIC_SIM_SEED reruns it).
//
// Not modelled: RX checksum checking (prot is written 0), pause frames, EEE,
// credit-based shaping, wake-on-LAN, half-duplex collisions, the FIFO
// thresholds (stored only), interrupt coalescing timers. Reception runs on
// the goroutine that delivers the frame (the wire's), at the moment it
// arrives.
//
// # Strictness
//
// The model records a fault (see sim.Faults) and refuses the access or command
// for: a register access after Close, not 32 bits wide, unaligned or outside
// the window; an offset the variant does not have (reads 0); a write to a
// read-only register (ATSTMP) or to a MIB counter while the MIB counts;
// RDSR/TDSR not 8-byte aligned or written while ETHEREN is set; MRBR zero, not
// a multiple of 16 or written while ETHEREN is set; ETHEREN with a bad RCR
// (above); EN1588/DBSWP/SPEED changed while ETHEREN is set; TDAR or RDAR
// written while ETHEREN is clear; RDAR with MRBR unset; TDAR1/2 with the
// ring's DMA_CFG.DMA_CLASS_EN clear; an MMFR frame with MSCR's MII_SPEED 0, TA
// other than 10b, a bad ST or OP; a BD or buffer the device cannot reach
// (outside every mapping, above 4 GiB, freed, or not synced — the last shows
// as stale data, not a fault); an RX buffer not 16-byte aligned or with fewer
// than MRBR bytes mapped behind it (the device may write that many); a TX BD of
// length 0; a TX frame longer than RCR.MAX_FL (EIR.BABT); a frame without TC
// whose last 4 bytes are not its FCS; a frame continuing into a BD that is
// not ready without TFWR.STRFWD (EIR.UN); checksum insertion without
// TFWR.STRFWD or with TC clear (the driver's FCS no longer matches); esc.PINS
// or IINS on a frame the accelerator cannot parse (sent without the
// checksum) or with a checksum field not cleared (sent with a wrong one); a MAC speed (ECR.SPEED, RCR.RMII_10T) other than the PHY's or
// TCR.FDEN other than the PHY's duplex when a frame passes; and a BD that is
// empty or ready only in the other byte order when RDAR/TDAR is written (a
// forgotten or wrong ECR.DBSWP). An RDAR write that finds no empty BD is not a
// fault: RDAR just reads back clear, as on the hardware.
//
// # Concurrency and ownership
//
// Register accesses, Inject and transmission are safe from any goroutine:
// register state is under one mutex; transmission runs on the device side
// (its goroutine, or a register access's), reading and writing back each
// frame's BDs under the mutex and handing the frame to the wire with it
// released (a second mutex keeps frames
// in order), so two models joined by a synchronous wire cannot deadlock. The
// driver owns a BD while E (RX) or R (TX) is clear; the device owns it, with its
// buffer, while the bit is set, and the device alone moves the current BD
// pointers. The per-frame paths (Inject, TDAR) do not allocate.
package fecsim
