package nic

// Resetter is a Port that can reset itself after a fault, as Linux drivers
// do from their reset tasks (igb_reset_task, stmmac_reset_subtask,
// fec_enet_timeout_work): the device is reset and brought up again with the
// same configuration, its rings start over, and every buffer the rings held
// goes back to its pool (frames in flight are lost). The dataplane calls it
// with every queue of the port parked: nothing polls or sends meanwhile.
type Resetter interface {
	ResetPort(reason string) error
}
