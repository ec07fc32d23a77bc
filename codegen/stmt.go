package codegen

import (
	"sort"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// loop holds the labels break and continue jump to.
type loop struct{ cont, brk string }

// body generates the whole program: prologue, predicate, statements and
// the exit sequence.
func (g *gen) body() {
	probe := g.p.Syntax
	g.cur = probe.Pos()
	g.allocVars()
	if g.mech == MechFmodRet {
		g.retSlot = g.allocStack(8).off
	}
	if g.mech == MechIter {
		// The kernel calls an iterator's program once more after the
		// last object, with none; bpftrace's probes never see that call.
		g.emit(asm.LoadMem(asm.R0, regCtx, 8, asm.DWord), asm.JEq.Imm(asm.R0, 0, g.exitLabel))
	}
	if probe.Pred != nil {
		g.cur = probe.Pred.Pos()
		op := g.scalar(probe.Pred)
		r := g.reg(op, asm.R0)
		g.free(op)
		g.emit(asm.JEq.Imm(r, 0, g.exitLabel))
	}
	g.block(probe.Body, nil)
	g.cur = probe.Body.End() - 1
	g.place(g.exitLabel)
	if g.retSlot != 0 {
		g.emit(asm.LoadMem(asm.R0, asm.R10, g.retSlot, asm.DWord))
	} else {
		g.emit(asm.Mov.Imm(asm.R0, 0))
	}
	g.emit(asm.Return())
	g.prologue()
	g.resolveAliases()
	if g.stack.max > stackLimit {
		g.c.errorf(probe, "probe needs %d bytes of stack; BPF allows %d", g.stack.max, stackLimit)
	}
	if g.scratch.max > scratchLimit {
		g.c.errorf(probe, "probe needs %d bytes of scratch memory; kinst allows %d", g.scratch.max, scratchLimit)
	}
}

// allocVars gives every scratch variable its home for the whole probe.
func (g *gen) allocVars() {
	names := make([]string, 0, len(g.p.Vars))
	for n := range g.p.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := g.p.Vars[n].Type
		size := t.Size
		if t.InRegister() {
			size = 8
		}
		g.vars[n] = g.alloc(size, 8)
	}
}

// prologue is put in front of the body once its needs are known: it
// keeps the context in R6, points R9 at this program's scratch memory
// and zeroes variables, which may be read on paths that never set them.
func (g *gen) prologue() {
	body, pos := g.insns, g.pos
	g.insns, g.pos = nil, nil
	pending := g.pending
	g.pending = ""
	g.cur = g.p.Syntax.Pos()
	g.emit(asm.Mov.Reg(regCtx, asm.R1))
	if g.usesScratch {
		key := g.allocStack(4)
		g.storeImm(asm.R10, key.off, 0, asm.Word)
		g.mapPtr(asm.R1, ScratchMap)
		g.addr(asm.R2, key)
		g.call(asm.FnMapLookupElem)
		g.emit(asm.JEq.Imm(asm.R0, 0, g.exitLabel), asm.Mov.Reg(regScratch, asm.R0))
		if g.scratchBase > 0 {
			g.emit(asm.Add.Imm(regScratch, int32(g.scratchBase)))
		}
	}
	names := make([]string, 0, len(g.vars))
	for n := range g.vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g.zero(g.vars[n])
	}
	if g.retSlot != 0 {
		g.storeImm(asm.R10, g.retSlot, 0, asm.DWord)
	}
	g.insns = append(g.insns, body...)
	g.pos = append(g.pos, pos...)
	g.pending = pending
}

func (g *gen) block(b *syntax.Block, lp *loop) {
	for _, s := range b.Stmts {
		g.stmt(s, lp)
		// What follows exit(), return, break or continue never runs, and
		// the verifier rejects instructions no path reaches.
		if jumps(s) {
			return
		}
	}
}

// jumps reports whether s always leaves the statements after it.
func jumps(s syntax.Stmt) bool {
	switch s := s.(type) {
	case *syntax.JumpStmt:
		return true
	case *syntax.ExprStmt:
		call, ok := s.X.(*syntax.CallExpr)
		return ok && call.Fun.Name == "exit"
	}
	return false
}

