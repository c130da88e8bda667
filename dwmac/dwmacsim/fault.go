package dwmacsim

// Injected faults (sim/inject.go), as the DWC EQoS shows them (databook
// "DMA_CH_Status", "Receive/Transmit DMA"):
//
//   - tx-hang: the TX DMA stops fetching: descriptors keep OWN, TI never
//     comes (stmmac's tx timeout finds it); stopping the channel (ST
//     cleared, as stmmac_tx_err does) or a reset clears it;
//   - rx-stall: the RX DMA stops: frames stay in the MTL FIFO, which
//     overflows into OVFPKTCNT and MMC rx_fifo_overflow; stopping the
//     channel (SR cleared) or a reset clears it;
//   - bus-error: the next TX descriptor fetch ends in a bus error: FBE with
//     TEB (read), the channel's TX DMA stops until software restarts it, as
//     stmmac's dma_interrupt and reset subtask handle;
//   - desc-error: the next received frame's last descriptor is written back
//     with ES and CE (CRC error);
//   - removal: sim.Device's (registers all-ones, DMA off); the model's MAC
//     receives and sends nothing more;
//   - irq-lost, irq-storm, link-down, phy-dead: sim.Device's.

// rw3CE is RDES3 (write-back) CE: CRC error.
const rw3CE uint32 = 1 << 24
