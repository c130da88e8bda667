// Package bpf runs unmodified XDP programs compiled by clang (-target bpf) with
// the kernel's semantics: as native code (the JIT, on linux/amd64 and
// linux/arm64) or in an
// interpreter, which is the reference and runs everywhere.
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
// The operation table (optable.go) describes each of those operations once:
// opcode, operand form, the field that selects among variants sharing an
// opcode, width, signedness, how the immediate is stored, the fields the
// kernel's verifier reserves, the operator llvm-objdump prints, the
// interpreter level that runs it and what the JIT backends do with it.
// Decoding and its field checks, the interpreter's split into levels,
// InsnText (the llvm-objdump syntax, used by xnic prog objdump and prog
// disasm) and the JIT's contract are all read from it, and tests hold it to
// RFC 9669's opcode list, to the kernel's verifier (the same instructions
// accepted and refused), to the run loop and to each JIT backend.
//
// The interpreter's ALU, jump, load and store cases are generated from the
// table: what each does follows from its row's form, width, signedness and
// operator, and its slow flag puts it in the fast loop or in slowALU. They
// stand in interp.go between "Code generated" and "End of generated code"
// lines, among the hand-written cases (context and wide loads, fused
// operations, exit), so the compiler sees one switch as before. go generate (make generate)
// rewrites them; TestInterpGenerated, run by make lint, fails when they are
// stale. The generator is interp_gen_test.go: it reads the table itself and
// the op constants' names from isa.go, and refuses a row it cannot express.
//
// Adding an ALU, jump, load or store operation: its op constant in isa.go (and the
// opcode field's constant there, with its name in opcode_string.go, if the
// code is new), its row in opTable, then go generate ./dataplane/bpf; the
// interpreter needs nothing else unless the row brings an operator the
// generator does not know (it says so: teach interpCase). Each JIT backend
// then compiles it (TestOpTableJIT names a row a backend lacks).
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
// Kfuncs: the XDP RX metadata kfuncs bpf_xdp_metadata_rx_timestamp,
// bpf_xdp_metadata_rx_hash and bpf_xdp_metadata_rx_vlan_tag, resolved by the
// extern's name, answer from Frame.Meta (0 and the value, -ENODATA when the
// frame has none, -EOPNOTSUPP when the port cannot or Meta is nil); calls of
// any other kfunc refuse the program at load, naming it. The kernel only
// runs them in device-bound programs, so they have no BPF_PROG_TEST_RUN
// counterpart to compare with.
//
// RunRaw (and RunProgram) run a bare instruction stream on a block of memory,
// as the bpf_conformance suite does (r1 = memory, r2 = its length).
//
// Speed: the run loop has a fast level that calls no function (ALU, jumps,
// loads and stores that hit their region, wide loads, returns) and a slow
// level for helpers, calls, atomics, division, shifts by a register and
// faults (opTable's slow flag says which). The fast level calls no
// function but small helpers the compiler inlines, so it keeps its state in
// registers. The register file is 256 entries so that register fields index
// it without a mask, and the switch covers all 256 op values so that its
// jump table needs no range check. A taken backward jump charges the
// instruction budget in one place (its distance back plus one); calls
// charge it on the slow level by the same rule. The fast level runs its
// own form of the program (Program.icode, interp_fuse.go), built at load
// from the decoded stream: one 32-byte slot per instruction, with the
// frequent sequences of clang's XDP code (packet bounds checks, a load or
// mask and a test, byte-wise 16-bit fields, the default verdict before the
// context loads, ...) fused into one operation where they start. Only that
// first slot changes, so a jump into a sequence runs what follows; a fused
// operation leaves for the slow level, which runs the decoded instruction,
// at the instruction that needs it, so a fault still names the instruction
// that faults and the budget is charged from the jump itself. Packet loads
// the range analysis below proves in bounds run without their check in
// runs with a frame. The first round of fast runs without Run's recover
// (runInterp), as the JIT's does.
// Loads of data, data_end and data_meta through a register that holds the
// context on every path (a small dataflow analysis) read the frame
// directly. Map lookups return a region for the value, so a program's
// further accesses need no helper; a lookup that finds the region it made
// in the last run reuses it. RunBurst runs a burst of frames under one
// recover instead of one per frame. BenchmarkReference measures the
// reference parser; BenchmarkReferenceKernel measures the examples' speed
// reference in each engine against the kernel's JIT (BPF_PROG_TEST_RUN) in
// the same run; BenchmarkReferenceFusion the interpreter with and without
// its fused operations.
//
// The hot loop is sensitive to code alignment: its dispatch sequence is
// about 35 bytes, and when the function lands 32 bytes past a 64-byte
// boundary (Go aligns functions to 32 bytes) the sequence straddles two
// 64-byte lines and every instruction costs about 0.5 ns more (ALU loop 2.1
// against 1.6 ns per instruction, the reference program 53 against 43 ns).
// Binaries that run programs in the interpreter should be linked with
// -ldflags=-funcalign=64; the JIT's speed does not depend on it (its code is
// in its own mapping, page-aligned).
//
// # JIT
//
// Options.Engine picks the engine: EngineDefault (the JIT where
// JITAvailable, else the interpreter), EngineInterp or EngineJIT. With the
// JIT, every program is compiled at load from its decoded instruction
// stream (the one the interpreter runs, context loads specialised) to
// machine code for the platform; the front end (jit.go: the compile
// driver compileNative, exits, budget charges, region guesses) is common,
// the backend (a jitBackend) is a file set per architecture (jit_amd64.go
// and .s, jit_arm64.go and .s with its A64 encodings named in a64enc.go;
// arm64 also cleans and invalidates the caches over the code before sealing
// it). Each backend dispatches on the operand form of the instruction's
// opTable row and reads the variant from the row: width, signedness and
// the opcode's operation field (a table per backend maps those to machine
// encodings and condition codes). XNIC_ENGINE=interp or jit in the environment overrides
// EngineDefault for the process. The code goes into its own mapping,
// written while read-write and then sealed read-execute with mprotect, so it
// is never writable and executable at once; Collection.Close unmaps it (the
// programs then run in the interpreter), and so does a cleanup
// (runtime.AddCleanup) when a Program is no longer reachable. Close must not
// race with runs of the collection's programs: stop the poll loops first.
//
// The native code has exactly the interpreter's semantics and safety, and
// trusts nothing the program's compiler did: BPF registers live in machine
// registers; every load and store computes its tagged address and checks it
// against the region table in the Runner (region number below the table's
// length, lo <= offset, offset+size <= hi, or whi for stores), exactly as
// the interpreter's fast path, inline for the region guessed (the one the
// range analysis below places the base register in: the stack through a
// copy of r10, a global data region, checked against its constant bounds,
// a map lookup's value, checked against the table inline, or the packet;
// else the stack through r10 and the packet through any other register) and out of line for the others, unless the range
// analysis proved it; an access through r10 itself has no
// check, since the loader keeps it in the 512-byte frame below r10, which
// is never written (stackProven), and neither has one through a register
// that holds r10 plus a constant in a straight line (stackKeyOff: copies
// of r10, helpers' keys) when the bytes lie in that frame; such an access
// addresses [stackBase + r10 + off], stackBase being the stack's address
// minus its tag (jitState), and the next one in a straight line (also
// an array lookup's key) reuses stackBase from the scratch
// register (stackHeld). The stack's
// entry never changes, so the
// check of another access guessed on the stack compares with the constant
// bounds; an access through the result of
// a native array lookup, reached from it in a straight line, is checked
// against the lookup's region inline with the value's size known at
// compile time (jit_value.go), and one right after another such access
// through the same pointer reuses its table entry and buffer, checking only
// its own limit (valueReuse); backward jumps charge the instruction
// budget by the same amounts, so a budget fault names the same slot;
// division and modulo give the interpreter's results for a zero divisor and
// INT_MIN / -1 (amd64 branches around DIV, arm64's UDIV/SDIV never trap);
// atomics check the region and the natural alignment the interpreter
// requires, then use locked instructions (amd64, a CMPXCHG loop for
// fetch-or/and/xor) or exclusive load/store loops (arm64).
//
// Range analysis (jit_range.go, provenIn). At load, a forward dataflow over
// the instruction stream, in the spirit of the kernel verifier's packet
// ranges, follows packet pointers (data + c, and data + c + v for a scalar
// v of known range such as the IPv4 header length times 4, or an IPv6
// extension header's length shifted by a count of known range), data_end and
// pointers into global data (.data, .rodata, .bss, plus a constant or an
// index of known range; pointers into one region that reach an
// instruction at different offsets meet in the range that holds both, as
// in the tail clang merges for two counters bumped on two paths). A 64-bit compare of a packet pointer with data_end
// proves, on the edge where it holds, that many bytes after the pointer's
// base; global data regions have bounds fixed at load. A compare of a
// register with a constant or a scalar of known range bounds it on the
// edge where it holds, and every register a move linked with it (linked
// scalars, as the kernel's verifier's scalar ids: jit_range_link.go), so
// clang's "mov r1, r4; if r1 > 4 goto; index with r4" is proven. A load or store
// that lies inside what is proved is emitted as a plain access to the
// region's buffer at the pointer's offset, without the check; for the
// packet that is one instruction, [base + pointer + off], the base being
// the packet's buffer minus regionPacket<<32, pinned in a register (RBP,
// X25: jit_amd64_pktbase.go, jit_arm64_pktbase.go) that the trampolines set
// at each entry and the burst loop per frame; the inline check of an
// access guessed on the packet addresses it through the same register. A global
// data access addresses its collection's buffer (an immediate) and checks
// no collection: native code of a collection's program runs only while
// the Runner is bound to it, whose table holds the same buffers for the
// interpreter, because the Runner binds only at the start of a run, Go
// enters native code only for a program of the bound collection, and a
// tail call into a program of another collection falls through
// (jitBoundColl). Anything else keeps its check: a program without the
// compare faults where the interpreter does, naming the same instruction.
// A proven access through a global data pointer whose value the analysis
// knows exactly (lddw plus constants) addresses the buffer at a constant
// (jit_range_guess.go). The analysis is a must-analysis (paths meet in
// "unknown", but packet pointers at known distances past data meet in a
// join base, proven by the compares after the join, and an instruction
// one edge reaches takes that edge's state as it is; links hold only
// where they hold on every path, two scalar
// ranges meet in the larger, rounded up to 2^k-1 once an instruction's
// state changed 8 times, so the offsets of headers after an optional VLAN
// tag stay a variable offset of known range and loops settle), forgets
// only r0-r5 at a call of a helper that keeps the packet (the helper
// table's keepsPacket: every helper but the three adjust helpers, which
// move data or data_end, and those that run program code), everything at
// other calls and subprogram entries, keeps every figure below 2^20 so
// no tagged value carries into its tag, and gives up (proving nothing) on
// programs over 16384 instructions or without a fixpoint in time. Proofs
// about packet pointers rest on the specialised context loads reading a
// frame: a bare run (RunRaw, no frame) of a program with proofs runs in the
// interpreter (Runner.code), so the context loads of such a program do not
// test for a frame (frameSure, jit_frame.go), nor, on amd64, do its
// native frame helpers (adjust_*, get_buff_len, load/store_bytes,
// perf_event_output, the RX metadata kfuncs), which also leave out the
// check that r1 is the context where r1 holds it on every path (ctxArgs).
// A 4-byte load of
// ingress_ifindex or rx_queue_index through a register that holds the
// context on every path (ctxRegsIn, the analysis that specialises the
// loads of data and data_end) reads the Frame's field (ctxScalarLoads).
// That analysis follows the context through copies and through a stack
// slot it was spilled to (an 8-byte store through r10 at an aligned
// offset) and filled from, as the kernel's verifier keeps a spilled
// PTR_TO_CTX (decode_ctx.go): the slot holds it only while, on every
// path, no store or atomic through r10 overlapped it, no store went
// through another register that may address the stack (any but copies of
// the entry's r1 and map lookups' results: a pointer is a number a
// program can forge), and no call ran but of a helper that writes no
// memory through its arguments and runs no program code (keepsStack).
// On amd64, the out-of-line check of any other 4-byte load that finds a
// context pointer (one the analysis lost, such as a context filled from a
// slot some path may have written) reads that field, or data, data_end or
// data_meta as the packet pointer slowLoad makes of it, from the frame.
// A context load right after another (no jump target between) loads
// from the frame the first one checked (ctxAfterCtx, jit_cost.go), and Go
// re-enters it through a stub that checks again; on amd64, jumps that
// land on an unconditional jump go to its target (threadJumps). The arm64
// backend emits constants as immediates where A64 has a form for them
// (ADD/SUB and CMP/CMN of 12 bits, bitmask immediates of AND, ORR, EOR
// and TST: a64LogicalImm; CBZ/CBNZ for a compare with 0; a value access
// at a scaled offset), else through a scratch register.
//
// Helpers. bpf_map_lookup_elem of an array or per-CPU array map, when r1 is
// loaded with the map in a straight line before the call (mapAt), runs in
// native code with the interpreter's steps (callHelper, arrayValue,
// addRegion): r1 not compared with the map's handle nor the Runner's
// collection with the program's (neither can differ: mapChecksProof in
// jit_first.go), the key read through r2 with loadSlice's
// check (none when r2 is r10 plus a constant in the frame,
// stackKeyOff), NULL for a key at or above max_entries or a CPU slot out of range,
// and the value's region found among the last four entries of the table or
// reused from the entry the same lookup left just past its end in the last
// run (the run's first new value of a map with no static in that window,
// jitArray.first, skips the search: its region number is a constant when
// the table is still at its fixed length, and the entry is proven by one
// compare of a tag the Runner keeps, jit_first.go); r1-r5 are kept. On
// both backends a lookup whose result serves only its NULL check and
// accesses compiled with no check, then dies, makes no region at all (r0 a
// non-NULL stand-in no access can use: valueElided, jit_elide.go,
// jit_*_elide.go).
// Anything else (the first lookup of a
// value in a Runner, which appends in Go, a full table, a bad key pointer)
// leaves for the slow path before anything is written. On amd64 the first
// access to the value right after the lookup (lookupFeeds) uses the table
// entry and address the lookup leaves in the scratch registers, checking
// only its limit; after a slow path at the call Go re-enters through a
// stub that finds them from r0 (jit_amd64_cost.go); an atomic operation
// through the value takes the value's check too. On both backends such an
// access within the value's size and reached only through the fall-through
// of `if r0 == 0` (nonNullAt) has no check at all: the lookup leaves the
// value's address, and the stub proves Go's entry covers the whole value
// or leaves the rest of the run to Go (jit_value.go); on amd64 one after
// instructions that take the scratch registers (context loads, as in
// xdp-tools' stats counter) finds the address from r0's region number,
// also with no check (jitUnchecked.stale: no helper runs in that straight
// line, so the entry is still the value's). (These walks take an lddw's
// second slot, opNop, as writing no register: writesDst.) On amd64 an
// access within the value's size through a register that holds such a
// lookup's non-NULL result on every path but not in a straight line from
// it (clang's r6-r9 across helper calls and joins: valueFlow,
// jit_value_flow.go, a must-analysis that forgets everything at calls
// that run program code, move the packet or are bpf-to-bpf calls or tail
// calls) finds the entry and buffer from the region number with no
// compare (the number is a lookup's of this run, and no entry below the
// table's length changes during a run but a ringbuf record's) and checks
// only the entry's limit. On amd64 these run
// natively too (jit_amd64_helpers.go), with the interpreter's results and
// r1-r5 kept: bpf_redirect; bpf_redirect_map on a devmap, devmap_hash,
// cpumap or xskmap (its slots read as maps.NativeSlots describes them, a
// devmap_hash's bucket chain of immutable entries walked to the key; a
// BPF_F_BROADCAST recorded with its flags, even for a key with no entry,
// which the dataplane then sends to every port);
// bpf_xdp_adjust_head (the metadata moved with
// data), _meta and _tail (a growth zeroed), which move the Frame's
// offsets in place; bpf_xdp_load_bytes and _store_bytes with a buffer
// outside the packet (jit_amd64_bytes.go); bpf_xdp_get_buff_len, bpf_get_smp_processor_id and
// bpf_get_prandom_u32
// (the Runner's xorshift state);
// bpf_map_lookup_elem on a devmap, cpumap or xskmap (jit_slots.go,
// jit_amd64_slots.go: the slot read once as maps.NativeSlots describes
// it, NULL past max_entries or for an empty slot, else the region of the
// entry's value found as a hash value's; a devmap of the hash kind, whose
// slots are bucket heads, goes to Go);
// bpf_map_lookup_elem on a preallocated
// hash map of any of the four hash types with keys of up to 64 bytes
// (maps.NativeKeyMax; 16 in maps of maps: hashKeyMax),
// hashed a finaliser round per key word as Hash.hashOf, the key (here and
// in the slot lookups) checked inline in the region the range analysis
// places r2 in at the call (keyCheck, keyHint in jit_range_key.go: the
// packet, the stack at any offset, global data, a map value), the other
// regions out of line
// (jit_amd64_hash.go: the table as maps.NativeHash describes it, the
// stripe's sequence read before and after the walk as Hash.get does, a
// writer in the stripe sending the lookup to Go; the LRU mark set; a
// hash map made BPF_F_NO_PREALLOC, as maps.NativeHeapHash describes it,
// only to answer a miss: a key found goes to Go, which makes the value's
// region) and on
// an LPM trie of up to 8 data bytes (jit_amd64_lpm.go, maps.NativeLPM);
// bpf_csum_diff on buffers of up to 65532 bytes (jit_amd64_csum.go,
// jit_amd64_csum64.go: x86-64 csum_partial's exact grouping, its 64-byte
// rounds included, folded as the running kernel does), these
// three on arm64 too (jit_arm64_hash.go: the key words past the second
// kept in jitState.hs, and the key checked as keyCheck checks it; in a
// BPF_F_NO_PREALLOC map the walk loads with LDAR what Go's reader loads
// atomically, the bucket, next links, hash and key words; _lpm.go,
// _csum.go), as are the slot lookups (jit_arm64_slots.go: the slot read
// with LDAR, as atomic.Pointer's Load on arm64), the
// frame helpers (adjust_*, get_buff_len, load/store_bytes:
// jit_arm64_bytes.go), bpf_redirect, bpf_redirect_map, bpf_get_prandom_u32
// and bpf_get_smp_processor_id (jit_arm64_redirect.go, the same redirect
// record, a broadcast's included); lookups in
// maps of maps on both backends (jit_amd64_mim.go, jit_arm64_mim.go,
// mim_desc_unsafe.go: the outer lookup of an array of maps reads the
// slot's id, stored by Go with one atomic 32-bit store, that of a hash of
// maps walks its slots as the hash lookup does, and both return the
// inner handle; a lookup whose r1 is a handle known only at run time
// finds the inner map's descriptor in its collection's copy-on-write
// table, a Runner keeping the last one, and runs the array, hash or LPM
// lookup of the descriptor's shape with the map's figures read from it;
// an id without a descriptor yet, a shape the call site was not
// compiled for, a hash of maps made BPF_F_NO_PREALLOC go to Go); on both,
// bpf_map_update_elem on an array or per-CPU array (jit_update.go: the
// value copied into the slot, -E2BIG and -EEXIST as Array.Update; a
// value overlapping the slot from below, a CPU out of range and flags
// above BPF_EXIST go to Go), the answers of bpf_map_update_elem and
// bpf_map_delete_elem on those hash maps that write nothing (-EEXIST for
// BPF_NOEXIST of a key present, -ENOENT for BPF_EXIST or a delete of a
// key absent, from the lookup's probe, which writes take only past it),
// what writes under the stripe's lock (jit_hashupd.go:
// maps.HashTable.LockOff, a word Go's writers take too, a lock still held
// after a few tries going to Go): on both backends a per-CPU map's CPU
// slot of a key present written in place (jit_*_hashupd.go), and
// inserts (a per-CPU map's too, its other CPUs' slots cleared as
// Hash.writeValue clears them), replacements and deletes, with keys
// of up to maps.NativeKeyMax bytes (hashWriteKeyMax;
// jit_*_hashupd_write.go; on arm64
// every store a lock-free reader sees made as Go's atomics make it: STLR,
// LDAXR/STLXR), which link entries only while the collector's write barrier is off
// (jit_hashupd_unsafe.go says why that is sound; a full LRU map's
// eviction takes the entry Hash.evict would, sweeping the slab from the
// same hand under the same lock, maps.HashTable's Evicting and
// jit_*_hashevict.go, arm64's loading and storing what Go's atomics do
// with LDAR and STLR; an
// empty spare slot, a value holding a bpf_spin_lock go to Go); on
// both backends too, bpf_map_update_elem and bpf_map_delete_elem on an
// LPM trie of up to 8 data bytes (jit_*_lpmupd.go, maps.LPMTable's Writing: Update's and
// Delete's steps and answers under the trie's lock word, which Go's
// writers take too, with the write barrier off as for the hash writes,
// an insert's nodes popped from the trie's pool of spares, which Go's
// Update refills; flags above BPF_EXIST, a prefix length past the
// maximum, fewer than two spares, a held lock, on arm64 a value of 4096
// bytes or more go to Go before anything is written; on arm64 the links
// and the intermediate flag a lock-free reader sees stored with STLR, the
// lock taken with LDAXR/STLXR and released with STLR, as Go's atomics);
// and bpf_spin_lock and
// bpf_spin_unlock (jit_spin.go: the lock word checked as spinLockWord
// does, taken with an atomic compare-and-swap a bounded number of times
// before Go waits for it, and kept in jitState.spin, which Go adopts into
// its held records whenever native code returns to it); and
// bpf_tail_call through a program array loaded into r2 (jit_tail_targets.go,
// jit_amd64_helpers.go, jit_arm64_tail.go: the limit of 33 a run as the
// kernel's MAX_TAIL_CALL_CNT, the count reset at the start of each run and
// carried along the chain; the slot read once with one atomic load, LDAR
// on arm64; an index past the array, an empty slot or a program of another
// collection fall through; the target entered at its first instruction
// with the registers, r10 included, as they are; its id is left in
// jitState.tail, against which Go reads the exit codes of its
// instructions; a target without native code, r1 not the context or a run
// without a frame go to Go; the checks the program proves at load are
// left out: r2's handle where a straight line loads it, r1's where it
// holds the context on every path, the frame's in code that runs only
// with one, and a constant index's bound, its slot's address computed at
// load: tailSite). Native code records a
// redirect as numbers (jitRedirect: kind, map number, key, flags,
// ifindex), never the map itself, which would need a write barrier; a
// constant key or flags is checked and looked up at load: Go builds
// Runner.redirect from the record whenever native code returns
// (afterNative), and refreshes the packet region from the frame. Every
// other helper (lookups in maps
// with keys past those limits, keys found in maps made
// BPF_F_NO_PREALLOC,
// bpf_ktime_get_ns where the CPU counter is not usable, ring buffer calls
// that get a record), bpf-to-bpf calls in programs with tail calls, callx,
// loads from the context that are not specialised, and any access or
// atomic that fails its check return to Go with the instruction's index,
// and the interpreter's slow path runs that one instruction with its own
// code (the same helper table, so helpers added later work in the JIT
// unchanged; a plain helper call is run directly from the exit loop,
// jitAfter) and re-enters the native code at the next one. Faults are
// therefore the interpreter's, with the same reason and instruction.
//
// On both backends, bpf_ringbuf_reserve and bpf_ringbuf_output on a ring
// buffer loaded into r1 in a straight line answer natively when they get
// no record (jit_*_ringbuf.go, jitRing: flags refused, a record too long,
// no room: the ring a lagging consumer left full), from the producer and
// consumer positions read in that order (maps.NativeRing); a call that may
// get a record, bpf_ringbuf_submit and _discard exit to Go, which keeps
// the records and their regions.
//
// On both backends, bpf_perf_event_output on a perf event array loaded into
// r2 in a straight line answers natively when it fails (jit_perf.go,
// jit_*_perf.go, maps.NativePerf): flags outside the index and ctx-length
// masks (-EINVAL), more frame bytes than the frame has (-EFAULT), an index
// past the slots (-E2BIG), an empty slot (-ENOENT), a ring of another CPU
// (-EOPNOTSUPP) and a full ring (-ENOSPC, the loss counted with an atomic
// add as Output counts it), from Output's lock-free first check (head,
// lost, tail loaded in that order); r1 not the context, data the program may
// not read and an output that fits go to Go, which writes the record under
// the ring's lock bit and wakes a blocked reader.
//
// bpf_fib_lookup is native for IPv4 on both backends (jit_fib.go,
// jit_amd64_fib.go, jit_arm64_fib.go) with plen 64 and flags among DIRECT,
// SKIP_NEIGH, SRC and MARK, the struct checked as storeSlice checks it:
// the table SetFIB compiles also holds a pointer-free snapshot of main's
// IPv4 trie (the slots the Go lookup walks), the answer of each prefix's
// first route precomputed (path MTU, preferred source, the gateway's
// neighbour, the egress port's MAC) and the IPv4 neighbours in an
// open-addressing table (twice as many slots as entries, so every probe
// ends). The code holds the address of the Collection's table pointer as
// an immediate (the Program keeps the Collection alive) and loads the
// pointer once per lookup (on arm64 with LDAR, an acquire pairing with
// SetFIB's atomic store, where amd64 relies on x86's load ordering), so it
// sees one table whole; a table SetFIB drops meanwhile stays allocated
// (the argument of mim_desc_unsafe.go). Every result code and write is
// Runner.fibLookup's; a family neither AF_INET nor AF_INET6 answers
// -EAFNOSUPPORT natively, writing nothing; another flag or plen, a struct
// failing its check, a port past the snapshot's, a miss in main while
// table default has IPv4 routes and an IPv6 gateway go to Go before
// anything is written.
//
// IPv6 (AF_INET6, jit_fib6.go, jit_amd64_fib6.go, jit_arm64_fib6.go) is
// native on both backends under the same checks and flags (the table
// pointer loaded once, on arm64 with LDAR), from a second snapshot: the
// IPv6 prefixes of local, main and default in one open-addressing table
// keyed by stage (a prefix length of one table, in the order the default
// rules visit them; DIRECT visits main's) and masked prefix, each prefix's answer without
// an oif precomputed (lookup6's choice, path MTU, preferred source or
// none, the gateway's neighbour, the egress port's MAC), and the IPv6
// neighbours in a table of the same slots. Multicast, link-local and
// loopback addresses are NOT_FWDED natively before the table is read; an
// IPv4-mapped address, a port past the snapshot's and a route with no
// path MTU go to Go before anything is written. The amd64 lookup saves
// and restores r5 too (jitState.hs); the arm64 one leaves r1-r5 alone and
// keeps a word in jitState.hs instead.
//
// The XDP RX metadata kfuncs are native on both backends (jit_meta.go,
// jit_*_meta.go; kfuncRows give them the helper table's native column):
// r1 the context of a run with a frame and each out pointer checked as
// storeSlice checks it (a region of the table or the packet's, offset at
// least lo, its end at most whi) before anything is written, else Go runs
// the whole call; then -EOPNOTSUPP (Meta nil, or the bit clear in Caps),
// -ENODATA (clear in Have) or 0 with the values stored from Frame.Meta in
// callKfunc's order and byte order (vlan_proto big-endian).
//
// bpf_loop is native on both backends (jit_loop.go, jit_*_loop.go) in
// programs whose local calls are native, when r2 is loaded with the
// callback in a straight line before the call: flags (-EINVAL), nr_loops
// above BPF_MAX_LOOPS (-E2BIG), the budget charged per iteration and the
// callback's registers as the interpreter's loop has them, r1-r5 kept.
// Each iteration is a native call whose frame (holding the loop's index,
// count and ctx, in r6-r8 between iterations) returns into the loop, the
// caller's r5-r9 kept in jitState.loops by frame index; a callback that
// leaves for Go (a helper that is not native, any slow path) is adopted
// as any native frame, and when its exit pops that frame Go re-enters the
// loop's code where it was (jitAfter), so no callback needs to be proven
// native. A depth at the limit or another callback goes to Go before the
// first iteration; a budget exhausted between iterations goes to Go with
// the call's arguments, where the interpreter's loop faults at the call.
//
// bpf_ktime_get_ns and bpf_ktime_get_coarse_ns are native (jit_*_time.go)
// where the CPU's constant-rate counter is usable (arm64's CNTVCT_EL0; an
// invariant TSC, constant_tsc and nonstop_tsc, that the kernel keeps time
// with or, on a kvm-clock guest, whose pairs with clock_gettime, read on
// every CPU the process may run on over 20 ms, lie within 5 us of one
// line and whose CPUs pass Linux's warp check: kvm-clock is the host's TSC
// scaled, ktime_counter_tsc_amd64.go):
// CLOCK_MONOTONIC from a line Go draws from clock_gettime every 10 ms
// (ktime_counter.go), never going back, within ktimeErrBound (20 us; under
// 0.2 us measured) of clock_gettime; a line that drifted 5 us from it has
// the rate measured again. Go's helper reads the same line, so both
// engines give one clock. A VM paused, migrated or restored from a
// snapshot may find its TSC and kvm-clock moved apart: the line is off by
// the jump (ahead by at most 10 ms, or behind) until the count leaves it,
// at most 10 ms later; then Go measures the rate again, never going back
// (ktime_counter.go, "A VM's stops").
//
// bpf-to-bpf calls (jit_amd64_calls.go, jit_arm64_calls.go) are native in
// programs without tail calls: a call checks the depth (the Go frames and
// the native ones, below maxFrames as the verifier's MAX_CALL_FRAMES),
// charges a backward call to the budget, saves r6-r10 and the native
// return address in a frame stack in jitState (jitCall: no Go pointer, no
// machine stack), points r10 at the callee's 512-byte slice of the stack
// and jumps; an exit with a native frame restores them and jumps back (an
// exit without one returns to Go, which pops a frame the slow path pushed
// as the interpreter does). Whenever the code returns to Go with native
// frames, Go turns them into its own first (adoptCalls), so the slow path,
// helpers and faults see the interpreter's call stack.
//
// Entry. Run of a program with native code (runJIT) checks the frame, binds
// the region table and points the packet region at the frame inline, then
// enters the code through jitEnterRun, which zeroes the registers but r1
// and r10 and returns the exit code and r0 without storing the register
// file when the run ended in that first native round (which then ends at
// depth 0: an exit with a native call in progress returns from it). That round runs
// without Run's deferred recover: the Go code on it cannot panic (its one
// index is checked first) and a fault in native code could not be
// recovered anyway; a run that comes back for the slow path goes on under
// the recover (finishJIT), which also resets the state only the slow path
// reads (ring buffer records); runJIT and the burst reset the call depth,
// which native bpf-to-bpf calls add to (a run that ended in Go inside a
// call left it above 0).
//
// Bursts. RunBurst enters native code once per burst of up to 64 frames
// (jitEnterBurst, jitBurst): the trampoline checks each frame as runJIT
// does, points the code at it, resets the run's state (budget, regions,
// tail calls: written only when a run changed them; the runs are counted
// per burst), points the redirect helpers at the frame's own record
// (jitState.rds, cleared by Go before the burst, read by it after, each
// record compared as two words with the last that differed and the
// Redirect built for that one copied: fillRedirects) and
// runs it, storing verdicts and going on (XDP_REDIRECT ones counted in
// jitState.rdn, so that Go reads no record after a burst with none); only a
// frame that needs Go (a slow path, a verdict above XDP_REDIRECT, an
// invalid frame) returns, and Go finishes it before entering again. A
// frame that returns at a call of a helper run in Go (or at a load native
// code leaves to Go, such as a context load in a subprogram) has it run
// and goes on in the same loop when nothing is left for Go to finish
// (burstCall, jit_resume_unsafe.go: no fault, ring buffer record, lock or
// redirect pending in Go, a helper that runs no program code): the
// trampoline resumes it after the call (jitState.resume) with the
// registers Go holds, so such a frame costs one exit to Go instead of two
// and a new burst. So
// that the loop writes no Go pointer, native code reads the frame and the
// packet region from plain copies in jitState (frame, pkt), which Go
// refreshes at every entry (syncJIT) and the loop sets per frame; the
// table's packet entry matches nothing during a native burst (its
// out-of-line check would otherwise read a stale entry). On both
// backends, code that writes none of the state the loop resets per frame (jitProg.burst
// 0, jit_burst_flags.go: no bpf_tail_call or callx, no backward jump,
// local call or bpf_loop charging the budget, no value region appended
// natively, no bpf_redirect or bpf_redirect_map writing a record) runs in
// the lean loop (jitEnterBurstLean): it resets that state once per entry,
// after a resumed frame and before the first fresh one, since only Go
// changes it then, and moves no redirect slot (Go works out the slot of
// the frame it stopped at, burstEnd); per frame it checks the frame, points
// jitState at it, runs the code and stores the verdict (arm64's in 37
// instructions around the code's, against 64 in the full loop). Both
// amd64 loops and arm64's lean one walk the frames and verdicts by
// pointer (the next frame is the one after jitState.frame, which native
// code only reads).
//
// A run's start sets r1 and r10 only. The interpreter's other registers
// are 0 at that point, so the code begins with a prologue that zeroes the
// registers some path of the main function reads before writing
// (entryZero in jit_entry.go, conservative across calls; most programs
// need none, where the trampolines used to clear nine per frame). A
// native tail call jumps past the target's prologue (jitProg.pc0), as the
// interpreter's tail call keeps the registers.
//
// The native code never calls Go, so it needs nothing from the Go runtime.
// It runs inside jitEnter (or jitEnterRun at the start of a run), a
// NOSPLIT assembly function that loads r0-r10 from the Runner's register
// file, calls the code and stores them back when it returns; the code uses
// no stack but the return address of that call on amd64 (none on arm64,
// where BL puts it in the link register, which the prologue saved), never
// moves SP and never touches arm64's frame pointer (X29), so it stays
// within jitEnter's frame and the stack the linker checked for it; on
// arm64 it also leaves X18 and g (X28) alone. On amd64 BP holds the
// packet's base while the code runs: the trampolines have frames, whose
// prologue saves Go's BP and whose epilogue restores it before each RET,
// and no unwinder reads BP from a goroutine inside them or the code
// (jit_amd64_pktbase.go gives the argument). It returns with RET after
// leaving an exit code (done, or "slow path at instruction N") in a scratch
// register (R9, X9), which the trampoline returns. While it runs it holds
// pointers only to memory the Go collector does not move: the Runner (a
// heap object), its region table and the buffers in it (heap objects or
// mappings, reachable from the Runner) are read through the Runner's
// register at each access, so a helper that grows the table between two
// entries is seen at once; the code of an array lookup also holds, as
// immediates, the address of the map's storage (and bpf_redirect_map's
// of the collection), heap objects the Program keeps alive as long as its
// code is mapped, which it only compares (with the table's buffers) and
// never dereferences; a proven access to global
// data holds and addresses the buffer of its collection's region (the
// storage of a single-entry array map, allocated once with the map), which
// the Collection keeps alive as long as its code is mapped; the slot arrays of
// devmaps, devmap_hashes (bucket heads), cpumaps, xskmaps and program
// arrays, read as immediates too, live as long as their maps. Nothing of
// Go's is written but pointer-free words (packet, stack, map values, the
// register file, the spill slot, the region table's length when a lookup
// reuses an entry, the Frame's offsets, the run and tail call counts and
// jitState), which need no write barrier. No garbage collection
// stop can catch the goroutine inside the code: a signal that lands there
// (async preemption, profiling) finds a PC outside any Go function, and the
// runtime's isAsyncSafePoint refuses to preempt at a PC without function
// data (runtime/preempt.go: findfunc fails), so the goroutine is preempted
// at its next safe point in Go instead, at the latest when the run ends or
// returns for a helper (the instruction budget bounds a run). Signal
// handlers run on the signal stack, never on the goroutine's. The ABI
// wrapper that calls jitEnter (an ABI0 function) re-establishes the g
// register (R14) and X15 afterwards on amd64, which the code clobbers.
//
// What of the kernel's verifier xnic enforces, and when. A program that
// loads in the kernel loads in xnic (xnic also takes callx, shift counts
// past the width, which it masks, and division by a constant zero, as the
// conformance suite wants); the reverse holds for the rules checked at load, and the rules checked only at run time make xnic end the run
// where the kernel would have refused the program.
//
// At load (a LoadError naming the program and instruction): opcodes and
// their fields (the fields the kernel reserves must be zero, as its "uses
// reserved fields" checks want: src of K forms, imm of X forms, off except
// where it selects a variant, ...; LD_ABS/LD_IND are refused in XDP as by
// the kernel), register numbers, writes to r10, jumps and calls in range and not into
// the second half of an lddw, no path falling off the end, the program
// size (BPF_COMPLEXITY_LIMIT_INSNS), known helpers allowed for XDP, map
// references resolved, and loads and stores through r10 itself inside the
// 512-byte frame and aligned to their size (check_stack_access_within_bounds,
// and check_ptr_alignment, always strict for the stack).
//
// At run time (XDP_ABORTED, Runner.Fault naming the instruction): every load
// and store inside the region its pointer points into (packet, stack through
// a copy of r10, context, map values, global data, ring-buffer records),
// only pointers dereferenced (a number is no pointer), no stores to the
// context, null map values, atomics aligned, the instruction budget
// (where the kernel bounds loops statically), call depth (8 frames) and
// tail calls (33), helper arguments, and the XDP action returned.
//
// Not at all: reads of registers or stack slots not written before (the
// kernel refuses them; here registers read as 0 and the stack holds what
// was there, see below), packet accesses without a compare against
// data_end first (the kernel refuses them; xnic checks each access, so such
// a program runs here and would not load there), pointers stored into maps
// or returned (the kernel refuses pointer leaks for unprivileged loaders),
// and the types the kernel's BTF-based checks give helper arguments beyond
// what the helpers check themselves.
//
// The stack is not cleared between runs (the registers are). Like the
// kernel, whose verifier rejects reads of stack slots not written before, a
// program should write before it reads; one that reads uninitialised stack
// gets whatever earlier runs on the same Runner left there: never memory
// outside the stack, but possibly data of another program. Give programs
// that must not see each other's data a Runner each.
package bpf
