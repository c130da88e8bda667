package main

import (
	"fmt"
	"io"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// reportRefused says on w which programs of the object xnic refused, and
// why, when the picked program is not one of them (its own refusal is the
// command's error).
func reportRefused(c *bpf.Collection, w io.Writer) {
	for _, line := range c.RefusedList() {
		fmt.Fprintf(w, "xnic: program refused: %s\n", line)
	}
}
