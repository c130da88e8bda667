package main

import (
	"os"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// runPlatform runs the tests of a guest without a PCI device to bind (the
// Config names none): the tests reach their device themselves, e.g. a platform
// MAC through /dev/mem. It returns the number of binaries that failed.
func runPlatform(cfg guestproto.Config) int {
	env := append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp", "PATH=/bin:/", "XNIC_VMTEST=1")
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	failures := 0
	for _, t := range cfg.Tests {
		if code := guestrt.RunTest(t, env); code != 0 {
			failures++
		}
	}
	return failures
}
