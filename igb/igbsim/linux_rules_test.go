package igbsim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRPLOLR: Linux's igb (igb_vmm_control) reads and writes the 82576's
// Replication Offload register (datasheet 8.10, offset 0x5AF0) at every
// bring-up, VFs or not; it holds what is written. The register beside it,
// past the VMOLR array, is still unimplemented.
func TestRPLOLR(t *testing.T) {
	r := newRig(t, Config{})
	r.Wr(0x5AF0, r.Rd(0x5AF0)|1<<30) // STRVLAN, as igb sets it
	require.Equal(t, uint32(1<<30), r.Rd(0x5AF0))
	require.NoError(t, r.m.Err())
	r.Rd(0x5AF4)
	require.Error(t, r.m.Err(), "an unimplemented register next to RPLOLR was accepted")
}
