package bpf

import "testing"

// TestDecodeAgreesWithKernel: the decoder and the kernel's verifier accept
// and refuse the same instructions: every row's sample and each of its
// reserved fields set, and TestDecodeReservedFields' encodings. Each runs
// between a prologue that gives the kernel initialised registers and stack
// (r0 = 0, r1 = 1, r2 = 2, *(u64 *)(r10 - 8) = 0) and "r0 = 0; exit". Rows
// the kernel cannot take alone are left out: callx (an xnic and ubpf
// extension the kernel refuses), calls, map and function lddw (they need
// a map or a callback), the context loads (r1 is no context here) and the
// kfunc call. Needs root; skips otherwise.
func TestDecodeAgreesWithKernel(t *testing.T) {
	needKernel(t)
	prologue := asmProg(ins(0xb7, 0, 0, 0, 0), ins(0xb7, 1, 0, 0, 1), ins(0xb7, 2, 0, 0, 2), ins(0x7a, 10, 0, -8, 0))
	epilogue := asmProg(ins(0xb7, 0, 0, 0, 0), exitInsn)
	type probe struct {
		name string
		body []byte // the instruction(s) under test, with no exit
	}
	var probes []probe
	for _, d := range rows() {
		switch d.info.form {
		case formCallX, formCall, formCtx, formExit:
			continue
		case formLddw:
			if d.info.key != 0 {
				continue
			}
		}
		code := sample(d.info)
		body := code[:len(code)-len(exitInsn)]
		probes = append(probes, probe{d.info.name, body})
		for f := fDst; f <= fImm; f <<= 1 {
			if forms[d.info.form].zero&f != 0 {
				probes = append(probes, probe{d.info.name + " with " + f.String(), mutate(body, f, 2)})
			}
		}
	}
	for _, c := range reservedCases {
		probes = append(probes, probe{c.name, c.bad}, probe{c.name + " (clear)", c.ok})
	}
	agree := 0
	for _, pr := range probes {
		code := asmProg(prologue, pr.body, epilogue)
		_, xerr := LoadRaw("t", code, nil)
		kerr := kernelVerify(code)
		if (xerr == nil) != (kerr == nil) {
			t.Errorf("%s: xnic %v, kernel %v", pr.name, xerr, kerr)
			continue
		}
		agree++
	}
	t.Logf("%d instructions: xnic and the kernel agree on %d", len(probes), agree)
}
