package vfiousertest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xnic-dev/xnic/vfiouser"
	"golang.org/x/sys/unix"
)

var le = binary.LittleEndian

func osNewFile(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }

func readFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }

// Version sends VERSION 0.minor with the capabilities object caps (nil: none)
// and returns the server's minor version and capabilities.
func (c *Client) Version(minor uint16, caps map[string]any) (uint16, map[string]any, error) {
	p := make([]byte, 4)
	le.PutUint16(p[2:], minor)
	if caps != nil {
		js, err := json.Marshal(map[string]any{"capabilities": caps})
		if err != nil {
			return 0, nil, err
		}
		p = append(append(p, js...), 0)
	}
	r, err := c.Call(vfiouser.CmdVersion, p)
	if err != nil {
		return 0, nil, err
	}
	if len(r) < 4 {
		return 0, nil, fmt.Errorf("VERSION reply of %d bytes", len(r))
	}
	if major := le.Uint16(r); major != 0 {
		return 0, nil, fmt.Errorf("VERSION reply major %d", major)
	}
	js := r[4:]
	if len(js) == 0 || js[len(js)-1] != 0 {
		return 0, nil, fmt.Errorf("VERSION reply JSON is not NUL-terminated: %q", js)
	}
	var out struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(js[:len(js)-1], &out); err != nil {
		return 0, nil, fmt.Errorf("VERSION reply JSON: %w", err)
	}
	return le.Uint16(r[2:]), out.Capabilities, nil
}

// DeviceInfo is DEVICE_GET_INFO's reply.
type DeviceInfo struct{ Argsz, Flags, Regions, IRQs uint32 }

// DeviceInfo queries the device.
func (c *Client) DeviceInfo() (DeviceInfo, error) {
	p := make([]byte, 16)
	le.PutUint32(p, 16)
	r, err := c.Call(vfiouser.CmdDeviceGetInfo, p)
	if err != nil {
		return DeviceInfo{}, err
	}
	if len(r) != 16 {
		return DeviceInfo{}, fmt.Errorf("DEVICE_GET_INFO reply of %d bytes", len(r))
	}
	return DeviceInfo{le.Uint32(r), le.Uint32(r[4:]), le.Uint32(r[8:]), le.Uint32(r[12:])}, nil
}

// RegionInfo is DEVICE_GET_REGION_INFO's reply.
type RegionInfo struct {
	Argsz, Flags, Index, CapOffset uint32
	Size, Offset                   uint64
}

// RegionInfo queries region idx.
func (c *Client) RegionInfo(idx uint32) (RegionInfo, error) {
	p := make([]byte, 32)
	le.PutUint32(p, 32)
	le.PutUint32(p[8:], idx)
	r, err := c.Call(vfiouser.CmdRegionInfo, p)
	if err != nil {
		return RegionInfo{}, err
	}
	if len(r) < 32 {
		return RegionInfo{}, fmt.Errorf("REGION_INFO reply of %d bytes", len(r))
	}
	return RegionInfo{le.Uint32(r), le.Uint32(r[4:]), le.Uint32(r[8:]), le.Uint32(r[12:]), le.Uint64(r[16:]), le.Uint64(r[24:])}, nil
}

// IRQInfo queries IRQ index idx: flags and count.
func (c *Client) IRQInfo(idx uint32) (flags, count uint32, err error) {
	p := make([]byte, 16)
	le.PutUint32(p, 16)
	le.PutUint32(p[8:], idx)
	r, err := c.Call(vfiouser.CmdIRQInfo, p)
	if err != nil {
		return 0, 0, err
	}
	if len(r) != 16 || le.Uint32(r[8:]) != idx {
		return 0, 0, fmt.Errorf("IRQ_INFO reply %x", r)
	}
	return le.Uint32(r[4:]), le.Uint32(r[12:]), nil
}

func rwHeader(region uint32, off uint64, n int) []byte {
	p := make([]byte, 16, 16+n)
	le.PutUint64(p, off)
	le.PutUint32(p[8:], region)
	le.PutUint32(p[12:], uint32(n))
	return p
}

// ReadRegion reads n bytes of region at off.
func (c *Client) ReadRegion(region uint32, off uint64, n int) ([]byte, error) {
	r, err := c.Call(vfiouser.CmdRegionRead, rwHeader(region, off, n))
	if err != nil {
		return nil, err
	}
	if len(r) != 16+n || le.Uint32(r[12:]) != uint32(n) {
		return nil, fmt.Errorf("REGION_READ reply of %d bytes for %d", len(r), n)
	}
	return r[16:], nil
}

