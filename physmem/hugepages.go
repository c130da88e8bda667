package physmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// HugePagesConfig sets up a HugePages source. The zero value is the system's
// default huge page size and the real /proc and /sys files.
type HugePagesConfig struct {
	// Size is the huge page size in bytes (2 MiB, 1 GiB, 32 MiB ...). 0: the
	// default from /proc/meminfo (Hugepagesize).
	Size int
	// ProcRoot and SysRoot replace "/proc" and "/sys" (tests).
	ProcRoot, SysRoot string
}

// HugePages is the real PageSource: anonymous MAP_HUGETLB memory, populated
// and mlocked, with physical addresses from /proc/self/pagemap. Safe for
// concurrent use.
type HugePages struct {
	size     int    // immutable
	shift    int    // log2(size); immutable
	basePage int    // immutable
	proc     string // immutable
	sys      string // immutable

	mu      sync.Mutex
	pagemap *os.File // opened on first use; guarded by mu
}

// NewHugePages checks the page size and returns a source. It does not reserve
// anything: Map fails with a hint when no huge page is free.
func NewHugePages(cfg HugePagesConfig) (*HugePages, error) {
	h := &HugePages{size: cfg.Size, basePage: os.Getpagesize(), proc: cfg.ProcRoot, sys: cfg.SysRoot}
	if h.proc == "" {
		h.proc = "/proc"
	}
	if h.sys == "" {
		h.sys = "/sys"
	}
	if h.size == 0 {
		sz, err := defaultHugePageSize(filepath.Join(h.proc, "meminfo"))
		if err != nil {
			return nil, err
		}
		h.size = sz
	}
	if h.size < h.basePage || h.size&(h.size-1) != 0 {
		return nil, fmt.Errorf("physmem: huge page size %d is not a power of two of at least %d", h.size, h.basePage)
	}
	for 1<<h.shift < h.size {
		h.shift++
	}
	return h, nil
}

// defaultHugePageSize reads Hugepagesize from /proc/meminfo.
func defaultHugePageSize(meminfo string) (int, error) {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0, fmt.Errorf("physmem: reading the default huge page size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "Hugepagesize" {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 2 && fs[1] == "kB" {
			if kb, err := strconv.Atoi(fs[0]); err == nil && kb > 0 {
				return kb << 10, nil
			}
		}
		return 0, fmt.Errorf("physmem: %s: cannot parse %q", meminfo, sc.Text())
	}
	return 0, fmt.Errorf("physmem: %s has no Hugepagesize line: the kernel has no huge page support (CONFIG_HUGETLBFS)", meminfo)
}

// PageSize implements PageSource.
func (h *HugePages) PageSize() int { return h.size }

// Pool reports the kernel's count of reserved and free huge pages of this
// size (from /sys/kernel/mm/hugepages), for messages and tests.
func (h *HugePages) Pool() (total, free int, err error) {
	dir := filepath.Join(h.sys, "kernel/mm/hugepages", fmt.Sprintf("hugepages-%dkB", h.size>>10))
	read := func(name string) (int, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if total, err = read("nr_hugepages"); err != nil {
		return 0, 0, fmt.Errorf("physmem: huge pages of %d kB: %w", h.size>>10, err)
	}
	if free, err = read("free_hugepages"); err != nil {
		return 0, 0, fmt.Errorf("physmem: huge pages of %d kB: %w", h.size>>10, err)
	}
	return total, free, nil
}

// ErrNoHugePages is wrapped when the kernel has no free huge page to give.
var ErrNoHugePages = errors.New("physmem: no free huge pages")

// Map implements PageSource.
func (h *HugePages) Map(size int) ([]byte, error) {
	if size <= 0 || size%h.size != 0 {
		return nil, fmt.Errorf("physmem: mapping %d bytes: not a multiple of the huge page size %d", size, h.size)
	}
	mem, err := mmapHuge(size, h.shift)
	if err != nil {
		if errors.Is(err, unix.ENOMEM) {
			return nil, h.noHugePages(size)
		}
		return nil, fmt.Errorf("physmem: mmap of %d bytes of %d kB huge pages: %w", size, h.size>>10, err)
	}
	if err := mlock(mem); err != nil {
		munmap(mem) //nolint:errcheck
		return nil, fmt.Errorf("physmem: mlock of %d bytes: %w (raise the locked-memory limit: ulimit -l, LimitMEMLOCK=, or run with CAP_IPC_LOCK)", size, err)
	}
	return mem, nil
}

// noHugePages explains a MAP_HUGETLB mmap that failed with ENOMEM.
func (h *HugePages) noHugePages(size int) error {
	total, free, perr := h.Pool()
	state := fmt.Sprintf("%d reserved, %d free", total, free)
	if perr != nil {
		state = perr.Error()
	}
	return fmt.Errorf("%w: %d of %d kB wanted (%s): reserve huge pages with hugepages=N on the kernel command line, "+
		"or echo N > /proc/sys/vm/nr_hugepages (%s/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages for this size)",
		ErrNoHugePages, size/h.size, h.size>>10, state, h.sys, h.size>>10)
}

// Unmap implements PageSource.
func (h *HugePages) Unmap(mem []byte) error { return munmap(mem) }

// Phys implements PageSource: the pagemap entry of mem[off].
func (h *HugePages) Phys(mem []byte, off int) (uint64, error) {
	if off < 0 || off >= len(mem) {
		return 0, fmt.Errorf("physmem: offset %d outside a %d-byte mapping", off, len(mem))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pagemap == nil {
		f, err := os.Open(filepath.Join(h.proc, "self/pagemap"))
		if err != nil {
			return 0, fmt.Errorf("physmem: opening pagemap: %w", err)
		}
		h.pagemap = f
	}
	return PhysAddr(h.pagemap, addrOf(mem)+uint64(off), h.basePage)
}

// Close closes the pagemap file.
func (h *HugePages) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pagemap == nil {
		return nil
	}
	err := h.pagemap.Close()
	h.pagemap = nil
	return err
}
