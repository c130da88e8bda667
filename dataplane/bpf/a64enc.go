package bpf

// A64 instruction encodings the arm64 backend (jit_arm64*.go) emits, named
// as the Arm Architecture Reference Manual for A-profile (DDI 0487)
// names them in chapter C6, "A64 Base Instruction Descriptions", where
// each has its page under that name; the encoding groups are those of
// chapter C4, "A64 Instruction Set Encoding". Each constant is the
// instruction with every register and immediate field zero; the encoder
// functions below fill them in. Register fields: Rd/Rt bits 4:0, Rn bits
// 9:5, Rm/Rs bits 20:16 (Ra bits 14:10). TestA64Encodings holds them to
// the words llvm-mc assembles.
//
// They build on every platform (the file has no architecture suffix), so
// that the test runs on the amd64 CI machine as well.
const (
	// sf (bit 31): the 64-bit form of the data-processing instructions;
	// clearing it gives the 32-bit (W) form.
	a64W = 0x80000000
	// N (bit 22) of the bitfield moves, set with sf.
	a64N = 0x00400000

	// C4.1.95 Data-processing (register), shifted-register forms with
	// shift 0.
	a64Add  = 0x8b000000 // ADD (shifted register)
	a64Sub  = 0xcb000000 // SUB (shifted register); NEG with Rn = XZR
	a64Subs = 0xeb000000 // SUBS (shifted register); CMP with Rd = XZR
	a64And  = 0x8a000000 // AND (shifted register)
	a64Ands = 0xea000000 // ANDS (shifted register); TST with Rd = XZR
	a64Orr  = 0xaa000000 // ORR (shifted register); MOV (register) with Rn = XZR
	a64Eor  = 0xca000000 // EOR (shifted register)
	a64Orn  = 0xaa200000 // ORN (shifted register); MVN with Rn = XZR
	a64Adds = 0xab000000 // ADDS (shifted register)
	// The aliases with Rd = XZR.
	a64Cmp = a64Subs | aZR // CMP (shifted register)
	a64Tst = a64Ands | aZR // TST (shifted register)
	// The shift type (bits 23:22) of the shifted-register forms, whose
	// amount is imm6 in bits 15:10; LSL is 0.
	a64LSR = 0x00400000
	// Add/subtract (with carry); add/subtract (extended register) with
	// option UXTW (010) and shift 0.
	a64Adc     = 0x9a000000 // ADC
	a64Adcs    = 0xba000000 // ADCS
	a64AddUxtw = 0x8b204000 // ADD (extended register), Xd = Xn + UXTW(Wm)
	// Conditional select: cond in bits 15:12.
	a64Csel = 0x9a800000 // CSEL
	// Data-processing (3 source) and (2 source).
	a64Madd = 0x9b000000 // MADD: Rd = Ra + Rn*Rm
	a64Mul  = 0x9b007c00 // MUL: MADD with Ra = XZR
	a64Msub = 0x9b008000 // MSUB: Rd = Ra - Rn*Rm
	a64Udiv = 0x9ac00800 // UDIV
	a64Sdiv = 0x9ac00c00 // SDIV
	a64Lslv = 0x9ac02000 // LSLV (LSL (register))
	a64Lsrv = 0x9ac02400 // LSRV (LSR (register))
	a64Asrv = 0x9ac02800 // ASRV (ASR (register))
	// Data-processing (1 source).
	a64Rev16W = 0x5ac00400 // REV16, 32-bit
	a64RevW   = 0x5ac00800 // REV, 32-bit
	a64RevX   = 0xdac00c00 // REV, 64-bit
	a64Clz    = 0xdac01000 // CLZ, 64-bit

	// C4.1.86 Data-processing (immediate).
	a64AddImm  = 0x91000000 // ADD (immediate), imm12 in bits 21:10
	a64SubImm  = 0xd1000000 // SUB (immediate)
	a64SubsImm = 0xf1000000 // SUBS (immediate); CMP (immediate) with Rd = XZR
	a64Ubfm    = 0xd3400000 // UBFM, 64-bit (LSL, LSR, UXTH... are aliases)
	a64Sbfm    = 0x93400000 // SBFM, 64-bit (ASR, SXTB, SXTH, SXTW)
	a64UbfmW   = a64Ubfm &^ (a64W | a64N)
	a64SbfmW   = a64Sbfm &^ (a64W | a64N)
	a64Movn    = 0x92800000 // MOVN, hw in bits 22:21, imm16 in bits 20:5
	a64Movz    = 0xd2800000 // MOVZ
	a64Movk    = 0xf2800000 // MOVK
	// Logical (immediate): N, immr and imms in the bitfield moves' bits
	// (a64LogicalImm gives them).
	a64AndsImm = 0xf2000000 // ANDS (immediate); TST (immediate) with Rd = XZR
	a64AndImm  = 0x92000000 // AND (immediate)
	a64OrrImm  = 0xb2000000 // ORR (immediate)
	a64EorImm  = 0xd2000000 // EOR (immediate)
	a64AddsImm = 0xb1000000 // ADDS (immediate); CMN (immediate) with Rd = XZR
	// Extract: lsb in imms (bits 15:10), N set with sf.
	a64Extr  = 0x93c00000 // EXTR; ROR (immediate) with Rn = Rm
	a64ExtrW = a64Extr &^ (a64W | a64N)

	// C4.1.87 Branches, exception generating and system instructions.
	a64B     = 0x14000000 // B, imm26
	a64Bcond = 0x54000000 // B.cond, imm19 in bits 23:5, cond in bits 3:0
	a64CbnzW = 0x35000000 // CBNZ, 32-bit, imm19
	a64Cbz   = 0xb4000000 // CBZ, 64-bit, imm19
	a64Cbnz  = 0xb5000000 // CBNZ, 64-bit, imm19
	a64Ret   = 0xd65f03c0 // RET (X30)
	a64Br    = 0xd61f0000 // BR Xn
	a64Adr   = 0x10000000 // ADR: PC + imm21 (immlo bits 30:29, immhi 23:5)
	// Barriers: DMB with CRm (bits 11:8) 1001, the ISHLD option.
	a64DmbIshld = 0xd50339bf // DMB ISHLD

	// C4.1.88 Loads and stores. Register offset, option LSL (011), S 0:
	// [Xn, Xm].
	a64Ldrb  = 0x38606800 // LDRB (register)
	a64Ldrsb = 0x38a06800 // LDRSB (register), 64-bit
	a64Ldrh  = 0x78606800 // LDRH (register)
	a64Ldrsh = 0x78a06800 // LDRSH (register), 64-bit
	a64LdrW  = 0xb8606800 // LDR (register), 32-bit
	a64Ldrsw = 0xb8a06800 // LDRSW (register)
	a64LdrX  = 0xf8606800 // LDR (register), 64-bit
	a64Strb  = 0x38206800 // STRB (register)
	a64Strh  = 0x78206800 // STRH (register)
	a64StrW  = 0xb8206800 // STR (register), 32-bit
	a64StrX  = 0xf8206800 // STR (register), 64-bit
	// Register offset with S (bit 12) set: [Xn, Xm, LSL #3].
	a64LdrXLsl3 = a64LdrX | 1<<12 // LDR (register), 64-bit, scaled
	a64LdrWLsl2 = a64LdrW | 1<<12 // LDR (register), 32-bit, [Xn, Xm, LSL #2]
	// Unscaled immediate: imm9 (signed) in bits 20:12.
	a64Ldurb = 0x38400000 // LDURB
	a64Ldurh = 0x78400000 // LDURH
	a64LdurW = 0xb8400000 // LDUR, 32-bit
	a64LdurX = 0xf8400000 // LDUR, 64-bit
	a64Sturh = 0x78000000 // STURH
	a64SturW = 0xb8000000 // STUR, 32-bit
	a64SturX = 0xf8000000 // STUR, 64-bit
	// Unsigned offset: imm12 scaled by 8, in bits 21:10.
	a64LdrXImm = 0xf9400000 // LDR (immediate), 64-bit
	a64StrXImm = 0xf9000000 // STR (immediate), 64-bit
	// Unsigned offset: imm12 scaled by 4.
	a64LdrWImm = 0xb9400000 // LDR (immediate), 32-bit
	a64StrWImm = 0xb9000000 // STR (immediate), 32-bit
	// Unsigned offset, imm12 scaled by the access size (1, 2, 4).
	a64LdrbImm  = 0x39400000 // LDRB (immediate)
	a64LdrsbImm = 0x39800000 // LDRSB (immediate), 64-bit
	a64LdrhImm  = 0x79400000 // LDRH (immediate)
	a64LdrshImm = 0x79800000 // LDRSH (immediate), 64-bit
	a64LdrswImm = 0xb9800000 // LDRSW (immediate)
	a64StrbImm  = 0x39000000 // STRB (immediate)
	a64StrhImm  = 0x79000000 // STRH (immediate)
	// Exclusives, acquire/release (Rt2 and Rs fields all ones where unused).
	a64LdaxrW = 0x885ffc00 // LDAXR, 32-bit
	a64LdaxrX = 0xc85ffc00 // LDAXR, 64-bit
	a64StlxrW = 0x8800fc00 // STLXR, 32-bit: status in Rs
	a64StlxrX = 0xc800fc00 // STLXR, 64-bit
	a64Ldar   = 0xc8dffc00 // LDAR, 64-bit
)

