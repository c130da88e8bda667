// Package bpf runs unmodified XDP programs compiled by clang (-target bpf) in an
// interpreter with the kernel's semantics.
//
// Loading: LoadFile reads an ELF object through cilium/ebpf's CollectionSpec
// (several programs, BTF and legacy maps, global data sections as single-entry
// array maps with direct value access, bpf-to-bpf calls, program arrays). Every
// program is checked once at load, in the spirit of the kernel's verifier
// (unknown opcodes, jumps out of range or into the second half of lddw, falling
// off the end, writes to r10, unknown or unimplemented helpers, unresolved map
// references), then pre-decoded into a compact internal form: map and helper
// references are resolved, jump targets made absolute, and each opcode variant
// (imm/reg, 32/64-bit, sign-extending forms, sdiv/smod, ...) gets its own
// internal operation so the hot loop does one switch per instruction.
//
// Execution: a Runner (one per poll goroutine; not safe for concurrent use)
// runs a Program on a Frame (the xdp_buff). Pointers are tagged 64-bit values:
// the high 32 bits name a region in the Runner's region table (context, stack,
// packet, a map value, global data, a ring buffer record), the low 32 bits are
// an offset into it. Every load and store is checked against the bounds of the
// region it points into, so a program can never touch memory outside its
// regions; pointer comparisons (data against data_end) and pointer arithmetic
// work as in the kernel because both pointers carry the same tag. A violation,
// an over-long run (the instruction budget, counted on backward jumps and calls)
// or a bad helper argument ends the run with XDP_ABORTED, and Runner.Fault says
// which instruction and why. The Runner never panics and does not allocate per
// run.
//
// Run's context is the kernel's xdp_md: data, data_end, data_meta,
// ingress_ifindex, rx_queue_index, egress_ifindex. Helpers respect the limits
// measured on the kernel (adjust_head, adjust_tail, adjust_meta) and return the
// kernel's errno values.
//
// RunRaw (and RunProgram) run a bare instruction stream on a block of memory,
// as the bpf_conformance suite does (r1 = memory, r2 = its length).
//
// Speed: the run loop has a fast level that calls no function (ALU, jumps,
// loads and stores that hit their region, returns) and a slow level for
// helpers, calls, atomics, division, shifts by a register and faults. The
// fast level calls no function, so the compiler keeps its state in registers
// (its bounds checks are spelled out for that reason). The register file is
// 256 entries so that register fields index it without a mask, and the
// switch covers all 256 op values so that its jump table needs no range
// check. At load, the patterns clang emits are fused into one operation
// each: "rX = rY; rX += K" and the packet bounds check that follows it
// ("if rX > data_end goto", with or without "r0 = verdict" in between), a
// move before a conditional jump, the byte-wise u16 load (both byte orders)
// and the test of its value, a byte or u16 load and the ==/!= test of it,
// an and with a constant (of a moved copy, or in place) and the ==/!= test
// of the result, the counter
// update "r = *p; r += K; *p = r", the map lookup with its key on the stack
// and its null test (one slow-path operation), the two context loads
// at the start, a u16 load and the be16 of it, "r0 = K; exit",
// "r = s; r >>= K" and "r <<= K; r |= s" (byte-wise stores and loads), and two
// u16 or u32 loads (or stores) in a row through the same pointer, checked
// as one span (header rewrites such as MAC swaps). Loads of data, data_end and data_meta through a register
// that holds the context on every path (a small dataflow analysis) read the
// frame directly. A fused group keeps its later slots unchanged, is never
// the target of a jump, jumps only forward, and on any fault falls back to
// running its first instruction alone on the slow path, so faults name the
// instruction that really faults. Map lookups return a region for the
// value, so a program's further accesses need no helper; a lookup that
// finds the region it made in the last run reuses it. RunBurst runs a burst
// of frames under one recover instead of one per frame.
// BenchmarkReference measures the reference parser.
//
// The hot loop is sensitive to code alignment: its dispatch sequence is
// about 35 bytes, and when the function lands 32 bytes past a 64-byte
// boundary (Go aligns functions to 32 bytes) the sequence straddles two
// 64-byte lines and every instruction costs about 0.5 ns more (ALU loop 2.1
// against 1.6 ns per instruction, the reference program 53 against 43 ns).
// Binaries that run programs should be linked with -ldflags=-funcalign=64.
//
// The stack is not cleared between runs (the registers are). Like the
// kernel, whose verifier rejects reads of stack slots not written before, a
// program should write before it reads; one that reads uninitialised stack
// gets whatever earlier runs on the same Runner left there: never memory
// outside the stack, but possibly data of another program. Give programs
// that must not see each other's data a Runner each.
package bpf
