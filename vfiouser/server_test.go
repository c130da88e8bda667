package vfiouser_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
	"golang.org/x/sys/unix"
)

var le = binary.LittleEndian

// openFds counts this process's open descriptors.
func openFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents) - 1 // the directory's own descriptor
}

// TestMain fails the run when the tests leave descriptors open.
func TestMain(m *testing.M) {
	warm, _ := vfiousertest.NewEventfd() // let the runtime open its netpoller first
	_, c, _ := vfiousertest.Pair()
	if c != nil {
		c.Close()
	}
	warm.Close()
	before, _ := os.ReadDir("/proc/self/fd")
	code := m.Run()
	after, _ := os.ReadDir("/proc/self/fd")
	if code == 0 && len(after) > len(before) {
		fmt.Fprintf(os.Stderr, "vfiouser tests leaked %d file descriptors\n", len(after)-len(before))
		code = 1
	}
	os.Exit(code)
}

// served is a model served on one end of a socket pair, a client on the other.
type served struct {
	t     *testing.T
	m     *igbsim.Model
	dev   *sim.Device
	c     *vfiousertest.Client
	errc  chan error
	logs  chan string
	stats *vfiouser.Stats
}

func serve(t *testing.T, cfg igbsim.Config) *served {
	t.Helper()
	if cfg.AutonegDelay == 0 {
		cfg.AutonegDelay = 2 * time.Millisecond
	}
	m, err := igbsim.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	sc, cc, err := vfiousertest.Pair()
	require.NoError(t, err)
	s := &served{t: t, m: m, dev: m.SimDevice(), errc: make(chan error, 1), logs: make(chan string, 100), stats: &vfiouser.Stats{}}
	ctx, cancel := context.WithCancel(context.Background())
	opts := vfiouser.Options{Stats: s.stats, Logf: func(f string, a ...any) {
		select {
		case s.logs <- fmt.Sprintf(f, a...):
		default:
		}
	}}
	go func() { s.errc <- vfiouser.Serve(ctx, sc, s.dev, opts) }()
	s.c = vfiousertest.New(cc)
	t.Cleanup(func() {
		cancel()
		s.c.Close()
		<-s.errc
	})
	return s
}

// negotiated is serve plus a VERSION exchange.
func negotiated(t *testing.T, cfg igbsim.Config) *served {
	s := serve(t, cfg)
	_, _, err := s.c.Version(1, map[string]any{"max_msg_fds": 8, "max_data_xfer_size": 65536})
	require.NoError(t, err)
	return s
}

// end disconnects the client and returns what Serve returned.
func (s *served) end() error {
	s.c.Close()
	select {
	case err := <-s.errc:
		s.errc <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		s.t.Fatal("Serve did not return after the client disconnected")
		return nil
	}
}

func errnoOf(err error) unix.Errno {
	var e *vfiousertest.ErrReply
	if errors.As(err, &e) {
		return e.Errno
	}
	return 0
}

func TestVersionNegotiation(t *testing.T) {
	s := serve(t, igbsim.Config{})
	minor, caps, err := s.c.Version(3, map[string]any{
		"max_msg_fds": 4, "max_data_xfer_size": 4096, "pgsizes": 4096, "max_dma_maps": 100,
		"write_multiple": true, "migration": map[string]any{"pgsize": 4096},
	})
	require.NoError(t, err)
	require.Equal(t, uint16(1), minor, "minor is at most the server's 1")
	require.EqualValues(t, vfiouser.DefaultMaxMsgFds, caps["max_msg_fds"])
	require.EqualValues(t, vfiouser.DefaultMaxDataXfer, caps["max_data_xfer_size"])
	require.EqualValues(t, 4096, caps["pgsizes"])
	require.EqualValues(t, 100, caps["max_dma_maps"], "no more maps than the client can track")
	require.Equal(t, true, caps["write_multiple"])
	require.NotContains(t, caps, "migration", "migration is not offered")
	require.NotContains(t, caps, "twin_socket")

	_, _, err = s.c.Version(0, nil)
	require.Equal(t, unix.EINVAL, errnoOf(err), "a second VERSION is refused")
}

