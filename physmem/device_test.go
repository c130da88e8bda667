package physmem

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
)

// memFile makes a file standing in for /dev/mem: offsets are "physical".
func memFile(t *testing.T, size int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mem")
	b := make([]byte, size)
	for i := 0; i < size; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], 0xA5000000|uint32(i))
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDeviceRegsOverFile(t *testing.T) {
	path := memFile(t, 3*4096)
	// A window that starts inside a page, as the FEC's would not but others may.
	d, err := OpenDevice(DeviceConfig{Name: "30be0000.ethernet", Compatible: "fsl,imx8mp-fec",
		Windows: []Window{{Phys: 0x1100, Size: 0x200}, {Phys: 0x2000, Size: 16}}, MemPath: path})
	if err != nil {
		t.Fatal(err)
	}
	info := d.Info()
	if info.Bus != "platform" || info.Compatible != "fsl,imx8mp-fec" || info.Name != "30be0000.ethernet" {
		t.Fatalf("Info %+v", info)
	}
	r, err := d.Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Read32(0x10); v != 0xA5000000|0x1110 {
		t.Fatalf("Read32(0x10) = %#x, want %#x", v, uint32(0xA5000000|0x1110))
	}
	r.Write32(0x1fc, 0xDEADBEEF)
	// Out of the window, misaligned: refused, counted, no access.
	if v := r.Read32(0x200); v != 0xFFFFFFFF {
		t.Fatalf("read past the window = %#x", v)
	}
	r.Write32(0x2, 1)
	regs := r.(*Regs)
	if regs.Faults() != 2 || regs.Err() == nil || !strings.Contains(regs.Err().Error(), "outside") {
		t.Fatalf("faults %d, first %v", regs.Faults(), regs.Err())
	}
	if _, err := d.Regs(2); err == nil {
		t.Fatal("Regs(2) of a two-window device")
	}
	if _, err := d.ReadConfig(0, 4); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("ReadConfig: %v", err)
	}
	if err := d.WriteConfig(0, 4, 0); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("WriteConfig: %v", err)
	}
	if _, err := d.EnableMSIX(4); !errors.Is(err, nic.ErrNotSupported) || !strings.Contains(err.Error(), "poll") {
		t.Fatalf("EnableMSIX: %v", err)
	}
	if err := d.Reset(); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("Reset: %v", err)
	}
	if err := d.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The write went through the shared mapping to the file.
	b, _ := os.ReadFile(path)
	if v := binary.LittleEndian.Uint32(b[0x1100+0x1fc:]); v != 0xDEADBEEF {
		t.Fatalf("file holds %#x after Write32", v)
	}
	if v := r.Read32(0); v != 0xFFFFFFFF || regs.Faults() != 3 {
		t.Fatalf("read after close = %#x, faults %d", v, regs.Faults())
	}
	if _, err := d.Regs(0); !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("Regs after Close: %v", err)
	}
}

func TestDeviceOpenErrors(t *testing.T) {
	_, err := OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 4}}, MemPath: "/nonexistent/mem"})
	if err == nil || !strings.Contains(err.Error(), "CONFIG_DEVMEM") {
		t.Fatalf("missing /dev/mem: %v", err)
	}
	if _, err := OpenDevice(DeviceConfig{Name: "x"}); err == nil {
		t.Fatal("no windows accepted")
	}
	path := memFile(t, 4096)
	if _, err := OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 6}}, MemPath: path}); err == nil {
		t.Fatal("window of 6 bytes accepted")
	}
	if os.Geteuid() != 0 {
		os.Chmod(path, 0)
		_, err := OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 4}}, MemPath: path})
		if !errors.Is(err, ErrNoPermission) || !strings.Contains(err.Error(), "root") {
			t.Fatalf("unreadable /dev/mem: %v", err)
		}
	}
}

