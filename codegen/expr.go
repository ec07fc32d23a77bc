package codegen

import (
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

func (g *gen) typeOf(x syntax.Expr) *check.Type { return g.p.Types[x] }

// scalar generates x, which must have a register-class type, and returns
// where its value is.
func (g *gen) scalar(x syntax.Expr) operand {
	if v, ok := g.p.Consts[x]; ok && !v.IsStr {
		return immOp(int64(v.Int))
	}
	if e, ok := g.p.Expand[x]; ok {
		return g.scalar(e)
	}
	saved, savedEnd := g.cur, g.curEnd
	g.cur, g.curEnd = g.startOf(x), x.End()
	defer func() { g.cur, g.curEnd = saved, savedEnd }()
	switch x := x.(type) {
	case *syntax.ParenExpr:
		return g.scalar(x.X)
	case *syntax.Ident:
		return g.builtin(x)
	case *syntax.VarExpr:
		v := g.vars[x.Name]
		t := g.newTemp()
		r := g.work(t, asm.R0)
		g.emit(asm.LoadMem(r, v.base, v.off, asm.DWord))
		g.set(t, r)
		return t
	case *syntax.MapExpr:
		return g.mapReadScalar(x)
	case *syntax.CallExpr:
		return g.callScalar(x)
	case *syntax.UnaryExpr:
		return g.unary(x)
	case *syntax.IncDecExpr:
		return g.incDec(x, true)
	case *syntax.BinaryExpr:
		return g.binary(x)
	case *syntax.CondExpr:
		return g.condScalar(x)
	case *syntax.BlockExpr:
		g.blockStmts(x)
		return g.scalar(x.Value)
	case *syntax.ComptimeExpr:
		return g.scalar(x.X)
	case *syntax.CastExpr:
		if g.typeOf(x.X).Kind == check.Array {
			return g.arrayToInt(x)
		}
		op := g.owned(g.scalar(x.X))
		t := g.typeOf(x)
		r := g.work(op, asm.R0)
		g.normalize(r, t)
		g.set(op, r)
		return op
	case *syntax.FieldExpr, *syntax.IndexExpr:
		pl := g.placeOf(x)
		return g.readScalar(pl, g.typeOf(x), g.fieldOf(x))
	}
	g.c.errorf(x, "cannot generate code for %s", syntax.String(x))
	return immOp(0)
}

func (g *gen) unary(x *syntax.UnaryExpr) operand {
	switch x.Op {
	case syntax.MUL:
		pl := g.placeOf(x)
		return g.readScalar(pl, g.typeOf(x), nil)
	case syntax.AND:
		return g.addressOf(x)
	}
	op := g.owned(g.scalar(x.X))
	r := g.work(op, asm.R0)
	switch x.Op {
	case syntax.SUB:
		g.emit(asm.Neg.Imm(r, 0))
		g.normalize(r, g.typeOf(x))
	case syntax.TILDE:
		g.emit(asm.Xor.Imm(r, -1))
		g.normalize(r, g.typeOf(x))
	case syntax.NOT:
		done := g.newLabel("not")
		g.emit(asm.Mov.Imm(asm.R1, 1), asm.JEq.Imm(r, 0, done), asm.Mov.Imm(asm.R1, 0))
		g.place(done)
		g.emit(asm.Mov.Reg(r, asm.R1))
	}
	g.set(op, r)
	return op
}

// jumpOp is the conditional jump for a comparison.
func jumpOp(op syntax.Token, signed bool) asm.JumpOp {
	switch op {
	case syntax.EQL:
		return asm.JEq
	case syntax.NEQ:
		return asm.JNE
	case syntax.LSS:
		if signed {
			return asm.JSLT
		}
		return asm.JLT
	case syntax.LEQ:
		if signed {
			return asm.JSLE
		}
		return asm.JLE
	case syntax.GTR:
		if signed {
			return asm.JSGT
		}
		return asm.JGT
	case syntax.GEQ:
		if signed {
			return asm.JSGE
		}
		return asm.JGE
	}
	panic("not a comparison: " + op.String())
}

func isComparison(op syntax.Token) bool {
	switch op {
	case syntax.EQL, syntax.NEQ, syntax.LSS, syntax.LEQ, syntax.GTR, syntax.GEQ:
		return true
	}
	return false
}

func fitsImm(v int64) bool { return v >= -1<<31 && v < 1<<31 }

func (g *gen) binary(x *syntax.BinaryExpr) operand {
	if x.Op == syntax.LAND || x.Op == syntax.LOR {
		return g.logical(x)
	}
	lt, rt := g.typeOf(x.X), g.typeOf(x.Y)
	if lt.Kind == check.Str {
		return g.strEqual(x)
	}
	if lt.Kind == check.Array || lt.Kind == check.Buffer {
		return g.memEqual(x)
	}
	if lt.Kind == check.Tuple {
		return g.tupleEqual(x, lt, rt)
	}
	signed := lt.Kind == check.Int && rt.Kind == check.Int && check.ComparesSigned(lt, rt, g.c.prog.Compat)
	a := g.scalar(x.X)
	b := g.scalar(x.Y)
	if isComparison(x.Op) {
		return g.compare(x.Op, a, b, signed)
	}
	// Pointer arithmetic counts in elements, as in C.
	if lt.Kind == check.Ptr && rt.Kind == check.Ptr {
		diff := g.arith(syntax.SUB, g.owned(a), b, lt, rt)
		if n := check.ElemSize(lt); n > 1 {
			return g.arith(syntax.QUO, diff, immOp(int64(n)), check.TInt64, check.TInt64)
		}
		return diff
	}
	if lt.Kind == check.Ptr && rt.Kind == check.Int {
		b = g.scale(b, lt)
	} else if rt.Kind == check.Ptr && lt.Kind == check.Int {
		a = g.scale(a, rt)
	}
	if res := g.typeOf(x); res.Kind == check.Int {
		// The result's sign picks signed division and shifts: both
		// operands' in 0.17, either's in bpftrace 0.26.
		return g.arith(x.Op, g.owned(a), b, res, res)
	}
	return g.arith(x.Op, g.owned(a), b, lt, rt)
}

// scale multiplies an index by the size of what pointer type p points to.
func (g *gen) scale(op operand, p *check.Type) operand {
	size := check.ElemSize(p)
	if size == 1 {
		return op
	}
	if op.kind == opImm {
		return immOp(op.imm * int64(size))
	}
	r := g.work(op, asm.R1)
	g.emit(asm.Mul.Imm(r, int32(size)))
	g.set(op, r)
	return op
}

func aluOp(op syntax.Token, signed bool) asm.ALUOp {
	switch op {
	case syntax.ADD:
		return asm.Add
	case syntax.SUB:
		return asm.Sub
	case syntax.MUL:
		return asm.Mul
	case syntax.QUO:
		return asm.Div
	case syntax.REM:
		return asm.Mod
	case syntax.AND:
		return asm.And
	case syntax.OR:
		return asm.Or
	case syntax.XOR:
		return asm.Xor
	case syntax.SHL:
		return asm.LSh
	case syntax.SHR:
		if signed {
			return asm.ArSh
		}
		return asm.RSh
	}
	panic("not an arithmetic operator: " + op.String())
}

// signedDiv divides r by R2 with C's signed semantics: the quotient
// truncates toward zero and the remainder takes the dividend's sign.
// BPF's div and mod are unsigned (sdiv needs a 6.6 kernel), so the
// magnitudes are divided and the sign fixed after.
func (g *gen) signedDiv(op syntax.Token, r asm.Register) {
	l1, l2, l3 := g.newLabel("sdiv"), g.newLabel("sdiv"), g.newLabel("sdiv")
	g.emit(asm.Mov.Imm(asm.R3, 0), asm.JSGE.Imm(r, 0, l1), asm.Neg.Imm(r, 0), asm.Mov.Imm(asm.R3, 1))
	g.place(l1)
	g.emit(asm.JSGE.Imm(asm.R2, 0, l2), asm.Neg.Imm(asm.R2, 0))
	if op == syntax.QUO {
		g.emit(asm.Xor.Imm(asm.R3, 1))
	}
	g.place(l2)
	if op == syntax.QUO {
		g.emit(asm.Div.Reg(r, asm.R2))
	} else {
		g.emit(asm.Mod.Reg(r, asm.R2))
	}
	g.emit(asm.JEq.Imm(asm.R3, 0, l3), asm.Neg.Imm(r, 0))
	g.place(l3)
}

// signedDivConst divides r by a positive constant with C's signed
// semantics. Only the dividend's sign needs fixing, and with an immediate
// divisor the verifier keeps the result's range, which loops whose
// bodies test x % K depend on.
func (g *gen) signedDivConst(op syntax.Token, r asm.Register, d int32) {
	neg, done := g.newLabel("negdiv"), g.newLabel("sdiv")
	alu := asm.Div
	if op == syntax.REM {
		alu = asm.Mod
	}
	g.emit(asm.JSLT.Imm(r, 0, neg), alu.Imm(r, d), asm.Ja.Label(done))
	g.place(neg)
	g.emit(asm.Neg.Imm(r, 0), alu.Imm(r, d), asm.Neg.Imm(r, 0))
	g.place(done)
}

// compare materializes a comparison as 0 or 1.
func (g *gen) compare(op syntax.Token, a, b operand, signed bool) operand {
	if a.kind == opImm {
		// Put the constant on the right: a < b is b > a.
		a, b = b, a
		op = swapComparison(op)
	}
	yes, done := g.newLabel("true"), g.newLabel("cmp")
	ra := g.reg(a, asm.R1)
	j := jumpOp(op, signed)
	if b.kind == opImm && fitsImm(b.imm) {
		g.emit(j.Imm(ra, int32(b.imm), yes))
	} else {
		g.emit(j.Reg(ra, g.reg(b, asm.R2), yes))
	}
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	g.place(yes)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.place(done)
	g.free(a)
	g.free(b)
	return g.fromReg(asm.R0)
}

func swapComparison(op syntax.Token) syntax.Token {
	switch op {
	case syntax.LSS:
		return syntax.GTR
	case syntax.LEQ:
		return syntax.GEQ
	case syntax.GTR:
		return syntax.LSS
	case syntax.GEQ:
		return syntax.LEQ
	}
	return op
}

// logical generates && and || with short circuits.
func (g *gen) logical(x *syntax.BinaryExpr) operand {
	short, done := g.newLabel("short"), g.newLabel("logic")
	// && stops at the first false operand, || at the first true one.
	stop := asm.JEq
	if x.Op == syntax.LOR {
		stop = asm.JNE
	}
	for _, side := range []syntax.Expr{x.X, x.Y} {
		op := g.scalar(side)
		r := g.reg(op, asm.R0)
		g.free(op)
		g.emit(stop.Imm(r, 0, short))
	}
	result := int32(1)
	if x.Op == syntax.LOR {
		result = 0
	}
	g.emit(asm.Mov.Imm(asm.R0, result), asm.Ja.Label(done))
	g.place(short)
	g.emit(asm.Mov.Imm(asm.R0, 1-result))
	g.place(done)
	return g.fromReg(asm.R0)
}

func (g *gen) condScalar(x *syntax.CondExpr) operand {
	dst := g.newTemp()
	els, done := g.newLabel("else"), g.newLabel("fi")
	c := g.scalar(x.Cond)
	r := g.reg(c, asm.R0)
	if x.X == nil {
		// c ?: y: c's own value when it is not zero.
		g.emit(asm.Mov.Reg(asm.R0, r))
		g.free(c)
		g.set(dst, asm.R0)
		g.emit(asm.JNE.Imm(asm.R0, 0, done))
		b := g.scalar(x.Y)
		g.load(asm.R0, b)
		g.free(b)
		g.set(dst, asm.R0)
		g.place(done)
		return dst
	}
	g.free(c)
	g.emit(asm.JEq.Imm(r, 0, els))
	a := g.scalar(x.X)
	g.load(asm.R0, a)
	g.free(a)
	g.set(dst, asm.R0)
	g.emit(asm.Ja.Label(done))
	g.place(els)
	b := g.scalar(x.Y)
	g.load(asm.R0, b)
	g.free(b)
	g.set(dst, asm.R0)
	g.place(done)
	return dst
}

// strEqual compares two strings byte by byte up to the first NUL.
func (g *gen) strEqual(x *syntax.BinaryExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	eq, ne, done := g.newLabel("streq"), g.newLabel("strne"), g.newLabel("strcmp")
	left, right := x.X, x.Y
	if _, ok := g.p.Consts[left]; ok {
		left, right = right, left
	}
	a := g.memOf(left)
	if v, ok := g.p.Consts[right]; ok && v.IsStr {
		// Against a constant: compare each byte with an immediate,
		// including the terminating NUL when a has room for it (a
		// char[N] may be full).
		lit := v.Str
		if len(lit) > a.size {
			// Too long to fit: never equal. A jump to ne would leave the
			// code for eq unreachable, which the verifier rejects.
			if x.Op == syntax.NEQ {
				return immOp(1)
			}
			return immOp(0)
		}
		for i := 0; i <= len(lit) && i < a.size; i++ {
			var c byte
			if i < len(lit) {
				c = lit[i]
			}
			g.emit(asm.LoadMem(asm.R1, a.base, a.off+int16(i), asm.Byte), asm.JNE.Imm(asm.R1, int32(c), ne))
		}
		g.emit(asm.Ja.Label(eq))
	} else {
		b := g.memOf(right)
		n := min(a.size, b.size)
		for i := 0; i < n; i++ {
			g.emit(
				asm.LoadMem(asm.R1, a.base, a.off+int16(i), asm.Byte),
				asm.LoadMem(asm.R2, b.base, b.off+int16(i), asm.Byte),
				asm.JNE.Reg(asm.R1, asm.R2, ne),
				asm.JEq.Imm(asm.R1, 0, eq),
			)
		}
		// All n bytes matched without a NUL: equal only if the longer
		// string ends there.
		switch {
		case a.size > n:
			g.emit(asm.LoadMem(asm.R1, a.base, a.off+int16(n), asm.Byte), asm.JNE.Imm(asm.R1, 0, ne))
		case b.size > n:
			g.emit(asm.LoadMem(asm.R1, b.base, b.off+int16(n), asm.Byte), asm.JNE.Imm(asm.R1, 0, ne))
		}
		g.emit(asm.Ja.Label(eq))
	}
	want := int32(1)
	if x.Op == syntax.NEQ {
		want = 0
	}
	g.place(eq)
	g.emit(asm.Mov.Imm(asm.R0, want), asm.Ja.Label(done))
	g.place(ne)
	g.emit(asm.Mov.Imm(asm.R0, 1-want))
	g.place(done)
	return g.fromReg(asm.R0)
}

// memEqual compares two arrays or buffers of the same type byte by
// byte.
func (g *gen) memEqual(x *syntax.BinaryExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	return g.bytesEqual(x.Op, g.memOf(x.X), g.memOf(x.Y))
}

// tupleEqual compares two tuples converted to the type holding both,
// whose padding is zero, byte by byte.
func (g *gen) tupleEqual(x *syntax.BinaryExpr, lt, rt *check.Type) operand {
	mark := g.mark()
	defer g.release(mark)
	u, _ := check.Unify(lt, rt)
	a, b := g.alloc(u.Size, u.Align()), g.alloc(u.Size, u.Align())
	g.memInto(x.X, a, u)
	g.memInto(x.Y, b, u)
	return g.bytesEqual(x.Op, a, b)
}

// bytesEqual compares memory a and b of the same size for == or !=.
func (g *gen) bytesEqual(op syntax.Token, a, b mem) operand {
	ne, done := g.newLabel("memne"), g.newLabel("memcmp")
	for i := 0; i < a.size; {
		size := 1
		for _, n := range []int{8, 4, 2} {
			if a.size-i >= n && (int(a.off)+i)%n == 0 && (int(b.off)+i)%n == 0 {
				size = n
				break
			}
		}
		g.emit(
			asm.LoadMem(asm.R1, a.base, a.off+int16(i), sizeOf(size)),
			asm.LoadMem(asm.R2, b.base, b.off+int16(i), sizeOf(size)),
			asm.JNE.Reg(asm.R1, asm.R2, ne),
		)
		i += size
	}
	eq := int32(1)
	if op == syntax.NEQ {
		eq = 0
	}
	g.emit(asm.Mov.Imm(asm.R0, eq), asm.Ja.Label(done))
	g.place(ne)
	g.emit(asm.Mov.Imm(asm.R0, 1-eq))
	g.place(done)
	return g.fromReg(asm.R0)
}

// memOf returns where the value of memory-class expression x lives,
// generating it into new memory unless it already has a home.
func (g *gen) memOf(x syntax.Expr) mem {
	x = syntax.Unparen(x)
	if v, ok := x.(*syntax.VarExpr); ok {
		return g.vars[v.Name]
	}
	t := g.typeOf(x)
	m := g.alloc(t.Size, t.Align())
	g.memInto(x, m, t)
	return m
}

// storeValue writes the value of x, converted to type t, into dst.
func (g *gen) storeValue(x syntax.Expr, dst mem, t *check.Type) {
	if t.InRegister() {
		op := g.scalar(x)
		size := 8
		if t.Kind == check.Int {
			size = t.Size
		}
		if op.kind == opImm && fitsImm(op.imm) {
			g.storeImm(dst.base, dst.off, op.imm, sizeOf(size))
		} else {
			g.emit(asm.StoreMem(dst.base, dst.off, g.reg(op, asm.R0), sizeOf(size)))
		}
		g.free(op)
		return
	}
	g.memInto(x, dst, t)
}

// startOf is where x starts, as the run-time messages about it locate
// it: bpftrace 0.26.1 drops the parentheses that lead an expression
// (((struct foo *)0).a starts at the cast), 0.17 keeps them.
func (g *gen) startOf(x syntax.Expr) syntax.Pos {
	if g.c.prog.Compat == compat.V017 {
		return x.Pos()
	}
	for {
		switch e := x.(type) {
		case *syntax.ParenExpr:
			x = e.X
		case *syntax.FieldExpr:
			x = e.X
		default:
			return x.Pos()
		}
	}
}

// memInto writes the value of memory-class x into dst as type t
// (dst.size == t.Size), converting strings and tuples as needed.
func (g *gen) memInto(x syntax.Expr, dst mem, t *check.Type) {
	saved, savedEnd := g.cur, g.curEnd
	g.cur, g.curEnd = g.startOf(x), x.End()
	defer func() { g.cur, g.curEnd = saved, savedEnd }()
	if v, ok := g.p.Consts[x]; ok && v.IsStr {
		g.storeBytes(dst, v.Str)
		return
	}
	if e, ok := g.p.Expand[x]; ok {
		g.memInto(e, dst, t)
		return
	}
	xt := g.typeOf(x)
	switch x := x.(type) {
	case *syntax.ParenExpr:
		g.memInto(x.X, dst, t)
		return
	case *syntax.VarExpr:
		g.convertMem(dst, t, g.vars[x.Name], xt)
		return
	case *syntax.Ident:
		if f := builtinVars[x.Name].mem; f != nil {
			f(g, x, dst)
			return
		}
		if f := builtinVars[x.Name].place; f != nil {
			// args as a whole: the record its fields are read from.
			g.readMem(f(g, x), xt, nil, dst)
			return
		}
	case *syntax.MapExpr:
		g.mapReadMem(x, dst, t)
		return
	case *syntax.CallExpr:
		g.callMem(x, dst, t)
		return
	case *syntax.TupleExpr:
		if hasPadding(t) {
			g.zero(dst)
		}
		// A record's fields are evaluated as written and stored where
		// t, which may order them otherwise, has them.
		for i, e := range x.Elems {
			j := i
			if x.Names != nil {
				j = t.ElemIndex(x.Names[i].Name)
			}
			et := t.Elems[j]
			g.storeValue(e, dst.at(t.Offsets[j], et.Size), et)
		}
		return
	case *syntax.BlockExpr:
		g.blockStmts(x)
		g.memInto(x.Value, dst, t)
		return
	case *syntax.ComptimeExpr:
		g.memInto(x.X, dst, t)
		return
	case *syntax.CastExpr:
		if xt.Kind == check.Array {
			g.castToArray(x, dst)
			return
		}
	case *syntax.CondExpr:
		if x.X == nil {
			break // c ?: y is an integer, generated below
		}
		els, done := g.newLabel("else"), g.newLabel("fi")
		c := g.scalar(x.Cond)
		r := g.reg(c, asm.R0)
		g.free(c)
		g.emit(asm.JEq.Imm(r, 0, els))
		g.branchInto(x.X, dst, t)
		g.emit(asm.Ja.Label(done))
		g.place(els)
		g.branchInto(x.Y, dst, t)
		g.place(done)
		return
	case *syntax.FieldExpr, *syntax.IndexExpr, *syntax.UnaryExpr:
		pl := g.placeOf(x)
		g.readMem(pl, xt, g.fieldOf(x), dst)
		return
	}
	if xt.InRegister() {
		g.storeValue(x, dst, t)
		return
	}
	g.c.errorf(x, "cannot generate code for %s", syntax.String(x))
}

// branchInto writes a branch of ?: into dst, of the whole expression's
// type t. A smaller buffer fills the front of a larger one, whose last
// byte then says how many bytes the branch holds.
func (g *gen) branchInto(x syntax.Expr, dst mem, t *check.Type) {
	bt := g.typeOf(x)
	if t.Kind != check.Buffer || bt.Size == t.Size {
		g.memInto(x, dst, t)
		return
	}
	g.zero(dst)
	g.memInto(x, dst.at(0, bt.Size), bt)
	n := dst.off + int16(bt.Size-1)
	g.emit(asm.LoadMem(asm.R0, dst.base, n, asm.Byte),
		asm.StoreImm(dst.base, n, 0, asm.Byte),
		asm.StoreMem(dst.base, dst.off+int16(t.Size-1), asm.R0, asm.Byte))
}

// convertMem copies a value of type st at src into dst as type dt.
func (g *gen) convertMem(dst mem, dt *check.Type, src mem, st *check.Type) {
	switch {
	case st.Equal(dt) || dt.Kind == check.Str:
		g.copyMem(dst, src)
	case dt.Kind == check.Tuple:
		if hasPadding(dt) {
			g.zero(dst)
		}
		for i := range dt.Elems {
			j := i
			if dt.Names != nil {
				j = st.ElemIndex(dt.Names[i])
			}
			de, se := dt.Elems[i], st.Elems[j]
			g.convertMem(dst.at(dt.Offsets[i], de.Size), de, src.at(st.Offsets[j], se.Size), se)
		}
	case dt.Kind == check.Int:
		g.loadInt(asm.R0, src.base, src.off, st)
		g.emit(asm.StoreMem(dst.base, dst.off, asm.R0, sizeOf(dt.Size)))
	default:
		g.copyMem(dst, src)
	}
}

// hasPadding reports whether a tuple has bytes no element covers, which
// must be zeroed so equal keys compare equal.
func hasPadding(t *check.Type) bool {
	if t.Kind != check.Tuple {
		return false
	}
	n := 0
	for _, e := range t.Elems {
		n += e.Size
		if hasPadding(e) {
			return true
		}
	}
	return n != t.Size
}

// storeBytes writes s into dst, NUL-padded to dst.size and cut to keep
// a terminating NUL.
func (g *gen) storeBytes(dst mem, s string) {
	b := make([]byte, dst.size)
	copy(b, s)
	if len(s) >= dst.size && dst.size > 0 {
		b[dst.size-1] = 0
	}
	g.storeRaw(dst, b)
}

// storeRaw writes b, of dst.size bytes, into dst.
func (g *gen) storeRaw(dst mem, b []byte) {
	off := 0
	for off < len(b) {
		switch {
		case len(b)-off >= 4 && (int(dst.off)+off)%4 == 0:
			v := int32(uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24)
			g.emit(asm.StoreImm(dst.base, dst.off+int16(off), int64(v), asm.Word))
			off += 4
		default:
			g.emit(asm.StoreImm(dst.base, dst.off+int16(off), int64(b[off]), asm.Byte))
			off++
		}
	}
}