func TestVersionMinorZeroAndNoJSON(t *testing.T) {
	s := serve(t, igbsim.Config{})
	minor, caps, err := s.c.Version(0, nil)
	require.NoError(t, err)
	require.Zero(t, minor, "QEMU proposes 0.0")
	require.NotContains(t, caps, "write_multiple", "not proposed, not granted")
	info, err := s.c.DeviceInfo()
	require.NoError(t, err)
	require.Equal(t, vfiouser.DeviceFlagReset|vfiouser.DeviceFlagPCI, info.Flags)
}

func TestVersionRefused(t *testing.T) {
	for name, p := range map[string][]byte{
		"major 1":  {1, 0, 0, 0},
		"bad JSON": append([]byte{0, 0, 0, 0}, "{\"capabilities\":[}\x00"...),
		"4K pages missing": append([]byte{0, 0, 0, 0},
			"{\"capabilities\":{\"pgsizes\":8192}}\x00"...),
		"short": {0},
	} {
		t.Run(name, func(t *testing.T) {
			s := serve(t, igbsim.Config{})
			_, err := s.c.Call(vfiouser.CmdVersion, p)
			require.Error(t, err)
			require.NotZero(t, errnoOf(err), "an error reply, not a dropped connection: %v", err)
			require.Error(t, <-s.errc, "the session ends")
			s.errc <- nil
		})
	}
}

func TestCommandBeforeVersionEndsSession(t *testing.T) {
	s := serve(t, igbsim.Config{})
	_, err := s.c.DeviceInfo()
	require.Equal(t, unix.EINVAL, errnoOf(err))
	err = <-s.errc
	s.errc <- nil
	require.ErrorIs(t, err, vfiouser.ErrMessage)
	select {
	case <-s.c.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("server kept the connection open")
	}
}

func TestDeviceAndRegionInfo(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	info, err := s.c.DeviceInfo()
	require.NoError(t, err)
	require.Equal(t, vfiousertest.DeviceInfo{Argsz: 16, Flags: 3, Regions: 9, IRQs: 5}, info)

	rw := vfiouser.RegionFlagRead | vfiouser.RegionFlagWrite
	want := map[uint32]struct {
		size  uint64
		flags uint32
	}{0: {128 << 10, rw}, 1: {}, 2: {}, 3: {0x4000, rw}, 4: {}, 5: {}, 6: {}, 7: {4096, rw}, 8: {}}
	for idx, w := range want {
		ri, err := s.c.RegionInfo(idx)
		require.NoError(t, err, "region %d", idx)
		require.Equal(t, idx, ri.Index)
		require.Equal(t, w.size, ri.Size, "region %d size", idx)
		require.Equal(t, w.flags, ri.Flags, "region %d flags (never mmappable)", idx)
		require.Equal(t, uint32(32), ri.Argsz)
	}
	_, err = s.c.RegionInfo(9)
	require.Equal(t, unix.EINVAL, errnoOf(err))

	for idx, w := range map[uint32][2]uint32{
		vfiouser.IRQIntx: {vfiouser.IRQInfoEventfd | vfiouser.IRQInfoMaskable | vfiouser.IRQInfoAutomasked, 1},
		vfiouser.IRQMSI:  {vfiouser.IRQInfoEventfd | vfiouser.IRQInfoNoResize, 1},
		vfiouser.IRQMSIX: {vfiouser.IRQInfoEventfd | vfiouser.IRQInfoNoResize, 25}, // 82576: 25 MSI-X vectors (datasheet 7.3.1)
		vfiouser.IRQErr:  {vfiouser.IRQInfoEventfd, 1},
		vfiouser.IRQReq:  {vfiouser.IRQInfoEventfd, 1},
	} {
		flags, count, err := s.c.IRQInfo(idx)
		require.NoError(t, err)
		require.Equal(t, w[0], flags, "IRQ index %d flags", idx)
		require.Equal(t, w[1], count, "IRQ index %d count", idx)
	}
	_, _, err = s.c.IRQInfo(5)
	require.Equal(t, unix.EINVAL, errnoOf(err))
}

// caps walks the capability list of a configuration space image.
func caps(t *testing.T, cfg []byte) map[byte]int {
	t.Helper()
	require.NotZero(t, le.Uint16(cfg[0x06:])&0x10, "status: capabilities list")
	found := map[byte]int{}
	for p, n := int(cfg[0x34]), 0; p != 0; p, n = int(cfg[p+1]), n+1 {
		require.Less(t, n, 48, "capability list loops")
		require.GreaterOrEqual(t, p, 0x40, "capabilities start after the header")
		require.Zero(t, p&3, "capability pointers are dword aligned")
		found[cfg[p]] = p
	}
	return found
}

