package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{name: "version", summary: "the xnic version, its commit and the Go that built it", run: versionCmd})
}

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("version takes no arguments")
	}
	fmt.Fprintln(stdout, versionString())
	return nil
}

// versionString is "xnic VERSION (commit REV[, modified]) GOVERSION OS/ARCH",
// from the build information the Go toolchain records in the binary.
func versionString() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	s := "xnic " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (commit " + rev
		if dirty {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
