package dataplane

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pinCPU binds the calling OS thread (locked by the caller) to one CPU.
func pinCPU(cpu int) error {
	if cpu < 0 || cpu >= 1024 {
		return fmt.Errorf("CPU %d out of range", cpu)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity: %w", err)
	}
	return nil
}