// A64 condition codes (C1.2.4, "Condition code"), the cond field of
// B.cond.
const (
	aEQ = 0x0
	aNE = 0x1
	aHS = 0x2
	aLO = 0x3
	aMI = 0x4
	aHI = 0x8
	aLS = 0x9
	aGE = 0xa
	aLT = 0xb
	aGT = 0xc
	aLE = 0xd
	aAL = 0xe
)

// aZR is register number 31 as the zero register (XZR/WZR) in the fields
// that read it so.
const aZR = 31

// a64RRR is a three-register instruction: Rd = Rn op Rm.
func a64RRR(op, d, n, m uint32) uint32 { return op | m<<16 | n<<5 | d }

// a64RRRShift is a shifted-register instruction, Rd = Rn op (Rm shifted
// by amount), the shift type in op (a64LSR; LSL is 0).
func a64RRRShift(op, d, n, m, amount uint32) uint32 { return a64RRR(op, d, n, m) | (amount&63)<<10 }

// a64RR is a one-source instruction (REV): Rd = op Rn.
func a64RR(op, d, n uint32) uint32 { return op | n<<5 | d }

// a64Msub3 is MSUB (or MADD) with its fourth register: Rd = Ra - Rn*Rm.
func a64Msub3(op, d, n, m, a uint32) uint32 { return op | m<<16 | a<<10 | n<<5 | d }

