// Package dwmacsim is a strict model of the Synopsys DesignWare Ethernet QoS
// 4.x/5.x MAC (dwmac4/5) as a driver sees it through its register window, in
// two integrations: the Intel mGbE (a PCI function, e.g. Alder Lake-S
// 8086:7AAC) and the NXP i.MX8M Plus EQOS (a platform device,
// "nxp,imx8mp-dwmac-eqos", not cache-coherent). It is for testing the dwmac
// driver and the dataplane without hardware.
//
// It is written from the databook's side (register and descriptor layouts as
// Linux's stmmac dwmac4.h, dwmac4_dma.h and dwmac4_descs.h reflect them) and
// never imports
// the driver: a register map shared between the two would let a wrong offset
// pass every test.
//
// # What is modelled
//
//   - Identity: MAC_Version (SNPSVER configurable: 0x52 for ADL, 0x51 for the
//     i.MX8MP), HW_FEATURE0-3 (MII/GMII, MDIO, MMC, 3 extra MAC addresses;
//     FIFO sizes; ADDR64 = 40 bits; a 64-bin hash table; queue and channel
//     counts, RX and TX apart: an Intel part's as dwmac-intel configures its
//     PCI ID (intel.go, e.g. 6 RX and 4 TX on the ADL-S); IEEE 1588
//     timestamps; the TX and RX checksum engines, TXCOESEL and RXCOESEL,
//     unless Config.NoTxCOE/NoRxCOE; time-based scheduling, TBSSEL, on the
//     Intel variant; TCP segmentation offload, TSOEN, on the Intel variant).
//     Split header, VLAN or L3/L4 filtering are not advertised, and using
//     them is a fault.
//   - TSO (tso.go): the MSS from DMA_CH_Control or a context descriptor
//     with TCMSSV; a TSE frame (headers in buffer 1, THL, TPL) leaves as
//     MSS-sized TCP segments over IPv4 or IPv6 with their lengths, IPv4
//     IDs, sequence numbers, FIN/PSH/CWR and checksums rewritten; UDP
//     (THL 2, Linux's USO) as datagrams of MSS bytes.
//   - RX checksum offload (rxcoe.go): with MAC_Configuration.IPC, payload
//     type and IP header/payload checksum results in RDES1 (RS1V); the MTL
//     drops checksum-error frames unless MTL_RxQ_Operation_Mode.DIS_TCP_EF.
//   - TX requests per frame: checksum insertion (TDES3.CIC 1-3, coe.go) on a
//     copy of the frame, with the IHE/PCE write-back errors; TX timestamps
//     (TDES2.TTSE, written back with TTSS in DES0/DES1 from the system
//     time); launch times in enhanced descriptors (DMA_CH_Tx_Control.EDSE,
//     ETDES4/5), the frame held until the system time reaches them (tbs.go).
//   - No RSS, because the EQoS core has none (rss.go): RSS is a DWC XGMAC
//     block, whose registers at 0xc80-0xc8c are the EST gate-control list and
//     reserved words here. Any access there is a fault saying so, and the
//     model hashes and steers nothing: untagged frames go to RX queue 0.
//   - IEEE 1588 (ptp.go): the system time at 0xb00 in model time, and with
//     TSENALL a context descriptor with every received frame's timestamp;
//     MAC_VLAN_Tag EVLRXS/EVLS-always report and strip the outer C-VLAN tag
//     into RDES0 (RS0V).
//   - Reset: DMA_Mode.SWR resets every MAC, MTL, DMA and MMC register (the
//     MAC address registers become all ones: read the firmware's address from
//     MAC_Address0 before the reset). SWR reads 1 until Config.ResetDelay has
//     passed and the PHY's RX clock runs; with Config.NoRxClock, or the PHY in
//     power-down (BMCR.PDOWN), it never clears, the well-known bring-up
//     failure. While it is set, every access but a read of DMA_Mode is a fault.
//     Device().Reset (FLR) resets the same registers at once and restores the
//     firmware's MAC address.
//   - PHY and MDIO: a sim.PHY answers clause 22 at Config.PHYAddr through
//     MAC_MDIO_Address/Data (GB stays set for one read: poll it); other
//     addresses read 0xFFFF. The Intel variant has an xPCS at 0x16 (clause 45:
//     ID 0x7996ced0 in MMD 31, soft reset, AN status mirroring the PHY) and
//     a SerDes at 0x15 (serdes.go). The
//     link is up only after software restarts autonegotiation, and the MAC
//     passes frames only when MAC_Configuration's PS/FES match the PHY's speed.
//   - What is around the MAC (soc.go): on SGMII Intel parts nothing passes
//     while the SerDes is not powered (and the DMA reset lacks its RX clock)
//     or the xPCS is not in MAC-side SGMII with clause-37 autonegotiation;
//     on the i.MX8MP with a sim.Board (Config.Board), a register access with
//     a gated clock or a refused /dev/mem mapping is a bus-error fault
//     ("real hardware hangs here"), a PHY in reset answers 0xFFFF and gives
//     no RX clock, and a TX clock off the link's rate garbles what is sent
//     (RGMII; on an RMII or MII phy-mode the clock does not follow the speed
//     and nothing leaves at 1000 Mb/s). Its Device then also tells a driver
//     the node's phy-mode and the "tx" clock's rate, and sets the rate where
//     the board's kernel makes clk_rate writable (socclock.go).
//     Config.Left starts the device as Linux's stmmac leaves it (PHY and
//     SerDes powered down, xPCS at reset, interrupts masked, stale rings,
//     gated clocks, PHY in reset).
//   - Receive: MAC_Configuration.RE; size checks (60 to 1514 bytes without
//     FCS, +4 tagged, 1996 with 2K, 9014 with JE); the address filter
//     (MAC_Packet_Filter PR, RA, PM, DBF, HMC with the 64-bin hash, HPF;
//     perfect match on MAC_Address0-3 with AE; the pair latches on the low
//     word's write); MAC_RxQ_Ctrl0 queue enables (a frame for a disabled queue
//     is dropped and counted); MTL_RxQ_DMA_Map; RX DMA into the channel's ring
//     with write-back (see rx.go), RBU when out of descriptors, RI on IOC or
//     the RX watchdog. The FCS stays in the buffer and RDES3.PL unless
//     MAC_Configuration.CST (type frames) or ACS (length frames) strips it:
//     stmmac leaves both clear and strips the 4 bytes itself.
//   - Transmit: tail-pointer driven TX DMA (see tx.go) through MTL TX queue c
//     (TXQEN must be 2), MAC_Configuration.TE, padding to 60 bytes.
//   - DMA channels at 0x1100 + 0x80*n: Control, Tx/Rx_Control (ST, SR, RBSZ),
//     descriptor list addresses (high words only with DMA_SysBus_Mode.EAME),
//     tail pointers, ring lengths (N-1), Interrupt_Enable (NIE/AIE at bits
//     16/15 before 4.10, 15/14 from 4.10), Rx watchdog, current descriptor and
//     buffer registers, Status (write 1 to clear), Miss_Frame_Cnt;
//     DMA_Interrupt_Status and DMA_Debug_Status0/1 derived from them.
//   - Interrupts: per-channel vectors with DMA_Mode.INTM = 1 on the Intel
//     variant (RX channel i on MSI-X vector 2i, TX on 2i+1), one vector
//     otherwise (see irq.go).
//   - MMC counters at 0x700 (frame, octet, cast and size counters both ways;
//     MMC_Control reset, reset-on-read, freeze, stop-at-max).
//   - Tail pointers: the databook's rule (descriptors from the current pointer
//     up to one before the tail are the DMA's; it suspends when the current
//     pointer reaches the tail, or at a descriptor without OWN with TBU/RBU;
//     a tail write resumes it), compared as addresses so that stmmac's RX
//     init tail of base + N*16 hands over the whole ring (see dma.go).
//   - Memory: sim.Memory with IOVAs above 4 GiB (so a driver that forgets EAME
//     or truncates to 32 bits points the device at nothing), limited to 40
//     address bits (34 on the i.MX8MP); Config.NonCoherent gives the device its
//     own copy of memory, reconciled only by Sync, as the i.MX8MP needs.
//
// # Strictness
//
// The model records a fault (see sim.Faults) and refuses the access for:
// register access while SWR is in progress; starting a channel (ST/SR) before
// its descriptor list address and ring length are set, with a ring that is
// not mapped, crosses 4 GiB, or has high address bits while EAME is off; an RX
// start with RBSZ 0 or not a multiple of 16; a descriptor list address not
// 16-byte aligned (the databook ignores the low 2, 3 or 4 bits for a 32-, 64-
// or 128-bit bus: the model takes the strictest, 16, which is also the
// descriptor size); ring registers or RBSZ changed while the direction runs;
// EAME changed while a channel runs; a tail pointer outside [base, base+N*16]
// or off a descriptor boundary, or written before the descriptor list address
// (a tail written before the ring length, as stmmac does, is checked when the
// length is written and when the channel starts); a TX or RX buffer
// address with high bits while EAME is off; DMA outside the mapped IOVAs or
// while bus mastering is off (PCI), which also stops the channel with FBE;
// descriptors the model refuses (see tx.go and rx.go: OWN without FD or BUF1V,
// buffer length 0, FL mismatch, unmodelled features, launch times it cannot
// honour); checksum insertion the engine cannot carry out (coe.go: no TSF,
// a frame beyond the queue's FIFO, not IP, a malformed IP header or length); TX with TXQEN not 2;
// TXQEN 1 (AV); a TxPBL/RxPBL other than 1, 2, 4, 8, 16 or 32; descriptor
// skip (DSL), split header or TSO in the channel controls; EDSE changed
// while the channel runs; HUC, DAIF, VTFE or IPFE in the packet filter, SA/MBC in a MAC
// address, loopback (LM); INTM = 1 on the i.MX8MP (only macirq is wired); interrupt
// enable bits of the other core version's layout; MDIO accesses while GB is
// set; an interrupt on a vector EnableMSIX did not set up (when none is set
// up, as for a polling driver, messages go nowhere without a fault); writes to
// read-only registers; and any access to a register the model does not
// implement (reads 0).
//
// # Concurrency
//
// Register accesses, Inject and transmission are safe from any goroutine:
// register state is under one mutex, and transmission runs on the device side
// (a sim.Sched, Config.Sched) a few microseconds after the tail write, never
// inside it, with that mutex released while frames are on the wire (a second
// mutex keeps transmissions in order). So a TX buffer reused before the
// write-back clears OWN goes out with its new bytes. Model.Settle finishes the
// pending transmissions at once (tests); Model.Err names the schedule's seed. The per-frame paths
// (Inject, TX tail writes) do not allocate.
package dwmacsim
