package dataplane

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
)

// wakeIRQ makes a goroutine asleep in irq.Wait return, when the IRQ offers a
// way: an eventfd (VFIO's) is woken by adding 1 to its counter, as the kernel
// does when the vector fires. The sleeper sees a spurious interrupt, polls an
// empty ring and then notices the stop flag. An IRQ without a file descriptor
// (models) cannot be woken; its sleeper returns within the idle timeout.
// It reports whether it woke anything.
func wakeIRQ(irq nic.IRQ) bool {
	if irq == nil {
		return false
	}
	fd := irq.Fd()
	if fd < 0 {
		return false
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	n, err := unix.Write(fd, one[:])
	return err == nil && n == len(one)
}
