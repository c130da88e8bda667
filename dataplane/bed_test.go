package dataplane_test

import "testing"

// newBed makes the ports the end-to-end tests run on, recording what they send.
func newBed(t *testing.T, n int) bed { return newMemBed(t, n, true) }

// newSoakBed makes ports that only count what they send.
func newSoakBed(t *testing.T, n int) bed { return newMemBed(t, n, false) }
