package codegen

import (
	"github.com/cilium/ebpf/asm"
)

// An operand is a scalar value during code generation: a constant, a
// callee-saved register, or a stack slot when those run out.
type operand struct {
	kind opKind
	imm  int64
	reg  asm.Register
	slot int16
}

type opKind int

const (
	opImm opKind = iota
	opReg
	opSlot
)

func immOp(v int64) operand { return operand{kind: opImm, imm: v} }

// tempRegs are the callee-saved registers free for temporaries.
var tempRegs = [2]asm.Register{asm.R7, asm.R8}

// newTemp allocates a temporary that survives helper calls.
func (g *gen) newTemp() operand {
	for i, used := range g.temps {
		if !used {
			g.temps[i] = true
			return operand{kind: opReg, reg: tempRegs[i]}
		}
	}
	if n := len(g.spills); n > 0 {
		s := g.spills[n-1]
		g.spills = g.spills[:n-1]
		return operand{kind: opSlot, slot: s}
	}
	m := g.allocStack(8)
	return operand{kind: opSlot, slot: m.off}
}

// free releases a temporary; constants need no release.
func (g *gen) free(op operand) {
	switch op.kind {
	case opReg:
		for i, r := range tempRegs {
			if r == op.reg {
				g.temps[i] = false
			}
		}
	case opSlot:
		g.spills = append(g.spills, op.slot)
	}
}

// reg returns a register holding op: its own, or scratch loaded with it.
func (g *gen) reg(op operand, scratch asm.Register) asm.Register {
	switch op.kind {
	case opImm:
		g.movImm(scratch, op.imm)
		return scratch
	case opSlot:
		g.emit(asm.LoadMem(scratch, asm.R10, op.slot, asm.DWord))
		return scratch
	}
	return op.reg
}

// load puts op's value into register dst.
func (g *gen) load(dst asm.Register, op operand) {
	if r := g.reg(op, dst); r != dst {
		g.emit(asm.Mov.Reg(dst, r))
	}
}

// set stores register r into temporary op.
func (g *gen) set(op operand, r asm.Register) {
	switch op.kind {
	case opReg:
		if op.reg != r {
			g.emit(asm.Mov.Reg(op.reg, r))
		}
	case opSlot:
		g.emit(asm.StoreMem(asm.R10, op.slot, r, asm.DWord))
	}
}

// fromReg moves a result out of a caller-saved register into a new
// temporary.
func (g *gen) fromReg(r asm.Register) operand {
	t := g.newTemp()
	g.set(t, r)
	return t
}

// owned returns op as a temporary the caller may overwrite: op itself
// when it is one, else a new temporary holding its value.
func (g *gen) owned(op operand) operand {
	if op.kind != opImm {
		return op
	}
	t := g.newTemp()
	if t.kind == opReg {
		g.movImm(t.reg, op.imm)
	} else {
		g.movImm(asm.R0, op.imm)
		g.set(t, asm.R0)
	}
	return t
}

// work returns the register to compute in for temporary t: its own
// register, or scratch loaded from its slot (write it back with set).
func (g *gen) work(t operand, scratch asm.Register) asm.Register {
	if t.kind == opReg {
		return t.reg
	}
	g.emit(asm.LoadMem(scratch, asm.R10, t.slot, asm.DWord))
	return scratch
}
