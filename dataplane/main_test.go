package dataplane_test

import (
	"os"
	"testing"

	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// vsKernel gathers BenchmarkVsKernel's figures; TestMain prints them with
// their medians, ratios and geometric mean once every -count has run.
var vsKernel kernelxdp.Report

func TestMain(m *testing.M) {
	code := m.Run()
	vsKernel.Print(os.Stdout)
	os.Exit(code)
}
