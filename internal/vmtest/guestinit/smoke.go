package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// VFIO ioctls (include/uapi/linux/vfio.h): _IO(VFIO_TYPE ';', VFIO_BASE 100 + n).
const (
	vfioGetAPIVersion     = 0x3B64
	vfioCheckExtension    = 0x3B65
	vfioSetIOMMU          = 0x3B66
	vfioGroupGetStatus    = 0x3B67
	vfioGroupSetContainer = 0x3B68
	vfioGroupGetDeviceFD  = 0x3B6A
	vfioDeviceGetInfo     = 0x3B6B
	vfioDeviceRegionInfo  = 0x3B6C

	vfioAPIVersion        = 0
	vfioType1v2IOMMU      = 3
	vfioGroupFlagsViable  = 1 << 0
	vfioDeviceFlagsPCI    = 1 << 1
	vfioPCIBAR0Index      = 0
	vfioPCIConfigIndex    = 7
	vfioPCINumRegionsMin  = 9 // BAR0-5, ROM, config, VGA
	igbRegSTATUS          = 0x0008
	igbRegEECD            = 0x0010
	igbRegRAL0            = 0x5400
	igbRegRAH0            = 0x5404
	igbRAHAddressValid    = 1 << 31
	igbBAR0MinSize        = 128 << 10
	pciVendorDeviceOffset = 0
)

// goTest reports checks in "go test -v" format under SmokeBinary.
type goTest struct {
	name   string
	start  time.Time
	failed bool
}

func runT(name string, fn func(t *goTest)) bool {
	t := &goTest{name: name, start: time.Now()}
	guestrt.Say("out %s| === RUN   %s", guestproto.SmokeBinary, name)
	fn(t)
	verdict := "PASS"
	if t.failed {
		verdict = "FAIL"
	}
	guestrt.Say("out %s| --- %s: %s (%.2fs)", guestproto.SmokeBinary, verdict, name, time.Since(t.start).Seconds())
	return !t.failed
}

func (t *goTest) logf(format string, args ...any) {
	guestrt.Say("out %s|     smoke: %s", guestproto.SmokeBinary, fmt.Sprintf(format, args...))
}

func (t *goTest) errorf(format string, args ...any) {
	t.failed = true
	t.logf("error: "+format, args...)
}

type regionInfo struct {
	flags, index uint32
	size, offset uint64
}

func getRegion(dev int, index uint32) (regionInfo, error) {
	b := make([]byte, 32)
	binary.LittleEndian.PutUint32(b[0:], 32)
	binary.LittleEndian.PutUint32(b[8:], index)
	if _, err := ioctlBuf(dev, vfioDeviceRegionInfo, b); err != nil {
		return regionInfo{}, fmt.Errorf("VFIO_DEVICE_GET_REGION_INFO %d: %w", index, err)
	}
	return regionInfo{flags: binary.LittleEndian.Uint32(b[4:]), index: index,
		size: binary.LittleEndian.Uint64(b[16:]), offset: binary.LittleEndian.Uint64(b[24:])}, nil
}

