package bpf

import "testing"

// BenchmarkGoHelperBurst is the fixed cost of a helper run in Go in the
// middle of a native burst: a program that calls bpf_get_numa_node_id
// (which has no native code) and passes, in bursts of 64 frames;
// cpu-ns/run is per frame.
func BenchmarkGoHelperBurst(b *testing.B) {
	needJIT(b)
	call := ins(0x85, 0, 0, 0, 42) // bpf_get_numa_node_id
	p, err := LoadRaw("gocall", asmProg(call, ins(0xb7, 0, 0, 0, 2), exitInsn), &Options{Engine: EngineJIT})
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	const burst = 64
	frames := make([]Frame, burst)
	for i := range frames {
		frames[i] = *newFrame(udpFrame(1))
	}
	verdicts := make([]Action, burst)
	cpuBenchN(b, burst, func() { r.RunBurst(p, frames, verdicts, nil) })
}

// BenchmarkGoHelperRun is BenchmarkGoHelperBurst one frame a Run.
func BenchmarkGoHelperRun(b *testing.B) {
	needJIT(b)
	call := ins(0x85, 0, 0, 0, 42)
	p, err := LoadRaw("gocall", asmProg(call, ins(0xb7, 0, 0, 0, 2), exitInsn), &Options{Engine: EngineJIT})
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(1))
	cpuBench(b, func() { r.Run(p, f) })
}
