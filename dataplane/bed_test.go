package dataplane_test

import "testing"

// newBed makes the ports the end-to-end tests run on.
func newBed(t *testing.T, n int) bed { return newMemBed(t, n) }
