//go:build !linux || !(amd64 || arm64)

package bpf

// No JIT backend for this platform: programs run in the interpreter.

const jitArch = false

const jitMaxCode = 0

func newBackend([]insn, jitEnv, []bool, []int32) jitBackend { return nil }

func mapCode([]byte) ([]byte, uintptr, error) { return nil, 0, ErrNoJIT }

func unmapCode([]byte) error { return nil }

func jitRun(r *Runner, reg *[256]uint64, entry uintptr) uint32 {
	panic("bpf: no JIT on this platform") // unreachable: no program has native code
}

func jitStart(r *Runner, reg *[256]uint64, entry uintptr, r1, r10 uint64) (uint32, uint64) {
	panic("bpf: no JIT on this platform")
}

func jitBurst(r *Runner, j *jitProg, frames []Frame, verdicts []Action, budget int64) (int, uint32, uint64) {
	panic("bpf: no JIT on this platform")
}

const nativeHelpersArch = false

func jitStartFrame(r *Runner, f *Frame, entry uintptr) (uint32, uint64) {
	panic("bpf: no JIT on this platform")
}
