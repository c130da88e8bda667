package dataplane_test

import "testing"

// bedMaker makes the ports the end-to-end tests run on: by default the igb
// driver on the igb model, recording what each port puts on its wire.
var bedMaker = func(t *testing.T, n int) bed { return newIGBBed(t, n, true) }

func newBed(t *testing.T, n int) bed { return bedMaker(t, n) }

// soakBedMaker makes the ports TestSoak runs on: model ports that only count
// what they send (by default igb on igbsim).
var soakBedMaker = func(t *testing.T, n int) bed { return newIGBBed(t, n, false) }

// newSoakBed makes model ports that only count what they send.
func newSoakBed(t *testing.T, n int) bed { return soakBedMaker(t, n) }

// TestE2EOnMemPorts runs the verdict paths on the in-memory port too, which
// checks the dataplane against the nic contract independently of the driver.
func TestE2EOnMemPorts(t *testing.T) {
	old := bedMaker
	bedMaker = func(t *testing.T, n int) bed { return newMemBed(t, n, true) }
	defer func() { bedMaker = old }()
	t.Run("MacSwapTX", TestE2EMacSwapTX)
	t.Run("DropCount", TestE2EDropCount)
	t.Run("RedirectMap", TestE2ERedirectMap)
	t.Run("CPUMap", TestE2ECPUMap)
	t.Run("XSK", TestE2EXSK)
	t.Run("AdjustTail", TestE2EAdjustTail)
}
