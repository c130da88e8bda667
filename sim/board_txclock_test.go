package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBoardTxClock: clk_rate is read-only on a stock kernel (a write is
// refused and changes nothing, the file is 0444), writable on one built
// with CLOCK_ALLOW_WRITE_DEBUGFS (0644, a write sets the closest rate the
// dividers make at or below it); phy-mode is the node's and rendered.
func TestBoardTxClock(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	mi, _ := b.MAC(EQOS)
	name, ok := b.ClockOf(mi.Unit, "tx")
	require.True(t, ok)
	require.Equal(t, "enet_qos", name)
	require.ErrorIs(t, b.WriteClockRate(name, 25_000_000), ErrBoard)
	require.EqualValues(t, 125_000_000, b.ClockRate(name))

	root := t.TempDir()
	require.NoError(t, b.Render(root))
	rate := filepath.Join(root, "sys/kernel/debug/clk/enet_qos/clk_rate")
	fi, err := os.Stat(rate)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
	mode, err := os.ReadFile(filepath.Join(root, "sys/firmware/devicetree/base", mi.Node, "phy-mode"))
	require.NoError(t, err)
	require.Equal(t, "rgmii-id\x00", string(mode))

	b.SetRateWritable(true)
	for _, c := range []struct{ ask, got uint64 }{{25_000_000, 25_000_000}, {2_500_000, 2_500_000}, {30_000_000, 25_000_000}, {1, 125_000_000 / 512}} {
		require.NoError(t, b.WriteClockRate(name, c.ask))
		require.Equal(t, c.got, b.ClockRate(name), "asked %d", c.ask)
	}
	require.NoError(t, b.Render(root))
	fi, err = os.Stat(rate)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	require.NoError(t, b.SetPHYMode(mi.Unit, "rmii"))
	require.Equal(t, "rmii", b.PHYMode(mi.Unit))
	require.Error(t, b.SetPHYMode("nowhere", "rmii"))
	require.Error(t, b.SetPHYMode(mi.Unit, ""))
}
