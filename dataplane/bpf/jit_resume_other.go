//go:build !linux || !(amd64 || arm64)

package bpf

// burstCall never resumes a burst where there is no JIT (jit_resume_unsafe.go).
func (r *Runner) burstCall(p *Program, j *jitProg, frames []Frame, verdicts []Action, d int, e uint32, v uint64) (int, uint32, uint64, bool) {
	return d, e, v, false
}
