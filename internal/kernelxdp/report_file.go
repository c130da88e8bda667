package kernelxdp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// ReportEnv names a file to which every Report's Print also appends its
// samples (one JSON object a row), so that the reports of several
// benchmark binaries (the examples', the dataplane's) run by one command
// can be printed as one table afterwards ([ReadReport]: make bench).
const ReportEnv = "XNIC_BENCH_REPORT"

// reportLine is a row as the file holds it.
type reportLine struct {
	Section   string    `json:"section"`
	Name      string    `json:"name"`
	Xnic      []float64 `json:"xnic"`
	Kernel    []float64 `json:"kernel,omitempty"`
	Ratios    []float64 `json:"ratios,omitempty"`
	Apart     []float64 `json:"apart,omitempty"`
	ApartName string    `json:"apart_name,omitempty"`
	Note      string    `json:"note,omitempty"`
}

// save appends r's rows to the file ReportEnv names, if any. A failure is
// reported on w beside the table: the table itself is the result.
func (r *Report) save(w io.Writer) {
	path := os.Getenv(ReportEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(w, "report not saved: %v\n", err)
		return
	}
	enc := json.NewEncoder(f)
	for _, row := range r.rows {
		if err := enc.Encode(reportLine{row.section, row.name, row.xnic, row.kernel, row.ratios, row.apart, row.apartName, row.note}); err != nil {
			fmt.Fprintf(w, "report not saved: %v\n", err)
			break
		}
	}
	if err := f.Close(); err != nil {
		fmt.Fprintf(w, "report not saved: %v\n", err)
	}
}

// ReadReport reads the rows that Prints appended to a ReportEnv file into
// one Report: the rows of a section and name given more than once (by
// several binaries) pool their samples.
func ReadReport(rd io.Reader) (*Report, error) {
	r := new(Report)
	s := bufio.NewScanner(rd)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; s.Scan(); n++ {
		if len(s.Bytes()) == 0 {
			continue
		}
		var l reportLine
		if err := json.Unmarshal(s.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.Section == "" || l.Name == "" {
			return nil, fmt.Errorf("line %d: a row without section or name", n)
		}
		row := r.row(l.Section, l.Name)
		row.xnic = append(row.xnic, l.Xnic...)
		row.kernel = append(row.kernel, l.Kernel...)
		row.ratios = append(row.ratios, l.Ratios...)
		row.apart = append(row.apart, l.Apart...)
		if l.ApartName != "" {
			row.apartName = l.ApartName
		}
		if l.Note != "" {
			row.note = l.Note
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return r, nil
}