func (g *gen) stmt(s syntax.Stmt, lp *loop) {
	saved := g.cur
	g.cur = s.Pos()
	defer func() { g.cur = saved }()
	mark := g.mark()
	defer g.release(mark)
	switch s := s.(type) {
	case *syntax.ExprStmt:
		switch x := s.X.(type) {
		case *syntax.CallExpr:
			g.callStmt(x)
		case *syntax.IncDecExpr:
			g.free(g.incDec(x, false))
		}
	case *syntax.AssignStmt:
		g.assign(s)
	case *syntax.IfStmt:
		els, done := g.newLabel("else"), g.newLabel("endif")
		c := g.scalar(s.Cond)
		r := g.reg(c, asm.R0)
		g.free(c)
		g.emit(asm.JEq.Imm(r, 0, els))
		g.block(s.Then, lp)
		if s.Else != nil {
			g.emit(asm.Ja.Label(done))
		}
		g.place(els)
		if s.Else != nil {
			g.stmt(s.Else, lp)
			g.place(done)
		}
	case *syntax.UnrollStmt:
		n := int(g.p.Consts[s.Count].Int)
		for i := 0; i < n; i++ {
			g.block(s.Body, lp)
			if len(g.insns) > maxInsns {
				// Nested unrolls multiply; stop before memory runs out.
				g.c.errorf(s, "unrolling makes the probe longer than the %d instructions BPF allows", maxInsns)
				return
			}
		}
	case *syntax.WhileStmt:
		l := &loop{cont: g.newLabel("while"), brk: g.newLabel("wend")}
		g.place(l.cont)
		c := g.scalar(s.Cond)
		r := g.reg(c, asm.R0)
		g.free(c)
		g.emit(asm.JEq.Imm(r, 0, l.brk))
		g.block(s.Body, l)
		g.emit(asm.Ja.Label(l.cont))
		g.place(l.brk)
	case *syntax.ForStmt:
		g.forRange(s)
	case *syntax.JumpStmt:
		switch s.Tok {
		case syntax.RETURN:
			g.emit(asm.Ja.Label(g.exitLabel))
		case syntax.BREAK:
			g.emit(asm.Ja.Label(lp.brk))
		case syntax.CONTINUE:
			g.emit(asm.Ja.Label(lp.cont))
		}
	case *syntax.Block:
		g.block(s, lp)
	}
}

// forRange generates for ($i : From..To): the bounds are evaluated once,
// $i counts from From while below To, and continue goes to the
// increment. The verifier bounds the loop as it bounds a while loop.
func (g *gen) forRange(s *syntax.ForStmt) {
	v, t := g.vars[s.Var.Name], g.p.Vars[s.Var.Name].Type
	store := func(x syntax.Expr, m mem) {
		op := g.scalar(x)
		r := g.reg(op, asm.R0)
		g.normalize(r, t)
		g.emit(asm.StoreMem(m.base, m.off, r, asm.DWord))
		g.free(op)
	}
	store(s.From, v)
	end := g.alloc(8, 8)
	store(s.To, end)
	l := &loop{cont: g.newLabel("fornext"), brk: g.newLabel("forend")}
	top := g.newLabel("for")
	jge := asm.JGE
	if t.Signed {
		jge = asm.JSGE
	}
	g.place(top)
	g.emit(asm.LoadMem(asm.R1, v.base, v.off, asm.DWord), asm.LoadMem(asm.R2, end.base, end.off, asm.DWord),
		jge.Reg(asm.R1, asm.R2, l.brk))
	g.block(s.Body, l)
	g.place(l.cont)
	g.emit(asm.LoadMem(asm.R1, v.base, v.off, asm.DWord), asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(v.base, v.off, asm.R1, asm.DWord), asm.Ja.Label(top))
	g.place(l.brk)
}

func (g *gen) assign(s *syntax.AssignStmt) {
	if call, ok := s.Rhs.(*syntax.CallExpr); ok {
		if c := g.p.Calls[call]; c != nil && c.Map != nil && c.Map.Value.IsAggregation() && s.Op == syntax.ASSIGN {
			g.aggregate(s.Lhs.(*syntax.MapExpr), call, c)
			return
		}
	}
	switch lhs := s.Lhs.(type) {
	case *syntax.VarExpr:
		v := g.vars[lhs.Name]
		t := g.p.Vars[lhs.Name].Type
		if s.Op == syntax.ASSIGN {
			if t.InRegister() {
				op := g.scalar(s.Rhs)
				g.emit(asm.StoreMem(v.base, v.off, g.reg(op, asm.R0), asm.DWord))
				g.free(op)
				return
			}
			g.memInto(s.Rhs, v, t)
			return
		}
		cur := g.newTemp()
		r := g.work(cur, asm.R1)
		g.emit(asm.LoadMem(r, v.base, v.off, asm.DWord))
		g.set(cur, r)
		rhs := g.scalar(s.Rhs)
		if t.Kind == check.Ptr {
			rhs = g.scale(g.owned(rhs), t)
		}
		res := g.arith(s.Op.BinaryOf(), cur, rhs, t, g.typeOf(s.Rhs))
		r = g.reg(res, asm.R0)
		g.normalize(r, t)
		g.emit(asm.StoreMem(v.base, v.off, r, asm.DWord))
		g.free(res)
	case *syntax.MapExpr:
		g.assignMap(lhs, s)
	}
}

// arith applies a binary operator to two operands of the given types,
// returning the result in a (which must be a temporary).
func (g *gen) arith(op syntax.Token, a, b operand, at, bt *check.Type) operand {
	signed := at.Signed && bt.Signed
	r := g.work(a, asm.R1)
	if signed && (op == syntax.QUO || op == syntax.REM) && b.kind == opImm && b.imm > 0 && fitsImm(b.imm) {
		g.signedDivConst(op, r, int32(b.imm))
	} else if signed && (op == syntax.QUO || op == syntax.REM) {
		g.load(asm.R2, b)
		g.signedDiv(op, r)
	} else if b.kind == opImm && fitsImm(b.imm) {
		g.emit(aluOp(op, signed).Imm(r, int32(b.imm)))
	} else {
		g.emit(aluOp(op, signed).Reg(r, g.reg(b, asm.R2)))
	}
	g.set(a, r)
	g.free(b)
	return a
}
