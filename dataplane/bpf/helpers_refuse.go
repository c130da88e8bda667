package bpf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Why xnic refuses helpers that XDP programs may call in the kernel. The
// loader appends the reason to the refusal (lazy loading: only the programs
// calling them are refused).
var helperWhy = map[int32]string{
	118: "bpf_jiffies64: the kernel's jiffies counter (its HZ and boot offset) is not visible from user space; use bpf_ktime_get_ns",
	169: "bpf_timer: timer callbacks run asynchronously in the kernel's softirq context, and xnic runs programs only for frames (no timer context)",
	170: "bpf_timer: timer callbacks run asynchronously in the kernel's softirq context, and xnic runs programs only for frames (no timer context)",
	171: "bpf_timer: timer callbacks run asynchronously in the kernel's softirq context, and xnic runs programs only for frames (no timer context)",
	172: "bpf_timer: timer callbacks run asynchronously in the kernel's softirq context, and xnic runs programs only for frames (no timer context)",
	84:  "socket lookups need the host kernel's socket tables, which xnic's ports do not reach",
	85:  "socket lookups need the host kernel's socket tables, which xnic's ports do not reach",
	86:  "socket lookups need the host kernel's socket tables, which xnic's ports do not reach",
	99:  "socket lookups need the host kernel's socket tables, which xnic's ports do not reach",
	100: "SYN cookie checks need the host kernel's TCP listener sockets",
	110: "SYN cookie checks need the host kernel's TCP listener sockets",
	112: "reads of another address space (user or kernel memory) have no meaning for xnic",
	113: "reads of another address space (user or kernel memory) have no meaning for xnic",
	204: "xnic does not implement SYN cookies: the kernel's are keyed by its own boot-time secret",
	205: "xnic does not implement SYN cookies: the kernel's are keyed by its own boot-time secret",
	206: "xnic does not implement SYN cookies: the kernel's are keyed by its own boot-time secret",
	207: "xnic does not implement SYN cookies: the kernel's are keyed by its own boot-time secret",
	153: "per-CPU kernel variables (ksyms) do not exist in user space",
	154: "per-CPU kernel variables (ksyms) do not exist in user space",
	194: "kptrs hold kernel objects, which do not exist in user space",
	197: "dynptrs are not implemented by xnic",
	198: "dynptrs are not implemented by xnic",
	199: "dynptrs are not implemented by xnic",
	200: "dynptrs are not implemented by xnic",
	201: "dynptrs are not implemented by xnic",
	202: "dynptrs are not implemented by xnic",
	203: "dynptrs are not implemented by xnic",
	209: "user ring buffers are not implemented by xnic",
}

// explainRefusal adds the reason to a load error about a helper xnic does
// not implement, when there is one.
func explainRefusal(err error) error {
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrHelperNotAllowed) {
		return err
	}
	msg := le.Err.Error()
	open := strings.LastIndexByte(msg, '(')
	if open < 0 || !strings.HasSuffix(msg, ")") {
		return err
	}
	id, perr := strconv.Atoi(msg[open+1 : len(msg)-1])
	if perr != nil {
		return err
	}
	if why := helperWhy[int32(id)]; why != "" {
		return fmt.Errorf("%w (%s)", err, why)
	}
	return err
}
