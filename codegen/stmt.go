package codegen

import (
	"fmt"
	"slices"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// pidFiltered are the probe types -p filters by process in bpftrace
// 0.26.1; uprobes and perf events are restricted where they attach.
var pidFiltered = []string{"kprobe", "kretprobe", "fentry", "fexit", "tracepoint", "rawtracepoint"}

// filterPid ends the probe in every process but Options.FilterPid's.
func (g *gen) filterPid() {
	pid := g.c.opts.FilterPid
	if pid == 0 || !slices.Contains(pidFiltered, g.p.Provider) {
		return
	}
	g.call(asm.FnGetCurrentPidTgid)
	g.emit(asm.RSh.Imm(asm.R0, 32), asm.JNE.Imm(asm.R0, int32(pid), g.exitLabel))
}

// loop holds the labels break and continue jump to.
type loop struct{ cont, brk string }

// body generates the whole program: prologue, predicate, statements and
// the exit sequence.
func (g *gen) body() {
	probe := g.p.Syntax
	g.cur = probe.Pos()
	g.allocVars()
	if g.mech == MechFmodRet || g.mech == MechXDP {
		g.retSlot = g.allocStack(8).off
	}
	if g.mech == MechSyscalls {
		g.idSlot = g.allocStack(8).off
	}
	if g.mech == MechIter {
		// The kernel calls an iterator's program once more after the
		// last object, with none; bpftrace's probes never see that call.
		g.emit(asm.LoadMem(asm.R0, regCtx, 8, asm.DWord), asm.JEq.Imm(asm.R0, 0, g.exitLabel))
	}
	g.half()
	g.finish()
}

// half generates g.p's predicate and statements, up to the exit that
// returns: the whole program but for its prologue, or one half of a
// kprobe session's.
func (g *gen) half() {
	probe := g.p.Syntax
	g.filterPid()
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
}

// finish puts the prologue in front of what half generated, and the
// callbacks after it, and checks the program's memory.
func (g *gen) finish() {
	probe := g.p.Syntax
	g.prologue()
	if len(g.subprogs) > 0 {
		// The kernel takes function pointers only in programs whose
		// functions BTF describes.
		g.insns[0] = btf.WithFuncMetadata(g.insns[0], btfFunc("probe", 1))
		g.insns = append(g.insns, g.subprogs...)
		g.pos = append(g.pos, g.subpos...)
	}
	g.resolveAliases()
	if need := alignUp(g.stack.max, 32) + g.calleeDeep; g.stack.max > stackLimit || g.calleeDeep > 0 && need > stackLimit {
		g.c.errorf(probe, "probe needs %d bytes of stack; BPF allows %d", max(g.stack.max, need), stackLimit)
	}
	switch {
	case g.scratch.max > bigScratchLimit:
		g.c.errorf(probe, "probe needs %d bytes of scratch memory; kinst allows %d", g.scratch.max, bigScratchLimit)
	case g.scratch.max > scratchLimit && !g.c.bigScratch:
		// More than a per-CPU map value holds: the programs are
		// generated again with arrays of a slice per CPU.
		g.c.wantBigScratch = true
	}
}

// allocVars gives every scratch variable its home for the whole probe.
func (g *gen) allocVars() {
	names := make([]string, 0, len(g.p.Vars))
	for n := range g.p.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	// The callback of a loop over a map runs on a stack of its own: the
	// variables it shares with the probe live in the scratch map.
	inScratch := false
	syntax.Inspect(g.p.Syntax, func(n syntax.Node) bool {
		if f, ok := n.(*syntax.ForStmt); ok && (f.Map != nil || g.loopsByHelper(f)) {
			inScratch = true
		}
		return !inScratch
	})
	g.varsInScratch = inScratch
	for _, n := range names {
		t := g.p.Vars[n].Type
		size := t.Size
		if t.InRegister() {
			size = 8
		}
		if inScratch {
			g.vars[n] = g.allocScratch(size, 8)
		} else {
			g.vars[n] = g.alloc(size, 8)
		}
		g.homes = append(g.homes, g.vars[n])
	}
}

// scratchMap is the map whose region at scratchBase is this program's
// scratch memory.
func (g *gen) scratchMap() string {
	if g.mech.sharesScratch() {
		return ScratchMap
	}
	return OwnScratchMap
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
	if g.retSlot != 0 {
		// Set before anything may leave the program.
		g.storeImm(asm.R10, g.retSlot, 0, asm.DWord)
	}
	if g.mech == MechSyscalls {
		g.syscallFilter()
	}
	if g.usesScratch {
		key := g.allocStack(4)
		if g.c.bigScratch {
			// This CPU's slice.
			g.call(asm.FnGetSmpProcessorId)
			g.emit(asm.StoreMem(asm.R10, key.off, asm.R0, asm.Word))
		} else {
			g.storeImm(asm.R10, key.off, 0, asm.Word)
		}
		g.mapPtr(asm.R1, g.scratchMap())
		g.addr(asm.R2, key)
		g.call(asm.FnMapLookupElem)
		g.emit(asm.JEq.Imm(asm.R0, 0, g.exitLabel), asm.Mov.Reg(regScratch, asm.R0))
		if base := g.scratchBase + g.scratchBias(); base > 0 {
			g.emit(asm.Add.Imm(regScratch, int32(base)))
		}
	}
	for _, m := range g.homes {
		g.zero(m)
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

// jumps reports whether s always leaves the statements after it: a
// jump, exit(), a block with one, or an if whose branches both leave.
func jumps(s syntax.Stmt) bool {
	switch s := s.(type) {
	case *syntax.JumpStmt:
		return true
	case *syntax.ExprStmt:
		call, ok := s.X.(*syntax.CallExpr)
		return ok && builtinFuncs[call.Fun.Name].ends
	case *syntax.Block:
		return slices.ContainsFunc(s.Stmts, jumps)
	case *syntax.IfStmt:
		return s.Else != nil && jumps(s.Then) && jumps(s.Else)
	}
	return false
}

// exprStmt generates an expression whose value is dropped. An integer
// is computed all the same, as bpftrace does, for what ++ and -- inside
// it change; anything else the checker let through changes nothing.
func (g *gen) exprStmt(x syntax.Expr) {
	switch x := x.(type) {
	case *syntax.CallExpr:
		g.callStmt(x)
	case *syntax.IncDecExpr:
		g.free(g.incDec(x, false))
	case *syntax.CondExpr:
		els, done := g.newLabel("else"), g.newLabel("fi")
		c := g.scalar(x.Cond)
		r := g.reg(c, asm.R0)
		g.free(c)
		g.emit(asm.JEq.Imm(r, 0, els))
		g.exprStmt(x.X)
		g.emit(asm.Ja.Label(done))
		g.place(els)
		g.exprStmt(x.Y)
		g.place(done)
	case *syntax.BlockExpr:
		g.blockStmts(x)
		g.exprStmt(x.Value)
	default:
		if t := g.typeOf(x); t != nil && t.IsInt() {
			g.free(g.scalar(x))
		}
	}
}

func (g *gen) stmt(s syntax.Stmt, lp *loop) {
	saved := g.cur
	g.cur = s.Pos()
	defer func() { g.cur = saved }()
	mark := g.mark()
	defer g.release(mark)
	switch s := s.(type) {
	case *syntax.ExprStmt:
		g.exprStmt(s.X)
	case *syntax.AssignStmt:
		g.assign(s)
	case *syntax.LetStmt:
		// let $x = e stores as an assignment does; a bare let $x starts
		// the variable at zero each time it runs, as in a loop's body.
		switch v, ok := g.vars[s.Var.Name]; {
		case s.Rhs != nil:
			g.assign(&syntax.AssignStmt{Lhs: s.Var, OpPos: s.Let, Op: syntax.ASSIGN, Rhs: s.Rhs})
		case ok:
			g.zero(v)
		}
	case *syntax.IfStmt:
		if taken, ok := g.p.ComptimeBranch(s); ok {
			if taken != nil {
				g.stmt(taken, lp)
			}
			return
		}
		els, done := g.newLabel("else"), g.newLabel("endif")
		c := g.scalar(s.Cond)
		r := g.reg(c, asm.R0)
		g.free(c)
		g.emit(asm.JEq.Imm(r, 0, els))
		g.block(s.Then, lp)
		if s.Else != nil && !jumps(s.Then) {
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
		g.loops++
		defer func() { g.loops-- }()
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
		g.loops++
		defer func() { g.loops-- }()
		if s.Map != nil {
			g.forMap(s)
		} else {
			g.forRange(s)
		}
	case *syntax.DiscardStmt:
		g.exprStmt(s.X)
	case *syntax.JumpStmt:
		switch s.Tok {
		case syntax.RETURN:
			switch {
			case s.X != nil && g.mech == MechXDP:
				// A test fails, and a bench is skipped, by a value
				// other than 0.
				op := g.scalar(s.X)
				g.storeRet(g.reg(op, asm.R0))
				g.free(op)
			case s.X != nil:
				// Elsewhere a probe's return value means nothing; what
				// computing it does still happens.
				g.exprStmt(s.X)
			}
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
// increment. The verifier bounds the loop as it bounds a while loop,
// unless bpf_loop runs it.
func (g *gen) forRange(s *syntax.ForStmt) {
	v, t := g.vars[s.Var.Name], g.p.Vars[s.Var.Name].Type
	if g.loopsByHelper(s) {
		g.forLoopHelper(s, t)
		return
	}
	g.storeBound(s.From, t, v)
	end := g.alloc(8, 8)
	g.storeBound(s.To, t, end)
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

// storeBound evaluates a range loop's bound x once and stores it at m as
// a value of the loop variable's type t.
func (g *gen) storeBound(x syntax.Expr, t *check.Type, m mem) {
	op := g.scalar(x)
	r := g.reg(op, asm.R0)
	g.normalize(r, t)
	g.emit(asm.StoreMem(m.base, m.off, r, asm.DWord))
	g.free(op)
}

// maxLoops is the most rounds bpf_loop runs (BPF_MAX_LOOPS); asked for
// more, it runs none.
const maxLoops = 1 << 23

// loopsByHelper reports whether a range loop runs through bpf_loop: the
// kernel has it and the verifier could not bound the loop itself, a
// bound not being a constant, or the loop's counter living in the
// scratch map, whose words it does not follow from round to round
// (another loop of the probe runs as a callback). Other loops of
// constant bounds stay plain loops, which every kernel with bounded
// loops takes.
func (g *gen) loopsByHelper(s *syntax.ForStmt) bool {
	if s.Map != nil {
		return false
	}
	_, from := g.p.Consts[s.From]
	_, to := g.p.Consts[s.To]
	return (!(from && to) || g.varsInScratch) && g.c.opts.HasLoop != nil && g.c.opts.HasLoop()
}

// forLoopHelper generates a range loop as bpftrace 0.24 does: bpf_loop
// calls a subprogram To-From times (none when To <= From) with the
// round's index, from which the subprogram makes $i. As for a loop over
// a map, the subprogram reaches the probe through a struct on this
// frame, which also carries From. More than 1<<23 rounds, bpf_loop's
// limit, are cut to that many.
func (g *gen) forLoopHelper(s *syntax.ForStmt, t *check.Type) {
	cs := g.allocStack(g.forSize())
	g.storeBound(s.From, t, mem{base: cs.base, off: cs.off + forStart, size: 8})
	end := g.alloc(8, 8)
	g.storeBound(s.To, t, end)
	skip, within := g.newLabel("forloopend"), g.newLabel("forloopnr")
	jle := asm.JLE
	if t.Signed {
		jle = asm.JSLE
	}
	g.emit(asm.LoadMem(asm.R1, end.base, end.off, asm.DWord), asm.LoadMem(asm.R2, cs.base, cs.off+forStart, asm.DWord),
		jle.Reg(asm.R1, asm.R2, skip), asm.Sub.Reg(asm.R1, asm.R2),
		asm.JLE.Imm(asm.R1, maxLoops, within), asm.Mov.Imm(asm.R1, maxLoops))
	g.place(within)
	g.emit(asm.StoreMem(cs.base, cs.off+forCtx, regCtx, asm.DWord),
		asm.StoreMem(cs.base, cs.off+forScr, regScratch, asm.DWord))
	g.storeImm(cs.base, cs.off+forLeave, 0, asm.DWord)
	g.passRet(cs)
	cb := g.newLabel("forloop")
	g.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb))
	g.addr(asm.R3, cs)
	g.emit(asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnLoop)
	g.takeRet(cs)
	g.emit(asm.LoadMem(asm.R0, cs.base, cs.off+forLeave, asm.DWord), asm.JNE.Imm(asm.R0, 0, g.exitLabel))
	g.place(skip)
	v := g.vars[s.Var.Name]
	// bpf_loop passes the index in R1 and the struct in R2.
	g.callback(cb, "forloop", 2, asm.R2, func() {
		g.emit(asm.LoadMem(asm.R0, asm.R2, forStart, asm.DWord), asm.Add.Reg(asm.R0, asm.R1))
		g.normalize(asm.R0, t)
		g.emit(asm.StoreMem(v.base, v.off, asm.R0, asm.DWord))
	}, s.Body)
}

// Words of the struct a loop over a map or a range run by bpf_loop
// hands its callback.
const (
	forCtx   = 0  // the program's context
	forScr   = 8  // the program's scratch memory
	forLeave = 16 // set by the callback when the body left the probe
	forStart = 24 // a range's first value
	forRet   = 32 // the probe's return value, where it has one (see forSize)
)

// checkedDiv divides a, in register r, by b as bpftrace 0.26.1 does: a
// divisor of 0 gives 1 and a warning, where BPF would give 0 (or the
// dividend, for %).
func (g *gen) checkedDiv(op syntax.Token, a, b operand, r asm.Register, signed bool) operand {
	nonzero, done := g.newLabel("divisor"), g.newLabel("divided")
	g.load(asm.R2, b)
	g.free(b)
	g.emit(asm.JNE.Imm(asm.R2, 0, nonzero))
	a0 := g.action(&Action{Kind: ActDivZero, Args: check.TupleType(nil), End: g.curEnd})
	g.emitRecord(g.record(a0))
	g.emit(asm.Mov.Imm(r, 1), asm.Ja.Label(done))
	g.place(nonzero)
	if signed {
		g.signedDiv(op, r)
	} else {
		g.emit(aluOp(op, false).Reg(r, asm.R2))
	}
	g.place(done)
	g.set(a, r)
	return a
}

// forSize is the size of the struct a loop's callback gets: the return
// value's word only in probes with one.
func (g *gen) forSize() int {
	if g.retSlot != 0 {
		return forRet + 8
	}
	return forRet
}

// storeRet sets the probe's return value to register r: its slot in the
// probe's frame, or in a loop's callback the struct the caller copies it
// back from (see takeRet). R1 or R2 is overwritten.
func (g *gen) storeRet(r asm.Register) {
	if g.cbStruct == nil {
		g.emit(asm.StoreMem(asm.R10, g.retSlot, r, asm.DWord))
		return
	}
	ptr := asm.R1
	if r == ptr {
		ptr = asm.R2
	}
	g.emit(asm.LoadMem(ptr, g.cbStruct.base, g.cbStruct.off, asm.DWord), asm.StoreMem(ptr, forRet, r, asm.DWord))
}

// passRet copies the probe's return value so far into the struct cs a
// loop's callback gets, where the body may change it. It overwrites R0
// only.
func (g *gen) passRet(cs mem) {
	if g.retSlot == 0 {
		return
	}
	if g.cbStruct == nil {
		g.emit(asm.LoadMem(asm.R0, asm.R10, g.retSlot, asm.DWord))
	} else {
		g.emit(asm.LoadMem(asm.R0, g.cbStruct.base, g.cbStruct.off, asm.DWord), asm.LoadMem(asm.R0, asm.R0, forRet, asm.DWord))
	}
	g.emit(asm.StoreMem(cs.base, cs.off+forRet, asm.R0, asm.DWord))
}

// takeRet takes back the return value from the struct cs once the loop
// has run.
func (g *gen) takeRet(cs mem) {
	if g.retSlot == 0 {
		return
	}
	g.emit(asm.LoadMem(asm.R0, cs.base, cs.off+forRet, asm.DWord))
	g.storeRet(asm.R0)
}

// forMap generates for ($kv : @m) as bpftrace does: bpf_for_each_map_elem
// calls a subprogram for each element, which returns 0 to go on (the end
// of the body, continue) and 1 to stop (break). The subprogram reaches
// the probe's variables, kept in the scratch map, through a struct on
// this frame, which also carries the context; exit() and return in the
// body stop the walk and mark the struct, and the probe leaves then.
func (g *gen) forMap(s *syntax.ForStmt) {
	m := g.mapOf(s.Map)
	cs := g.allocStack(g.forSize())
	g.emit(asm.StoreMem(cs.base, cs.off+forCtx, regCtx, asm.DWord),
		asm.StoreMem(cs.base, cs.off+forScr, regScratch, asm.DWord))
	g.storeImm(cs.base, cs.off+forLeave, 0, asm.DWord)
	g.passRet(cs)
	cb := g.newLabel("formap")
	g.mapPtr(asm.R1, m.Spec)
	g.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb))
	g.addr(asm.R3, cs)
	g.emit(asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnForEachMapElem)
	g.takeRet(cs)
	g.emit(asm.LoadMem(asm.R0, cs.base, cs.off+forLeave, asm.DWord), asm.JNE.Imm(asm.R0, 0, g.exitLabel))
	g.forMapCallback(s, m, cb)
}

// forMapCallback generates the subprogram of a loop over map m, called
// with the map in R1, the element's key and value in R2 and R3, and the
// struct of forMap in R4.
func (g *gen) forMapCallback(s *syntax.ForStmt, m *Map, label string) {
	g.callback(label, "formap", 4, asm.R4, func() {
		g.emit(asm.Mov.Reg(asm.R7, asm.R2), asm.Mov.Reg(asm.R8, asm.R3))
		v, t := g.vars[s.Var.Name], g.p.Vars[s.Var.Name].Type
		g.copyMem(v.at(t.Offsets[0], t.Elems[0].Size), mem{base: asm.R7, size: m.Key.Size})
		if m.PerCPU {
			g.totalCPUs(s.Map, m, mem{base: asm.R7, size: m.Key.Size}, v.at(t.Offsets[1], 8))
		} else {
			g.copyMem(v.at(t.Offsets[1], t.Elems[1].Size), mem{base: asm.R8, size: m.ValueSize})
		}
	}, s.Body)
}

// callback generates a loop's subprogram of nargs arguments, one of
// them (in register arg) the struct its caller filled: it restores the
// context and scratch registers from the struct, runs enter to set the
// loop's variable, then the body. It returns 0 to go on (the end of the
// body, continue) and 1 to stop (break; exit() and return also mark the
// struct, so that the caller leaves the probe).
func (g *gen) callback(label, kind string, nargs int, arg asm.Register, enter func(), body *syntax.Block) {
	exit := g.exitLabel
	g.subprog(label, nargs, func() {
		g.exitLabel = g.newLabel(kind + "exit")
		l := &loop{cont: g.newLabel(kind + "next"), brk: g.newLabel(kind + "break")}
		slot := g.allocStack(8)
		g.cbStruct = &slot
		g.emit(asm.StoreMem(slot.base, slot.off, arg, asm.DWord),
			asm.LoadMem(regCtx, arg, forCtx, asm.DWord),
			asm.LoadMem(regScratch, arg, forScr, asm.DWord))
		enter()
		g.block(body, l)
		// The verifier refuses code no path reaches: each way out is
		// generated only when something goes there.
		last := g.insns[len(g.insns)-1].OpCode
		if g.pending != "" || last.JumpOp() != asm.Ja && last.JumpOp() != asm.Exit || g.jumpsTo(l.cont) {
			g.place(l.cont)
			g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		}
		leaves := g.jumpsTo(g.exitLabel)
		if leaves {
			g.place(g.exitLabel)
			g.emit(asm.LoadMem(asm.R1, slot.base, slot.off, asm.DWord))
			g.storeImm(asm.R1, forLeave, 1, asm.DWord)
		}
		if leaves || g.jumpsTo(l.brk) {
			g.place(l.brk)
			g.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
		}
	})
	g.exitLabel = exit
}

// subprog generates a function of nargs pointer arguments at label, put
// after the program's exit: body generates it on a stack frame of its
// own. The deepest chain of such functions counts towards the stack as
// the verifier counts it, each frame at least 32 bytes.
func (g *gen) subprog(label string, nargs int, body func()) {
	insns, pos, pending := g.insns, g.pos, g.pending
	stack, spills, temps, deep, outer := g.stack, g.spills, g.temps, g.calleeDeep, g.cbStruct
	g.insns, g.pos, g.pending = nil, nil, ""
	g.stack, g.spills, g.temps, g.calleeDeep, g.cbStruct = frame{}, nil, [2]bool{}, 0, nil
	g.place(label)
	body()
	g.insns[0] = btf.WithFuncMetadata(g.insns[0], btfFunc(label, nargs))
	g.subprogs = append(g.subprogs, g.insns...)
	g.subpos = append(g.subpos, g.pos...)
	own := alignUp(max(g.stack.max, 1), 32) + g.calleeDeep
	g.insns, g.pos, g.pending = insns, pos, pending
	g.stack, g.spills, g.temps, g.cbStruct = stack, spills, temps, outer
	g.calleeDeep = max(deep, own)
}

// totalCPUs stores in dst the total over the CPUs of the count(),
// sum(), min(), max() or avg() element whose key is at key: a program
// sees only this CPU's copy, and bpf_map_lookup_percpu_elem reads the
// others, one call per possible CPU so that the verifier sees no loop. A
// copy of min() or max() counts only once its CPU has set it (its second
// word); avg() is the total of the sums over the total of the counts.
func (g *gen) totalCPUs(x *syntax.MapExpr, m *Map, key, dst mem) {
	if g.c.opts.CPUs == 0 {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			g.c.errorf(x, "cannot total @%s over the CPUs: %v", x.Name, err)
			return
		}
		g.c.opts.CPUs = n
	}
	vt := m.Value
	seen := g.allocStack(8)
	g.storeImm(dst.base, dst.off, 0, asm.DWord)
	g.storeImm(seen.base, seen.off, 0, asm.DWord)
	// Keep dst when it is at least as good as the copy in R1.
	keep := asm.JLE
	switch {
	case vt.Kind == check.Min && vt.Signed:
		keep = asm.JSLE
	case vt.Kind == check.Max && vt.Signed:
		keep = asm.JSGE
	case vt.Kind == check.Max:
		keep = asm.JGE
	}
	for cpu := range g.c.opts.CPUs {
		next := g.newLabel("cpu")
		g.mapPtr(asm.R1, m.Spec)
		g.addr(asm.R2, key)
		g.emit(asm.Mov.Imm(asm.R3, int32(cpu)))
		g.call(asm.FnMapLookupPercpuElem)
		g.emit(asm.JEq.Imm(asm.R0, 0, next), asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
		switch vt.Kind {
		case check.Avg:
			// The count is the first word, the sum the second.
			g.emit(asm.LoadMem(asm.R2, seen.base, seen.off, asm.DWord), asm.Add.Reg(asm.R2, asm.R1),
				asm.StoreMem(seen.base, seen.off, asm.R2, asm.DWord),
				asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
				asm.LoadMem(asm.R2, dst.base, dst.off, asm.DWord), asm.Add.Reg(asm.R1, asm.R2))
		case check.Count, check.Sum:
			g.emit(asm.LoadMem(asm.R2, dst.base, dst.off, asm.DWord), asm.Add.Reg(asm.R1, asm.R2))
		case check.Min, check.Max:
			store := g.newLabel("best")
			g.emit(asm.LoadMem(asm.R2, asm.R0, 8, asm.DWord), asm.JEq.Imm(asm.R2, 0, next),
				asm.LoadMem(asm.R2, seen.base, seen.off, asm.DWord), asm.JEq.Imm(asm.R2, 0, store),
				asm.LoadMem(asm.R2, dst.base, dst.off, asm.DWord), keep.Reg(asm.R2, asm.R1, next))
			g.place(store)
			g.storeImm(seen.base, seen.off, 1, asm.DWord)
		}
		g.emit(asm.StoreMem(dst.base, dst.off, asm.R1, asm.DWord))
		g.place(next)
	}
	if vt.Kind == check.Avg {
		none := g.newLabel("nocount")
		g.emit(asm.LoadMem(asm.R2, seen.base, seen.off, asm.DWord), asm.JEq.Imm(asm.R2, 0, none),
			asm.LoadMem(asm.R1, dst.base, dst.off, asm.DWord))
		if vt.Signed {
			g.signedDiv(syntax.QUO, asm.R1)
		} else {
			g.emit(asm.Div.Reg(asm.R1, asm.R2))
		}
		g.emit(asm.StoreMem(dst.base, dst.off, asm.R1, asm.DWord))
		g.place(none)
	}
}

// jumpsTo reports whether an instruction generated so far jumps to label.
func (g *gen) jumpsTo(label string) bool {
	for _, ins := range g.insns {
		if ins.Reference() == label && ins.OpCode.JumpOp() != asm.InvalidJumpOp {
			return true
		}
	}
	return false
}

// btfFunc describes a function of n pointer arguments returning int,
// all the verifier needs to know of a program's functions.
func btfFunc(name string, n int) *btf.Func {
	params := make([]btf.FuncParam, n)
	for i := range params {
		params[i] = btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: &btf.Pointer{Target: &btf.Void{}}}
	}
	return &btf.Func{
		Name:    name,
		Type:    &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Params: params},
		Linkage: btf.StaticFunc,
	}
}

func (g *gen) assign(s *syntax.AssignStmt) {
	if b, call := check.AggregateBlock(s.Rhs); call != nil {
		g.blockStmts(b)
		g.assign(&syntax.AssignStmt{Lhs: s.Lhs, OpPos: s.OpPos, Op: s.Op, Rhs: call})
		return
	}
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
	if (op == syntax.QUO || op == syntax.REM) && g.c.prog.Compat != compat.V017 && (b.kind != opImm || b.imm == 0) {
		return g.checkedDiv(op, a, b, r, signed)
	}
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
