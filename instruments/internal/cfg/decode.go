package cfg

import (
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// JumpsOut decodes a region and returns where its direct jumps out of
// it go, in the order of the jumps: where to look for the parts of a
// function the compiler outlined.
func JumpsOut(r Region) ([]uint64, error) {
	insts, err := decodeRegion(r, nil)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, in := range insts {
		if (in.flow == flowBranch || in.flow == flowJump) && !r.contains(in.target) {
			out = append(out, in.target)
		}
	}
	return out, nil
}

// decodeRegion decodes a region from its first byte to its last.
func decodeRegion(r Region, name x86asm.SymLookup) ([]Inst, error) {
	var insts []Inst
	for off := 0; off < len(r.Code); {
		addr := r.Addr + uint64(off)
		in, err := decodeInst(r.Code[off:], addr, name)
		if err != nil {
			end := min(off+8, len(r.Code))
			return nil, &splitError{r.Name, fmt.Sprintf("cannot decode the instruction at %s+%#x (% x): %v", r.Name, off, r.Code[off:end], err)}
		}
		insts = append(insts, in)
		off += in.Len
	}
	return insts, nil
}

// decodeInst decodes the instruction at the start of code, which is at
// addr. x86asm knows no instruction newer than AVX, and reads some it
// does not know as a bare prefix with no error; those the kernel uses
// are decoded by hand.
func decodeInst(code []byte, addr uint64, name x86asm.SymLookup) (Inst, error) {
	if text, n, ok := decodeSystem(code); ok {
		return Inst{Addr: addr, Len: n, Text: text}, nil
	}
	x, err := x86asm.Decode(code, 64)
	if err != nil {
		return Inst{}, err
	}
	if x.Op == 0 {
		return Inst{}, errors.New("unknown instruction")
	}
	in := Inst{Addr: addr, Len: x.Len, Text: x86asm.GNUSyntax(x, addr, name)}
	rel, isRel := x.Args[0].(x86asm.Rel)
	if isRel {
		in.target = addr + uint64(x.Len) + uint64(int64(rel))
	}
	switch x.Op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE, x86asm.JECXZ,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP,
		x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JRCXZ, x86asm.JS,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		in.flow = flowBranch
	case x86asm.JMP:
		in.flow = flowJump
		if !isRel {
			in.flow = flowIndirect
		}
	case x86asm.LJMP:
		in.flow = flowIndirect
	case x86asm.CALL:
		if isRel {
			in.flow = flowCall
		}
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.SYSRET, x86asm.SYSEXIT:
		in.flow = flowReturn
	case x86asm.INT:
		if imm, ok := x.Args[0].(x86asm.Imm); ok && imm == 3 && x.Len == 1 {
			in.flow, in.pad = flowTrap, true
		}
	case x86asm.NOP:
		in.pad = true
	}
	return in, nil
}

// systemInsns are register forms of 0f 01 that the kernel uses and
// x86asm does not decode; every one is three bytes after any prefixes.
var systemInsns = map[byte]string{
	0xc0: "enclv", 0xc1: "vmcall", 0xc2: "vmlaunch", 0xc3: "vmresume", 0xc4: "vmxoff",
	0xc5: "pconfig", 0xc6: "wrmsrns", 0xca: "clac", 0xcb: "stac", 0xcf: "encls",
	0xd4: "vmfunc", 0xd5: "xend", 0xd6: "xtest", 0xd7: "enclu",
	0xd8: "vmrun", 0xd9: "vmmcall", 0xda: "vmload", 0xdb: "vmsave",
	0xdc: "stgi", 0xdd: "clgi", 0xde: "skinit", 0xdf: "invlpga",
	0xe8: "serialize", 0xee: "rdpkru", 0xef: "wrpkru",
	0xfa: "monitorx", 0xfb: "mwaitx", 0xfc: "clzero", 0xfd: "rdpru",
	0xfe: "invlpgb", 0xff: "tlbsync",
}

// decodeSystem decodes the instructions x86asm misses: endbr64 and
// endbr32, rdpid, rdrand and rdseed with REX.W, rdssp, lkgs, tpause,
// umwait, umonitor and the 0f 01 forms above.
func decodeSystem(code []byte) (text string, n int, ok bool) {
	i := 0
	var f2, f3, opsize, rexW bool
	rexB := 0
prefixes:
	for ; i < len(code) && i < 14; i++ {
		switch c := code[i]; {
		case c == 0xf3:
			f3 = true
		case c == 0xf2:
			f2 = true
		case c == 0x66:
			opsize = true
		case c == 0x2e || c == 0x3e || c == 0x26 || c == 0x36 || c == 0x64 || c == 0x65 || c == 0xf0:
		case c >= 0x40 && c <= 0x4f: // REX; B extends modrm.rm
			rexW, rexB = c&8 != 0, int(c&1)<<3
		default:
			break prefixes
		}
	}
	if i+3 > len(code) || code[i] != 0x0f {
		return "", 0, false
	}
	op, modrm := code[i+1], code[i+2]
	if op == 0x01 {
		if name, ok := systemInsns[modrm]; ok {
			return name, i + 3, true
		}
		return "", 0, false
	}
	if modrm < 0xc0 { // the rest are register forms
		return "", 0, false
	}
	reg, reg32 := "%"+gpr64[rexB|int(modrm&7)], "%"+gpr32[rexB|int(modrm&7)]
	if !rexW {
		reg = reg32
	}
	switch ext := modrm >> 3 & 7; {
	case op == 0x1e && f3 && modrm == 0xfa:
		return "endbr64", i + 3, true
	case op == 0x1e && f3 && modrm == 0xfb:
		return "endbr32", i + 3, true
	case op == 0x1e && f3 && ext == 1:
		return "rdssp " + reg, i + 3, true
	case op == 0xc7 && f3 && ext == 7:
		return "rdpid %" + gpr64[rexB|int(modrm&7)], i + 3, true
	case op == 0xc7 && !f3 && ext == 6:
		return "rdrand " + reg, i + 3, true
	case op == 0xc7 && !f3 && ext == 7:
		return "rdseed " + reg, i + 3, true
	case op == 0x00 && f2 && ext == 6:
		return "lkgs %" + gpr16[rexB|int(modrm&7)], i + 3, true
	case op == 0xae && opsize && ext == 6:
		return "tpause " + reg32, i + 3, true
	case op == 0xae && f2 && ext == 6:
		return "umwait " + reg32, i + 3, true
	case op == 0xae && f3 && ext == 6:
		return "umonitor %" + gpr64[rexB|int(modrm&7)], i + 3, true
	}
	return "", 0, false
}

var (
	gpr64 = [16]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	gpr32 = [16]string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"}
	gpr16 = [16]string{"ax", "cx", "dx", "bx", "sp", "bp", "si", "di", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w"}
)
