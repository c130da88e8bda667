package kernelxdp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Report gathers xnic's and the kernel's figures measured in one run (a
// benchmark binary's) and prints them side by side: for each row the median
// of its samples (one per -count), the ratio xnic/kernel, and per section
// the geometric mean and the worst ratio. A row's ratio is the median of
// its samples' ratios: each sample measures the kernel and xnic one right
// after the other, so a shared machine that slows down for a while slows
// both figures of a sample, where the ratio of the two medians can pair
// one side's slow sample with the other's fast one. Benchmarks Add to it and the
// package's TestMain prints it after the run. It is safe for concurrent use.
type Report struct {
	mu   sync.Mutex
	rows []*reportRow
}

type reportRow struct {
	section, name string
	xnic, kernel  []float64
	ratios        []float64 // xnic/kernel of each sample with both figures
	apart         []float64 // AddApart's samples
	apartName     string
	note          string
}

// Add records one sample of row name in section: xnic's and the kernel's
// nanoseconds per run (a kernel figure of 0 means none).
func (r *Report) Add(section, name string, xnicNs, kernelNs float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	row := r.row(section, name)
	row.xnic = append(row.xnic, xnicNs)
	if kernelNs > 0 {
		row.kernel = append(row.kernel, kernelNs)
		if xnicNs > 0 {
			row.ratios = append(row.ratios, xnicNs/kernelNs)
		}
	}
}

// AddApart records one sample of a figure reported beside row name in
// section but not charged to xnic (what, e.g. "injection"): its median is
// printed after the row.
func (r *Report) AddApart(section, name, what string, ns float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	row := r.row(section, name)
	row.apart = append(row.apart, ns)
	row.apartName = what
}

// Note attaches a remark to row name in section, printed after it.
func (r *Report) Note(section, name, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.row(section, name).note = note
}

func (r *Report) row(section, name string) *reportRow {
	for _, row := range r.rows {
		if row.section == section && row.name == name {
			return row
		}
	}
	row := &reportRow{section: section, name: name}
	r.rows = append(r.rows, row)
	return row
}

// median of v (0 for none); v is sorted in place.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Print writes the report to w: nothing when no row was added.
func (r *Report) Print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return
	}
	r.save(w) // report_file.go
	fmt.Fprintf(w, "\nxnic against the kernel, same run: CPU %s, %d CPUs, %s/%s, %s; medians of each row's samples (ratio: of the samples' ratios)\n",
		CPUModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	var sections []string
	for _, row := range r.rows {
		if !slices.Contains(sections, row.section) {
			sections = append(sections, row.section)
		}
	}
	for _, s := range sections {
		fmt.Fprintf(w, "%-10s %-22s %8s %10s %10s %7s\n", s, "program", "samples", "xnic ns", "kernel ns", "ratio")
		logSum, n := 0.0, 0
		worst, worstName := 0.0, ""
		for _, row := range r.rows {
			if row.section != s {
				continue
			}
			x, k, q := median(row.xnic), median(row.kernel), median(row.ratios)
			if len(row.ratios) == 0 && k > 0 && x > 0 {
				q = x / k // a report file written before samples kept their ratios
			}
			ratio := "-"
			if q > 0 {
				ratio = fmt.Sprintf("%.2f", q)
				logSum += math.Log(q)
				n++
				if q > worst {
					worst, worstName = q, row.name
				}
			}
			kernel := "-" // no kernel figure
			if len(row.kernel) > 0 {
				kernel = fmt.Sprintf("%.1f", k)
			}
			line := fmt.Sprintf("%-10s %-22s %8d %10.1f %10s %7s", "", row.name, len(row.xnic), x, kernel, ratio)
			if len(row.apart) > 0 {
				line += fmt.Sprintf("  %s %.1f ns apart", row.apartName, median(row.apart))
			}
			if row.note != "" {
				line += "  " + row.note
			}
			fmt.Fprintln(w, line)
		}
		if n > 0 {
			fmt.Fprintf(w, "%-10s geometric mean xnic/kernel %.2f over %d, worst %.2f (%s)\n", s, math.Exp(logSum/float64(n)), n, worst, worstName)
		}
	}
}

// CPUModel is the first "model name" of /proc/cpuinfo (or "Hardware" or
// "CPU part" on arm64), or "unknown".
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Hardware", "CPU part":
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// ThreadCPU is the CPU time (user and system) the calling OS thread has used:
// on a shared machine it measures the work without the time other
// processes took. Lock the goroutine to its thread around the measure. It
// reads CLOCK_THREAD_CPUTIME_ID (clock_gettime(2)), the scheduler's exact
// count, where getrusage(RUSAGE_THREAD) moves in clock ticks.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