func TestConfigSpace(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	cfg, err := s.c.ReadRegion(vfiouser.RegionConfig, 0, 4096) // QEMU reads it whole
	require.NoError(t, err)
	require.Equal(t, uint16(0x8086), le.Uint16(cfg[0:]))
	require.Equal(t, uint16(0x10C9), le.Uint16(cfg[2:]), "82576 copper")
	require.Equal(t, []byte{0, 0, 2}, cfg[9:12], "class: Ethernet controller")
	require.Equal(t, uint32(0), le.Uint32(cfg[0x10:])&0xF, "BAR0: 32-bit memory, non-prefetchable")
	require.Equal(t, byte(1), cfg[0x3D], "INTA")

	c := caps(t, cfg)
	require.Contains(t, c, byte(0x01), "PM")
	require.Contains(t, c, byte(0x05), "MSI")
	require.Contains(t, c, byte(0x11), "MSI-X")
	require.Contains(t, c, byte(0x10), "PCI Express")
	msix := c[0x11]
	require.Equal(t, uint16(24), le.Uint16(cfg[msix+2:])&0x7FF, "table size N-1 for the 82576's 25 vectors")
	require.Equal(t, uint32(3), le.Uint32(cfg[msix+4:]), "table at BAR3 offset 0")
	require.Equal(t, uint32(0x2000|3), le.Uint32(cfg[msix+8:]), "PBA at BAR3 offset 0x2000")
	msi := c[0x05]
	require.NotZero(t, le.Uint16(cfg[msi+2:])&0x80, "MSI: 64-bit address")
	pcie := c[0x10]
	require.Equal(t, uint16(2), le.Uint16(cfg[pcie+2:])&0xF, "PCIe capability version 2")
	require.Zero(t, le.Uint16(cfg[pcie+2:])>>4&0xF, "PCIe endpoint")

	// BAR sizing: write all ones, read back the size mask.
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 0x10, []byte{0xFF, 0xFF, 0xFF, 0xFF}))
	b, err := s.c.ReadRegion(vfiouser.RegionConfig, 0x10, 4)
	require.NoError(t, err)
	require.Equal(t, ^uint32(128<<10-1), le.Uint32(b), "BAR0 decodes 128 KiB")
	// Read-only fields ignore writes.
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 0, []byte{0, 0, 0, 0}))
	b, err = s.c.ReadRegion(vfiouser.RegionConfig, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []byte{0x86, 0x80}, b)
	// The command register is the model's: bus mastering opens its DMA.
	require.False(t, s.dev.BusMaster())
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x06, 0x00}))
	require.True(t, s.dev.BusMaster())
	b, err = s.c.ReadRegion(vfiouser.RegionConfig, 4, 2)
	require.NoError(t, err)
	require.Equal(t, []byte{0x06, 0x00}, b)

	require.Equal(t, make([]byte, 4096-256), cfg[256:], "an empty extended capability list")
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 0x100, []byte{1, 0, 1, 0}))
	b, err = s.c.ReadRegion(vfiouser.RegionConfig, 0x100, 4)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 4), b, "extended space is read-only")
	_, err = s.c.ReadRegion(vfiouser.RegionConfig, 4090, 8)
	require.Equal(t, unix.EINVAL, errnoOf(err), "past the end of config space")
	_, err = s.c.ReadRegion(1, 0, 4)
	require.Equal(t, unix.EINVAL, errnoOf(err), "BAR1 does not exist")
}

