package fecsim

import "github.com/xnic-dev/xnic/sim"

// Injected faults (sim/inject.go), as the ENET shows them (i.MX 8M Plus
// reference manual, ENET "Interrupt event register" and "Receive buffer
// descriptor"):
//
//   - tx-hang: the transmit engine stops; BDs keep R and TDAR stays set
//     (fec_enet_tx_timeout, then fec_enet_timeout_work's restart, find it);
//     ECR.RESET or a block reset clears it;
//   - rx-stall: the receive DMA stops; frames stay in the FIFO, which
//     overflows into IEEE_R_MACERR; a reset clears it;
//   - bus-error: the next transmit BD fetch ends in a system bus error:
//     EIR.EBERR, and ECR.ETHEREN clears, halting the MAC until the driver
//     restarts it (fec_restart);
//   - desc-error: the next received frame's last BD is written back with CR
//     (CRC error);
//   - removal: sim.Device's (registers all-ones, DMA off); the model's MAC
//     receives and sends nothing more;
//   - irq-lost, irq-storm, link-down, phy-dead: sim.Device's.

// txFaultLocked applies the transmit faults at a BD fetch; it reports
// whether the engine sends nothing.
func (m *Model) txFaultLocked() bool {
	if m.inj.Take(sim.FaultBusError) {
		m.ecr &^= ecrETHEREN
		m.raiseLocked(eirEBERR)
		return true
	}
	return m.inj.On(sim.FaultTxHang) || m.inj.On(sim.FaultRemoval)
}