// WriteRegion writes data to region at off.
func (c *Client) WriteRegion(region uint32, off uint64, data []byte) error {
	r, err := c.Call(vfiouser.CmdRegionWrite, append(rwHeader(region, off, len(data)), data...))
	if err != nil {
		return err
	}
	if len(r) != 16 || le.Uint32(r[12:]) != uint32(len(data)) {
		return fmt.Errorf("REGION_WRITE reply %x", r)
	}
	return nil
}

// Read32 and Write32 access a 32-bit register of region 0 (BAR0).
func (c *Client) Read32(off uint32) (uint32, error) {
	b, err := c.ReadRegion(vfiouser.RegionBAR0, uint64(off), 4)
	if err != nil {
		return 0, err
	}
	return le.Uint32(b), nil
}

// Write32 writes a 32-bit register of BAR0.
func (c *Client) Write32(off, val uint32) error {
	b := make([]byte, 4)
	le.PutUint32(b, val)
	return c.WriteRegion(vfiouser.RegionBAR0, uint64(off), b)
}

// DMAMap maps [iova, iova+size) at file offset off of fd (fd < 0: no
// descriptor, DMA by messages) with flags (vfiouser.DMAFlagRead|DMAFlagWrite).
func (c *Client) DMAMap(iova, size, off uint64, fd int, flags uint32) error {
	p := make([]byte, 32)
	le.PutUint32(p, 32)
	le.PutUint32(p[4:], flags)
	le.PutUint64(p[8:], off)
	le.PutUint64(p[16:], iova)
	le.PutUint64(p[24:], size)
	var fds []int
	if fd >= 0 {
		fds = []int{fd}
	}
	_, err := c.Call(vfiouser.CmdDMAMap, p, fds...)
	return err
}

// DMAUnmap unmaps the ranges inside [iova, iova+size).
func (c *Client) DMAUnmap(iova, size uint64) error { return c.DMAUnmapFlags(iova, size, 0) }

// DMAUnmapFlags sends DMA_UNMAP with flags (vfiouser.DMAUnmapFlagAll).
func (c *Client) DMAUnmapFlags(iova, size uint64, flags uint32) error {
	p := make([]byte, 24)
	le.PutUint32(p, 24)
	le.PutUint32(p[4:], flags)
	le.PutUint64(p[8:], iova)
	le.PutUint64(p[16:], size)
	r, err := c.Call(vfiouser.CmdDMAUnmap, p)
	if err != nil {
		return err
	}
	if len(r) != 24 || le.Uint64(r[8:]) != iova {
		return fmt.Errorf("DMA_UNMAP reply %x", r)
	}
	return nil
}

// SetIRQs sends DEVICE_SET_IRQS; with DATA_EVENTFD the fds go along (count is
// len(fds) unless count is given > 0), with DATA_BOOL bools follow.
func (c *Client) SetIRQs(flags, index, start, count uint32, bools []byte, fds ...int) error {
	p := make([]byte, 20, 20+len(bools))
	le.PutUint32(p, 20)
	le.PutUint32(p[4:], flags)
	le.PutUint32(p[8:], index)
	le.PutUint32(p[12:], start)
	le.PutUint32(p[16:], count)
	p = append(p, bools...)
	_, err := c.Call(vfiouser.CmdSetIRQs, p, fds...)
	return err
}

// Reset sends DEVICE_RESET.
func (c *Client) Reset() error {
	_, err := c.Call(vfiouser.CmdDeviceReset, nil)
	return err
}

// Memfd is a shared memory file mapped into the test: guest RAM for DMA_MAP.
type Memfd struct {
	Fd  int
	Mem []byte
}

// NewMemfd creates a memfd of size bytes and maps it shared.
func NewMemfd(size int) (*Memfd, error) {
	fd, err := unix.MemfdCreate("vfiousertest-ram", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Memfd{Fd: fd, Mem: b}, nil
}

// Close unmaps and closes the memfd.
func (m *Memfd) Close() error {
	err := unix.Munmap(m.Mem)
	if e := unix.Close(m.Fd); err == nil {
		err = e
	}
	return err
}

// Eventfd is a non-blocking eventfd: an interrupt line from the server.
type Eventfd int

// NewEventfd creates one.
func NewEventfd() (Eventfd, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	return Eventfd(fd), err
}

// Wait waits up to timeout for the eventfd to be signalled and returns the
// count it had (0 on timeout), resetting it.
func (e Eventfd) Wait(timeout time.Duration) (uint64, error) {
	pfd := []unix.PollFd{{Fd: int32(e), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms < 0 {
			ms = 0
		}
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, nil
		}
		var b [8]byte
		if _, err := unix.Read(int(e), b[:]); err != nil {
			if err == unix.EAGAIN {
				return 0, nil
			}
			return 0, err
		}
		return le.Uint64(b[:]), nil
	}
}

// Close closes the eventfd.
func (e Eventfd) Close() error { return unix.Close(int(e)) }
