package bpf

// stackProven reports whether an n-byte access at register base + off is
// one the JIT backends address without a region check (stackAccess): base
// is r10 itself and the bytes lie in the frame below it, as the loader
// requires of every such access (checkStackOff). r10 holds regionStack<<32
// | fp with fp in [frameSize, stackSize] (at most maxFrames frames), and the
// stack region is [0, stackSize) for loads and stores in every Runner
// (NewRunner), so the access lies inside it.
func stackProven(base uint8, off, n int32) bool {
	return base == 10 && off >= -frameSize && off+n <= 0 && n > 0
}
