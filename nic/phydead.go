package nic

import "fmt"

// A PHY that does not answer MDIO (held in reset, unpowered, dead) leaves
// the bus to its pull-up: every read returns 0xffff. Such a BMSR says "link
// up, autonegotiation complete" and must not be believed: drivers check
// their BMSR reads with PHYAnswers and treat the link as down.

// PHYAnswers returns an error wrapping ErrNoDevice when v, read from
// register reg of the PHY at addr, is all ones.
func PHYAnswers(addr, reg int, v uint16) error {
	if v == 0xFFFF {
		return fmt.Errorf("the PHY at MDIO address %d does not answer (register %d reads 0xffff): %w", addr, reg, ErrNoDevice)
	}
	return nil
}

// LinkProblemReporter is a Port that can say why its link is down when it
// knows (a PHY that does not answer). LinkProblem is nil otherwise.
type LinkProblemReporter interface {
	LinkProblem() error
}