// TestMapErrorNamesTheDriver: an EPERM mapping is explained with the /proc/iomem
// lines covering the range and the kernel driver bound to the device.
func TestMapErrorNamesTheDriver(t *testing.T) {
	dir := t.TempDir()
	iomem := filepath.Join(dir, "iomem")
	os.WriteFile(iomem, []byte("40000000-7fffffff : System RAM\n"+
		"30be0000-30beffff : 30be0000.ethernet ethernet@30be0000\n"+
		"  30be0000-30beffff : 30be0000.ethernet ethernet@30be0000\n"+
		"30bf0000-30bfffff : 30bf0000.ethernet\n"), 0o600)
	sys := filepath.Join(dir, "sys")
	devDir := filepath.Join(sys, "bus/platform/devices/30be0000.ethernet")
	os.MkdirAll(devDir, 0o755)
	os.MkdirAll(filepath.Join(sys, "bus/platform/drivers/fec"), 0o755)
	if err := os.Symlink("../../../../bus/platform/drivers/fec", filepath.Join(devDir, "driver")); err != nil {
		t.Fatal(err)
	}
	d := &Device{cfg: DeviceConfig{MemPath: "/dev/mem", IOMemPath: iomem, SysfsRoot: sys}}
	err := d.mapError(Window{Phys: 0x30be0000, Size: 0x4000}, unix.EPERM)
	if !errors.Is(err, ErrDevMemDenied) {
		t.Fatalf("%v does not wrap ErrDevMemDenied", err)
	}
	// fec has no unbind file (suppress_bind_attrs): the hint must not name one.
	for _, want := range []string{"no unbind file", `"fec"`, "simple-pm-bus", "xnic doctor", "STRICT_DEVMEM", "30be0000-30beffff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "/unbind") {
		t.Errorf("error names an unbind file fec does not have: %v", err)
	}
	// imx-dwmac has one: the hint names the driver's own.
	os.Remove(filepath.Join(devDir, "driver"))
	os.Symlink("../../../../bus/platform/drivers/imx-dwmac", filepath.Join(devDir, "driver"))
	err = d.mapError(Window{Phys: 0x30be0000, Size: 0x4000}, unix.EPERM)
	if want := "echo 30be0000.ethernet > " + sys + "/bus/platform/drivers/imx-dwmac/unbind"; !strings.Contains(err.Error(), want) {
		t.Errorf("error does not say %q: %v", want, err)
	}
	if strings.Contains(err.Error(), "30bf0000") || strings.Contains(err.Error(), "System RAM") {
		t.Errorf("error lists ranges that do not overlap: %v", err)
	}
	if err := d.mapError(Window{Phys: 0x30be0000, Size: 4}, unix.EINVAL); errors.Is(err, ErrDevMemDenied) {
		t.Fatalf("EINVAL reported as a refusal: %v", err)
	}
}

func TestNoHugePagesMessage(t *testing.T) {
	dir := t.TempDir()
	hp := filepath.Join(dir, "kernel/mm/hugepages/hugepages-2048kB")
	os.MkdirAll(hp, 0o755)
	os.WriteFile(filepath.Join(hp, "nr_hugepages"), []byte("0\n"), 0o600)
	os.WriteFile(filepath.Join(hp, "free_hugepages"), []byte("0\n"), 0o600)
	h, err := NewHugePages(HugePagesConfig{Size: 2 << 20, SysRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	total, free, err := h.Pool()
	if err != nil || total != 0 || free != 0 {
		t.Fatalf("Pool = %d, %d, %v", total, free, err)
	}
	e := h.noHugePages(4 << 20)
	if !errors.Is(e, ErrNoHugePages) {
		t.Fatal(e)
	}
	for _, want := range []string{"hugepages=N", "nr_hugepages", "0 reserved, 0 free", "2 of 2048 kB"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("message does not say %q: %v", want, e)
		}
	}
	if _, err := NewHugePages(HugePagesConfig{Size: 3 << 20}); err == nil {
		t.Fatal("a 3 MiB page size accepted")
	}
	os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal: 1 kB\nHugepagesize:    1048576 kB\n"), 0o600)
	if h, err := NewHugePages(HugePagesConfig{ProcRoot: dir}); err != nil || h.PageSize() != 1<<30 {
		t.Fatalf("default size from meminfo: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal: 1 kB\n"), 0o600)
	if _, err := NewHugePages(HugePagesConfig{ProcRoot: dir}); err == nil || !strings.Contains(err.Error(), "HUGETLBFS") {
		t.Fatalf("no Hugepagesize: %v", err)
	}
}

type closeCount struct{ n *int }

func (c closeCount) Close() error { *c.n++; return nil }

// TestPreflightHook: a refusing Preflight stops OpenDevice before /dev/mem
// is opened (a missing path would otherwise be the error); an accepting one's
// Closer is closed once, by Close, and also when mapping fails.
func TestPreflightHook(t *testing.T) {
	refused := errors.New("refused")
	_, err := OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 4}}, MemPath: "/nonexistent/mem",
		Preflight: func() (io.Closer, error) { return nil, refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("OpenDevice with a refusing preflight: %v", err)
	}
	closed := 0
	d, err := OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 4}}, MemPath: memFile(t, 4096),
		Preflight: func() (io.Closer, error) { return closeCount{&closed}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if closed != 0 {
		t.Fatal("preflight's hold released while the device is open")
	}
	d.Close()
	d.Close()
	if closed != 1 {
		t.Fatalf("hold closed %d times, want 1", closed)
	}
	_, err = OpenDevice(DeviceConfig{Name: "x", Windows: []Window{{Phys: 0, Size: 6}}, MemPath: memFile(t, 4096),
		Preflight: func() (io.Closer, error) { return closeCount{&closed}, nil }})
	if err == nil || closed != 2 {
		t.Fatalf("failed open: %v, hold closed %d times in all, want 2", err, closed)
	}
}
