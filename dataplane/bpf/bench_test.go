package bpf

import "testing"

// BenchmarkRunOverhead is the fixed cost of Run: a program of two
// instructions (r0 = XDP_PASS; exit).
func BenchmarkRunOverhead(b *testing.B) {
	p, err := LoadRaw("pass", asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(1))
	cpuBench(b, func() { r.Run(p, f) })
}

// BenchmarkALULoop is the interpreter's speed on plain ALU work: a loop of
// 1000 iterations of 4 instructions.
func BenchmarkALULoop(b *testing.B) {
	p, err := LoadRaw("loop", asmProg(
		ins(0xb7, 0, 0, 0, 0),    // r0 = 0
		ins(0xb7, 1, 0, 0, 1000), // r1 = 1000
		ins(0x0f, 0, 1, 0, 0),    // loop: r0 += r1
		ins(0xa7, 0, 0, 0, 0x55), // r0 ^= 0x55
		ins(0x07, 1, 0, 0, -1),   // r1 += -1
		ins(0x55, 1, 0, -4, 0),   // if r1 != 0 goto loop
		ins(0xb7, 0, 0, 0, 2),    // r0 = 2
		exitInsn), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(1))
	cpuBench(b, func() { r.Run(p, f) })
}

// BenchmarkReferenceBurst is BenchmarkReference through RunBurst, 32 frames a
// burst; cpu-ns/run is per frame.
func BenchmarkReferenceBurst(b *testing.B) {
	c := loadTestdata(b, "parse.o", nil)
	p, err := c.DefaultXDP()
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	const burst = 32
	frames := make([]Frame, burst)
	for i := range frames {
		frames[i] = *newFrame(udpFrame(53))
	}
	verdicts := make([]Action, burst)
	if n, first := r.RunBurst(p, frames, verdicts, nil); n != burst || first >= 0 || verdicts[0] != ActionPass {
		b.Fatal("wrong verdicts")
	}
	cpuBenchN(b, burst, func() { r.RunBurst(p, frames, verdicts, nil) })
}

// BenchmarkRunOverheadBurst is BenchmarkRunOverhead through RunBurst.
func BenchmarkRunOverheadBurst(b *testing.B) {
	p, err := LoadRaw("pass", asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	const burst = 32
	frames := make([]Frame, burst)
	for i := range frames {
		frames[i] = *newFrame(udpFrame(1))
	}
	verdicts := make([]Action, burst)
	cpuBenchN(b, burst, func() { r.RunBurst(p, frames, verdicts, nil) })
}