func read32(dev int, r regionInfo, off uint64) (uint32, error) {
	var b [4]byte
	if _, err := unix.Pread(dev, b[:], int64(r.offset+off)); err != nil {
		return 0, fmt.Errorf("pread region %d offset %#x: %w", r.index, off, err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// smoke proves the path the driver tests take: the vfio stack is loaded, the
// group is viable, the device opens and answers through config space and BAR0.
func smoke(bdf, group string, cfg guestproto.Config) bool {
	guestrt.Say("start %s", guestproto.SmokeBinary)
	begin := time.Now()
	var container, grp, dev = -1, -1, -1
	defer func() {
		for _, fd := range []int{dev, grp, container} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	ok := runT("TestVFIOGroupViable", func(t *goTest) {
		var err error
		container, err = unix.Open("/dev/vfio/vfio", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.errorf("open /dev/vfio/vfio: %v", err)
			return
		}
		if v, err := unix.IoctlRetInt(container, vfioGetAPIVersion); err != nil || v != vfioAPIVersion {
			t.errorf("VFIO_GET_API_VERSION = %d, %v; want %d", v, err, vfioAPIVersion)
		}
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(container), vfioCheckExtension, vfioType1v2IOMMU)
		if errno != 0 || r != 1 {
			t.errorf("VFIO_CHECK_EXTENSION(TYPE1v2) = %d, %v; want 1", r, errno)
		}
		grp, err = unix.Open("/dev/vfio/"+group, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.errorf("open /dev/vfio/%s: %v", group, err)
			return
		}
		st := make([]byte, 8)
		binary.LittleEndian.PutUint32(st, 8)
		if _, err := ioctlBuf(grp, vfioGroupGetStatus, st); err != nil {
			t.errorf("VFIO_GROUP_GET_STATUS: %v", err)
			return
		}
		flags := binary.LittleEndian.Uint32(st[4:])
		members, _ := os.ReadDir("/sys/kernel/iommu_groups/" + group + "/devices")
		var names []string
		for _, m := range members {
			names = append(names, m.Name())
		}
		t.logf("group %s flags %#x members %s", group, flags, strings.Join(names, " "))
		if flags&vfioGroupFlagsViable == 0 {
			t.errorf("group %s is not viable: every device in it must be bound to vfio-pci or no driver", group)
		}
	})
	ok = runT("TestVFIODeviceAnswers", func(t *goTest) {
		if grp < 0 || container < 0 {
			t.errorf("no group (previous test failed)")
			return
		}
		cfd := make([]byte, 4)
		binary.LittleEndian.PutUint32(cfd, uint32(container))
		if _, err := ioctlBuf(grp, vfioGroupSetContainer, cfd); err != nil {
			t.errorf("VFIO_GROUP_SET_CONTAINER: %v", err)
			return
		}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(container), vfioSetIOMMU, vfioType1v2IOMMU); errno != 0 {
			t.errorf("VFIO_SET_IOMMU(TYPE1v2): %v", errno)
			return
		}
		name := append([]byte(bdf), 0)
		var err error
		dev, err = ioctlBuf(grp, vfioGroupGetDeviceFD, name)
		if err != nil {
			dev = -1
			t.errorf("VFIO_GROUP_GET_DEVICE_FD %s: %v", bdf, err)
			return
		}
		info := make([]byte, 16)
		binary.LittleEndian.PutUint32(info, 16)
		if _, err := ioctlBuf(dev, vfioDeviceGetInfo, info); err != nil {
			t.errorf("VFIO_DEVICE_GET_INFO: %v", err)
			return
		}
		flags, nreg, nirq := binary.LittleEndian.Uint32(info[4:]), binary.LittleEndian.Uint32(info[8:]), binary.LittleEndian.Uint32(info[12:])
		t.logf("device %s flags %#x regions %d irqs %d", bdf, flags, nreg, nirq)
		if flags&vfioDeviceFlagsPCI == 0 || nreg < vfioPCINumRegionsMin {
			t.errorf("not a vfio-pci device: flags %#x, %d regions", flags, nreg)
			return
		}
		cfgReg, err := getRegion(dev, vfioPCIConfigIndex)
		if err != nil {
			t.errorf("%v", err)
			return
		}
		id, err := read32(dev, cfgReg, pciVendorDeviceOffset)
		want := uint32(cfg.Device)<<16 | uint32(cfg.Vendor)
		if err != nil || id != want {
			t.errorf("config vendor/device = %#08x, %v; want %#08x", id, err, want)
		}
		bar0, err := getRegion(dev, vfioPCIBAR0Index)
		if err != nil {
			t.errorf("%v", err)
			return
		}
		if bar0.size < igbBAR0MinSize {
			t.errorf("BAR0 is %d bytes, want at least %d", bar0.size, igbBAR0MinSize)
			return
		}
		status, err1 := read32(dev, bar0, igbRegSTATUS)
		ral, err2 := read32(dev, bar0, igbRegRAL0)
		rah, err3 := read32(dev, bar0, igbRegRAH0)
		eecd, err4 := read32(dev, bar0, igbRegEECD)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.errorf("BAR0 reads: %v %v %v %v", err1, err2, err3, err4)
			return
		}
		mac := net.HardwareAddr{byte(ral), byte(ral >> 8), byte(ral >> 16), byte(ral >> 24), byte(rah), byte(rah >> 8)}
		t.logf("BAR0 %d bytes; STATUS %#08x; EECD %#08x; RAL0 %#08x RAH0 %#08x: MAC %s", bar0.size, status, eecd, ral, rah, mac)
		if status == 0xffffffff {
			t.errorf("STATUS reads all ones: the device does not answer")
		}
		if cfg.MAC != "" && (mac.String() != strings.ToLower(cfg.MAC) || rah&igbRAHAddressValid == 0) {
			t.errorf("receive address 0 is %s (valid %v), want %s as QEMU was told", mac, rah&igbRAHAddressValid != 0, cfg.MAC)
		}
	}) && ok
	code := 0
	if !ok {
		code = 1
		guestrt.Say("out %s| FAIL", guestproto.SmokeBinary)
	} else {
		guestrt.Say("out %s| PASS", guestproto.SmokeBinary)
	}
	guestrt.Say("exit %s %d %.2f", guestproto.SmokeBinary, code, time.Since(begin).Seconds())
	return ok
}
