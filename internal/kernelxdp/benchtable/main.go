// Command benchtable prints, as one table, the reports that the benchmark
// binaries of one run appended to the file named by XNIC_BENCH_REPORT
// (kernelxdp.ReportEnv): make bench and make bench-kernel end with it.
//
//	go run ./internal/kernelxdp/benchtable FILE
package main

import (
	"fmt"
	"os"

	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := kernelxdp.ReadReport(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtable: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	r.Print(os.Stdout)
}
