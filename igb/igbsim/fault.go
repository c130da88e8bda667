package igbsim

import "github.com/xnic-dev/xnic/sim"

// Injected faults (sim/inject.go), as the device shows them:
//
//   - tx-hang: the transmit engine stops; descriptors in [TDH, TDT) are never
//     fetched nor written back and TDH stands still (what Linux's igb finds
//     as a "Detected Tx Unit Hang"); a reset (CTRL.RST or a function-level
//     reset) clears it;
//   - rx-stall: the receive DMA stops; frames keep arriving into the packet
//     buffer, which overflows into MPC; a reset clears it;
//   - bus-error: the next transmit descriptor fetch completes with an error
//     on PCIe (unsupported request or completer abort); the 82576 reports
//     nothing of its own for it and the queue's DMA stops until a reset;
//   - desc-error: the next received frame's last descriptor is written back
//     with RXE (extended error, RX data error), the frame's data unreliable;
//   - removal: sim.Device's (registers all-ones, DMA off); the model's MAC
//     receives and sends nothing more;
//   - irq-lost, irq-storm, link-down, phy-dead: sim.Device's.

// rxErrRXE is the write-back's RX data error bit (82576 datasheet 7.1.5,
// extended error field).
const rxErrRXE uint32 = 1 << 31

// txStoppedLocked reports whether the transmit engine is stopped by a fault,
// taking a pending bus error at this descriptor fetch.
func (m *Model) txStoppedLocked() bool {
	if m.inj.Take(sim.FaultBusError) {
		m.txBusErr = true
	}
	return m.txBusErr || m.inj.On(sim.FaultTxHang) || m.inj.On(sim.FaultRemoval)
}
