package bpf

import "testing"

// unfused is p's interpreter stream without fusions: every slot as decoded.
func unfused(p *Program) []xinsn {
	x := make([]xinsn, len(p.code))
	for i, in := range p.code {
		x[i] = plainX(in)
	}
	return x
}

// BenchmarkReferenceFusion is BenchmarkReference in the interpreter with
// and without the fused operations, in the same run.
func BenchmarkReferenceFusion(b *testing.B) {
	for _, fused := range []bool{false, true} {
		name := "plain"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			c := loadTestdata(b, "parse.o", &Options{Engine: EngineInterp})
			p, _ := c.DefaultXDP()
			if !fused {
				p.icode = unfused(p)
			}
			r := NewRunner(0)
			f := newFrame(udpFrame(53))
			if r.Run(p, f) != ActionPass {
				b.Fatal("wrong verdict")
			}
			cpuBench(b, func() { r.Run(p, f) })
		})
	}
}
