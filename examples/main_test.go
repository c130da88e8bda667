package examples

import (
	"os"
	"testing"

	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// report gathers BenchmarkExamples' figures; TestMain prints them with their
// medians, ratios and geometric mean once every -count has run.
var report kernelxdp.Report

func TestMain(m *testing.M) {
	code := m.Run()
	report.Print(os.Stdout)
	os.Exit(code)
}