func TestBAR0AccessSizes(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	const ral0, rah0 = 0x5400, 0x5404 // 82576 receive address 0 (datasheet 8.10.13)
	raw := make([]byte, 8)
	le.PutUint32(raw, 0x44332211)
	le.PutUint32(raw[4:], 0x80006655)
	require.NoError(t, s.c.WriteRegion(0, ral0, raw), "an 8-byte write is two 32-bit writes")
	lo, err := s.c.Read32(ral0)
	require.NoError(t, err)
	hi, err := s.c.Read32(rah0)
	require.NoError(t, err)
	require.Equal(t, uint32(0x44332211), lo)
	require.Equal(t, uint32(0x80006655), hi)

	b, err := s.c.ReadRegion(0, ral0, 8)
	require.NoError(t, err)
	require.Equal(t, raw, b, "an 8-byte read merges two 32-bit reads, low first")
	b, err = s.c.ReadRegion(0, ral0+2, 2)
	require.NoError(t, err)
	require.Equal(t, []byte{0x33, 0x44}, b, "a 2-byte read extracts from the dword")
	b, err = s.c.ReadRegion(0, ral0+1, 1)
	require.NoError(t, err)
	require.Equal(t, []byte{0x22}, b)

	require.Zero(t, s.m.FaultLog().Count())
	err = s.c.WriteRegion(0, ral0, []byte{0xAA, 0xBB})
	require.Equal(t, unix.EINVAL, errnoOf(err), "a 2-byte register write is refused")
	require.Equal(t, 1, s.m.FaultLog().Count(), "and logged as a fault")
	require.Contains(t, s.m.Faults()[0].Detail, "32-bit writes only")
	lo, err = s.c.Read32(ral0)
	require.NoError(t, err)
	require.Equal(t, uint32(0x44332211), lo, "the refused write changed nothing")

	_, err = s.c.ReadRegion(0, ral0+1, 2)
	require.Equal(t, unix.EINVAL, errnoOf(err), "unaligned 2-byte read")
	_, err = s.c.ReadRegion(0, ral0+2, 4)
	require.Equal(t, unix.EINVAL, errnoOf(err), "a dword across two registers")
	_, err = s.c.ReadRegion(0, 128<<10-4, 8)
	require.Equal(t, unix.EINVAL, errnoOf(err), "past the BAR")

	// Memory decoding off: the model master-aborts (all ones) and logs it.
	s.m.FaultLog().Clear()
	require.NoError(t, s.c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0, 0}))
	v, err := s.c.Read32(0x8) // STATUS
	require.NoError(t, err)
	require.Equal(t, uint32(0xFFFFFFFF), v)
	require.Equal(t, 1, s.m.FaultLog().Count())
}

func TestWriteMulti(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	// negotiated() did not propose write_multiple.
	p := make([]byte, 8+24)
	le.PutUint64(p, 1)
	_, err := s.c.Call(vfiouser.CmdRegionWriteMulti, p)
	require.Equal(t, unix.ENOTSUP, errnoOf(err))

	s2 := serve(t, igbsim.Config{})
	_, _, err = s2.c.Version(0, map[string]any{"write_multiple": true})
	require.NoError(t, err)
	p = make([]byte, 8+2*24)
	le.PutUint64(p, 2)
	for i, w := range []struct{ off, val uint32 }{{0x5400, 0x11223344}, {0x5404, 0x5566}} {
		e := p[8+24*i:]
		le.PutUint64(e, uint64(w.off))
		le.PutUint32(e[12:], 4)
		le.PutUint32(e[16:], w.val)
	}
	r, err := s2.c.Call(vfiouser.CmdRegionWriteMulti, p)
	require.NoError(t, err)
	require.Equal(t, uint64(2), le.Uint64(r))
	v, err := s2.c.Read32(0x5404)
	require.NoError(t, err)
	require.Equal(t, uint32(0x5566), v)
}

func TestMSIXBAR(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	ctl, err := s.c.ReadRegion(vfiouser.MSIXBAR, 12, 4)
	require.NoError(t, err)
	require.Equal(t, uint32(1), le.Uint32(ctl), "vector control resets masked")
	entry := []byte{0, 0, 0xE0, 0xFE, 0, 0, 0, 0}
	require.NoError(t, s.c.WriteRegion(vfiouser.MSIXBAR, 16, entry))
	b, err := s.c.ReadRegion(vfiouser.MSIXBAR, 16, 8)
	require.NoError(t, err)
	require.Equal(t, entry, b)
	_, err = s.c.ReadRegion(vfiouser.MSIXBAR, 2, 2)
	require.Equal(t, unix.EINVAL, errnoOf(err), "the table takes dwords and qwords")
	pba, err := s.c.ReadRegion(vfiouser.MSIXBAR, 0x2000, 8)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 8), pba, "nothing pending")
}

func TestUnsupportedCommands(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	for _, cmd := range []vfiouser.Command{vfiouser.CmdDeviceFeature, vfiouser.CmdRegionIOFDs, vfiouser.CmdMigDataRead, 99} {
		_, err := s.c.Call(cmd, make([]byte, 16))
		require.Equal(t, unix.ENOTSUP, errnoOf(err), "%s", cmd)
	}
	_, err := s.c.DeviceInfo()
	require.NoError(t, err, "the session goes on")
}

