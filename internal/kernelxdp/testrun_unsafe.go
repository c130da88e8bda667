package kernelxdp

import (
	"errors"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// testRunAttr is union bpf_attr for BPF_PROG_TEST_RUN
// (include/uapi/linux/bpf.h, the "test" struct), up to batch_size.
type testRunAttr struct {
	progFd      uint32
	retval      uint32
	dataSizeIn  uint32
	dataSizeOut uint32
	dataIn      uint64
	dataOut     uint64
	repeat      uint32
	duration    uint32
	ctxSizeIn   uint32
	ctxSizeOut  uint32
	ctxIn       uint64
	ctxOut      uint64
	flags       uint32
	cpu         uint32
	batchSize   uint32
	_           uint32
}

// testRun is BPF_PROG_TEST_RUN of p on data with context ctxIn, repeat
// times, the output in dataOut and ctxOut (both required). cilium/ebpf's
// Program.Run drops the duration the kernel measures and Program.Benchmark
// takes no context: this call keeps both. It returns the last run's
// verdict, the bytes of dataOut written and the kernel's duration per run
// in whole nanoseconds. An interrupted run (EINTR) is run again whole.
func testRun(p *ebpf.Program, data, dataOut []byte, ctxIn, ctxOut *xdpMD, repeat uint32) (verdict uint32, outLen int, perRunNs uint32, err error) {
	attr := testRunAttr{
		progFd:      uint32(p.FD()),
		dataSizeIn:  uint32(len(data)),
		dataSizeOut: uint32(len(dataOut)),
		dataIn:      uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))),
		dataOut:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(dataOut)))),
		repeat:      repeat,
		ctxSizeIn:   uint32(unsafe.Sizeof(*ctxIn)),
		ctxSizeOut:  uint32(unsafe.Sizeof(*ctxOut)),
		ctxIn:       uint64(uintptr(unsafe.Pointer(ctxIn))),
		ctxOut:      uint64(uintptr(unsafe.Pointer(ctxOut))),
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		runtime.KeepAlive(data)
		runtime.KeepAlive(dataOut)
		runtime.KeepAlive(ctxIn)
		runtime.KeepAlive(ctxOut)
		if errors.Is(errno, unix.EINTR) {
			continue
		}
		if errno != 0 {
			return 0, 0, 0, errno
		}
		if int(attr.dataSizeOut) > len(dataOut) {
			return 0, 0, 0, errors.New("the kernel wrote more output than the buffer holds")
		}
		return attr.retval, int(attr.dataSizeOut), attr.duration, nil
	}
}
