package bpf

import (
	"bytes"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progLoadAttr is the head of union bpf_attr for BPF_PROG_LOAD
// (include/uapi/linux/bpf.h), up to expected_attach_type.
type progLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       uint64
	license     uint64
	logLevel    uint32
	logSize     uint32
	logBuf      uint64
	kernVersion uint32
	progFlags   uint32
	progName    [16]byte
	ifindex     uint32
	attachType  uint32
}

// kernelVerify loads code, byte for byte, as an XDP program with the
// bpf(2) syscall (cilium/ebpf's asm would rewrite fields it does not model,
// such as off of an add) and returns the verifier's refusal, or nil.
func kernelVerify(code []byte) error {
	fd, err := kernelLoad(code)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// kernelLoad is kernelVerify that returns the program's fd (the caller
// closes it).
func kernelLoad(code []byte) (int, error) {
	const progLoad, progTypeXDP = 5, 6
	license := []byte("GPL\x00")
	log := make([]byte, 1<<16)
	attr := progLoadAttr{progType: progTypeXDP, insnCnt: uint32(len(code) / insnSize),
		insns:    uint64(uintptr(unsafe.Pointer(unsafe.SliceData(code)))),
		license:  uint64(uintptr(unsafe.Pointer(unsafe.SliceData(license)))),
		logLevel: 1, logSize: uint32(len(log)), logBuf: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(log))))}
	// The verifier returns EAGAIN when a signal arrives while it runs (the
	// Go runtime's preemption signal, on a loaded machine; bpf(2): "EAGAIN
	// ... interrupted"): load again, a bounded number of times.
	var fd uintptr
	var errno unix.Errno
	for range 100 {
		fd, _, errno = unix.Syscall(unix.SYS_BPF, progLoad, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		if errno != unix.EAGAIN {
			break
		}
	}
	runtime.KeepAlive(code)
	runtime.KeepAlive(license)
	runtime.KeepAlive(log)
	if errno != 0 {
		msg := log
		if i := bytes.IndexByte(msg, 0); i >= 0 {
			msg = msg[:i]
		}
		lines := bytes.Split(bytes.TrimSpace(msg), []byte("\n"))
		last := lines[len(lines)-1]
		if len(lines) > 1 && bytes.HasPrefix(last, []byte("processed ")) {
			last = lines[len(lines)-2] // the refusal, before the statistics
		}
		return -1, fmt.Errorf("%w: %s", errno, last)
	}
	return int(fd), nil
}