func TestNoReplyFlag(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	p := make([]byte, 20) // offset, region 0, count 4, data
	le.PutUint64(p, 0x5400)
	le.PutUint32(p[12:], 4)
	le.PutUint32(p[16:], 0xCAFE)
	require.NoError(t, s.c.Send(vfiouser.CmdRegionWrite, p))
	// Commands are handled in order: the read sees the write.
	v, err := s.c.Read32(0x5400)
	require.NoError(t, err)
	require.Equal(t, uint32(0xCAFE), v)
}

func TestResetResetsModel(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	require.NoError(t, s.c.Write32(0x5400, 0x12345678))
	require.NoError(t, s.c.Reset())
	require.Eventually(t, func() bool {
		v, err := s.c.Read32(0x5400)
		return err == nil && v == le.Uint32([]byte{0x02, 0, 0, 0}) // RAL0 back to the factory MAC
	}, 2*time.Second, time.Millisecond)
}

func TestDisconnectEndsSessionCleanly(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	require.NoError(t, s.end(), "a client disconnect is a clean end")
	var got []string
	for len(s.logs) > 0 {
		got = append(got, <-s.logs)
	}
	require.Empty(t, got, "no protocol errors logged: %s", strings.Join(got, "; "))
}

func TestContextCancelEndsSession(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{})
	require.NoError(t, err)
	defer m.Close()
	sc, cc, err := vfiousertest.Pair()
	require.NoError(t, err)
	c := vfiousertest.New(cc)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- vfiouser.Serve(ctx, sc, m.SimDevice(), vfiouser.Options{}) }()
	_, _, err = c.Version(0, nil)
	require.NoError(t, err)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve ignored the cancelled context")
	}
}

func TestListenAndServe(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{})
	require.NoError(t, err)
	defer m.Close()
	path := t.TempDir() + "/igb.sock"
	errc := make(chan error, 1)
	go func() {
		errc <- vfiouser.ListenAndServe(context.Background(), path, m.SimDevice(), vfiouser.Options{Once: true})
	}()
	var c *vfiousertest.Client
	require.Eventually(t, func() bool {
		c, err = vfiousertest.Dial(path)
		return err == nil
	}, 2*time.Second, time.Millisecond)
	_, _, err = c.Version(0, nil)
	require.NoError(t, err)
	id, err := c.ReadRegion(vfiouser.RegionConfig, 0, 4)
	require.NoError(t, err)
	require.Equal(t, []byte{0x86, 0x80, 0xC9, 0x10}, id)
	c.Close()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ListenAndServe with Once did not return")
	}
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "socket file removed")
}

// TestServesDWMACIntel: the Intel mGbE variant of dwmacsim is served the same
// way: its IDs, a 64 KiB BAR0 onto the DWC EQoS registers, 32 MSI-X vectors.
func TestServesDWMACIntel(t *testing.T) {
	m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IntelMGbE, PCIDevice: 0x4b30}) // Elkhart Lake RGMII
	require.NoError(t, err)
	defer m.Close()
	sc, cc, err := vfiousertest.Pair()
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- vfiouser.Serve(context.Background(), sc, m.SimDevice(), vfiouser.Options{}) }()
	c := vfiousertest.New(cc)
	_, _, err = c.Version(0, nil)
	require.NoError(t, err)
	cfg, err := c.ReadRegion(vfiouser.RegionConfig, 0, 256)
	require.NoError(t, err)
	require.Equal(t, uint32(0x4b308086), le.Uint32(cfg))
	msix := caps(t, cfg)[0x11]
	require.NotZero(t, msix)
	require.Equal(t, uint16(31), le.Uint16(cfg[msix+2:])&0x7FF, "32 vectors")
	ri, err := c.RegionInfo(0)
	require.NoError(t, err)
	require.Equal(t, uint64(64<<10), ri.Size)
	require.NoError(t, c.WriteRegion(vfiouser.RegionConfig, 4, []byte{0x02, 0}))
	ver, err := c.Read32(0x110) // MAC_Version (Linux dwmac4.h GMAC_VERSION): SNPSVER in bits 7:0
	require.NoError(t, err)
	require.NotZero(t, ver&0xFF, "the model's version register answers through BAR0")
	require.NoError(t, m.Err())
	c.Close()
	require.NoError(t, <-errc)
}
