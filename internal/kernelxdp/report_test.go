package kernelxdp

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReport: medians of each row's samples, the ratio (the median of the
// samples' ratios), the geometric mean and the worst row per section,
// figures kept apart, nothing printed for an empty report.
func TestReport(t *testing.T) {
	var empty Report
	var out bytes.Buffer
	empty.Print(&out)
	if out.Len() != 0 {
		t.Errorf("an empty report prints %q", out.String())
	}
	var r Report
	for _, s := range [][2]float64{{10, 5}, {30, 5}, {20, 5}} { // median 20/5 = 4
		r.Add("a", "four", s[0], s[1])
	}
	r.Add("a", "quarter", 2, 8) // 0.25: with 4, a geometric mean of 1
	r.Add("a", "nokernel", 7, 0)
	// A machine slowed down for two of the samples: the medians are 11 and
	// 7 (1.57), the samples' ratios 1, 1, 1.14, 0.88, 1.57: median 1.
	for _, s := range [][2]float64{{7, 7}, {16, 16}, {8, 7}, {14, 16}, {11, 7}} {
		r.Add("a", "paired", s[0], s[1])
	}
	r.Add("b", "half", 5, 10)
	r.AddApart("b", "half", "injection", 3)
	r.AddApart("b", "half", "injection", 9)
	r.Note("b", "half", "(a note)")
	r.Print(&out)
	got := out.String()
	for _, want := range []string{
		"four                          3       20.0        5.0    4.00",
		"quarter                       1        2.0        8.0    0.25",
		"nokernel                      1        7.0          -       -",
		"paired                        5       11.0        7.0    1.00",
		"a          geometric mean xnic/kernel 1.00 over 3, worst 4.00 (four)",
		"half                          1        5.0       10.0    0.50  injection 6.0 ns apart  (a note)",
		"b          geometric mean xnic/kernel 0.50 over 1, worst 0.50 (half)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// TestReportFile: the rows each binary's Print appends to the ReportEnv
// file read back as one report, the samples of a row given twice pooled,
// and printed as one table; a bad line is an error naming it.
func TestReportFile(t *testing.T) {
	path := t.TempDir() + "/report.jsonl"
	t.Setenv(ReportEnv, path)
	var a, b Report
	a.Add("test-run", "xdp_x", 10, 5)
	a.Add("test-run", "xdp_x", 30, 5)
	b.Add("test-run", "xdp_x", 20, 5) // another binary, the same row
	b.Add("whole path", "DROP", 8, 16)
	b.AddApart("whole path", "DROP", "injection", 4)
	var sink bytes.Buffer
	a.Print(&sink)
	b.Print(&sink)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadReport(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ReportEnv, "") // printing the merged table appends nothing
	var out bytes.Buffer
	r.Print(&out)
	got := out.String()
	for _, want := range []string{
		"xdp_x                         3       20.0        5.0    4.00",
		"DROP                          1        8.0       16.0    0.50  injection 4.0 ns apart",
		"test-run   geometric mean xnic/kernel 4.00 over 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("merged report lacks %q:\n%s", want, got)
		}
	}
	if _, err := ReadReport(strings.NewReader("{\"section\":\"a\",\"name\":\"b\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad second line: %v", err)
	}
}