// a64Imm12 is an ADD/SUB (immediate) or LDR/STR (unsigned offset): imm12
// in bits 21:10 (for loads and stores, already scaled).
func a64Imm12(op, d, n, imm uint32) uint32 { return op | (imm&0xfff)<<10 | n<<5 | d }

// a64BFM is a bitfield move, or a logical immediate (a64AndsImm), whose
// fields are the same: immr in bits 21:16, imms in bits 15:10.
func a64BFM(op, d, n, immr, imms uint32) uint32 {
	return op | (immr&63)<<16 | (imms&63)<<10 | n<<5 | d
}

// a64ROR is ROR (immediate): EXTR (or a64ExtrW) Rd, Rn, Rn, #lsb.
func a64ROR(op, d, n, lsb uint32) uint32 { return op | n<<16 | (lsb&63)<<10 | n<<5 | d }

// a64Imm9 is a load or store with an unscaled signed offset: LDUR Rt,
// [Rn, #imm] (or STUR).
func a64Imm9(op, t, n uint32, imm int32) uint32 { return op | (uint32(imm)&0x1ff)<<12 | n<<5 | t }

// a64MovWide is MOVZ, MOVN or MOVK of imm16 shifted left by 16*hw.
func a64MovWide(op, d, hw, imm16 uint32) uint32 { return op | (hw&3)<<21 | (imm16&0xffff)<<5 | d }

// a64Excl is LDAXR (or LDAR) Rt, [Rn] or STLXR Rs, Rt, [Rn] (s: the
// status register; 0 for a load, whose Rs field is all ones already).
func a64Excl(op, s, t, n uint32) uint32 { return op | s<<16 | n<<5 | t }

// a64ADR is ADR Xd, PC+bytes (bytes within 1 MiB).
func a64ADR(d uint32, bytes int32) uint32 {
	v := uint32(bytes)
	return a64Adr | (v&3)<<29 | (v>>2&0x7ffff)<<5 | d
}

// a64Branch is B (imm26) or B.cond/CBNZ/CBZ (imm19) with the displacement
// in instructions, and cond (B.cond) or Rt (CBNZ, CBZ) in bits 4:0.
func a64Branch(op uint32, words int32, low uint32) uint32 {
	if op == a64B {
		return op | uint32(words)&0x3ffffff
	}
	return op | (uint32(words)&0x7ffff)<<5 | low
}

// a64LogicalImm encodes v as the bitmask immediate of AND, ORR, EOR and
// ANDS (immediate) (DecodeBitMasks in the Arm ARM's shared pseudocode):
// an element of e bits (2, 4, ..., 64; at most 32 for the 32-bit forms,
// is64 false, where v is the low 32 bits) repeated across the register,
// each a run of s+1 ones (s < e-1) rotated right by immr. n is the N bit
// in place (a64N, set only for 64-bit elements). ok is false for 0, all
// ones and any value of no such form.
func a64LogicalImm(v uint64, is64 bool) (n, immr, imms uint32, ok bool) {
	width := uint(64)
	if !is64 {
		width, v = 32, v&0xffffffff
	}
	for e := uint(2); e <= width; e *= 2 {
		mask := uint64(1)<<e - 1
		if e == 64 {
			mask = ^uint64(0)
		}
		elem := v & mask
		if !a64Repeats(v, elem, e, width) {
			continue
		}
		for r := uint(0); r < e; r++ {
			x := (elem<<r | elem>>(e-r)) & mask // rotated left by r
			if r == 0 {
				x = elem
			}
			ones := uint(0)
			for ones < e && x>>ones&1 == 1 {
				ones++
			}
			if ones == 0 || ones == e || x != uint64(1)<<ones-1 {
				continue
			}
			imms = uint32(0x3f&^(2*e-1)) | uint32(ones-1)
			if e == 64 {
				n = a64N
			}
			return n, uint32(r), imms, true
		}
		return 0, 0, 0, false
	}
	return 0, 0, 0, false
}

// a64Repeats reports whether v is elem repeated every e bits over width.
func a64Repeats(v, elem uint64, e, width uint) bool {
	for i := e; i < width; i += e {
		if v>>i&(uint64(1)<<e-1) != elem {
			return false
		}
	}
	return true
}
