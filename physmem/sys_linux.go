package physmem

import "golang.org/x/sys/unix"

// The system calls of this package, kept in one place.

// mmapHuge maps zeroed anonymous huge pages of 1<<shift bytes, populated.
func mmapHuge(size, shift int) ([]byte, error) {
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE | unix.MAP_HUGETLB | shift<<unix.MAP_HUGE_SHIFT
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
}

// mmapShared maps [off, off+size) of a file (or /dev/mem) read-write, shared.
func mmapShared(fd int, off int64, size int) ([]byte, error) {
	return unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func munmap(b []byte) error { return unix.Munmap(b) }

func mlock(b []byte) error { return unix.Mlock(b) }
