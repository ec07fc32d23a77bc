package check

import (
	"slices"

	"kinst.dev/kinst/syntax"
)

// blockExpr checks { stmts; value } in a scope of its own: its type is
// its value's.
func (c *checker) blockExpr(x *syntax.BlockExpr) (t *Type) {
	c.inBlock(x, func() {
		if x.Value == nil {
			return
		}
		t = c.expr(x.Value)
		if t != nil && !storable(t) {
			c.errorf(x.Value, "a block's value cannot be a %s", t)
			t = nil
		}
	})
	return t
}

// inBlock checks the statements of x in a scope of their own, then
// calls value in that scope.
func (c *checker) inBlock(x *syntax.BlockExpr, value func()) {
	c.pushScope()
	defer c.popScope()
	// A loop around the block is not the block's to leave.
	inLoop := c.inLoop
	c.inLoop = 0
	defer func() { c.inLoop = inLoop }()
	for _, s := range x.Stmts {
		c.stmt(s)
	}
	value()
}

// AggregateBlock returns the aggregation call that ends block x, as in
// @m = { $v = 1; avg($v) }, or nil.
func AggregateBlock(x syntax.Expr) (*syntax.BlockExpr, *syntax.CallExpr) {
	b, ok := x.(*syntax.BlockExpr)
	if !ok {
		return nil, nil
	}
	if call, ok := b.Value.(*syntax.CallExpr); ok && aggregations[call.Fun.Name] {
		return b, call
	}
	return nil, nil
}

// comptimeIf checks the condition of an if whose condition is comptime
// and returns the branch it takes, nil for none, with ok set; the other
// branch is neither checked nor compiled, as in bpftrace 0.26.1.
func (c *checker) comptimeIf(s *syntax.IfStmt) (taken syntax.Stmt, ok bool) {
	if _, ok := syntax.Unparen(s.Cond).(*syntax.ComptimeExpr); !ok {
		return nil, false
	}
	if c.expr(s.Cond) == nil {
		return nil, true
	}
	return c.probe.ComptimeBranch(s)
}

// ComptimeBranch is the branch an if with a comptime condition takes,
// nil for none, with ok set; ok is false for an ordinary if.
func (p *Probe) ComptimeBranch(s *syntax.IfStmt) (taken syntax.Stmt, ok bool) {
	if _, ok := syntax.Unparen(s.Cond).(*syntax.ComptimeExpr); !ok {
		return nil, false
	}
	v, known := p.Consts[s.Cond]
	if !known {
		return nil, true
	}
	if v.IsStr && v.Str != "" || !v.IsStr && v.Int != 0 {
		return s.Then, true
	}
	return s.Else, true
}

// addressOf checks &x: the address of a scratch variable, which lives
// in BPF memory as long as the probe runs, or &@m, the kernel's map
// itself, an untyped pointer.
func (c *checker) addressOf(x *syntax.UnaryExpr) *Type {
	if m, ok := syntax.Unparen(x.X).(*syntax.MapExpr); ok && m.Keys == nil {
		switch {
		case c.prog.mapIndex[m.Name] != nil:
			return &Type{Kind: Ptr, Size: 8, Space: KernelSpace}
		case c.assigned[m.Name]:
			c.pending = true
		default:
			c.errorf(m, "map @%s is read but never assigned", m.Name)
		}
		return nil
	}
	v, ok := syntax.Unparen(x.X).(*syntax.VarExpr)
	if !ok {
		c.errorf(x, "& takes the address of a variable or a map, as in &$x or &@m")
		return nil
	}
	t := c.expr(v)
	if t == nil {
		return nil
	}
	return &Type{Kind: Ptr, Size: 8, Elem: t, Space: KernelSpace}
}

// typeOf gives the type typeof(x) means: x's, or the type x names when
// it is a bare name such as size_t that no builtin has.
func (c *checker) typeOf(x syntax.Expr) *Type {
	if id, ok := x.(*syntax.Ident); ok && !isBuiltinVar(id.Name) {
		if t := intTypeNames[id.Name]; t != nil {
			return t
		}
		if t := c.namedType(syntax.IDENT, id.Name, nil); t != nil {
			return t
		}
	}
	return c.expr(x)
}

// isBuiltinVar reports whether name is a builtin variable such as pid
// or arg0, which a type of the same name (the kernel's struct pid) does
// not hide.
func isBuiltinVar(name string) bool {
	_, arg := argIndex(name)
	_, sarg := stackArgIndex(name)
	return arg || sarg || slices.Contains(builtinNames, name)
}

// arrayCast checks a cast between an integer array and an integer, a
// string or an array of the same size, as bpftrace 0.26.1 has them.
func (c *checker) arrayCast(x *syntax.CastExpr, t, xt *Type) *Type {
	intArray := func(a *Type) bool { return a.Kind == Array && a.Elem.Kind == Int }
	ok := intArray(t) && (xt.Kind == Int || xt.Kind == Str || intArray(xt)) ||
		t.Kind == Int && intArray(xt)
	if !ok {
		c.errorf(x, "cannot cast %s to %s: only integers and integer arrays cast to each other", xt, t)
		return nil
	}
	// A literal is as wide as the array it fills, up to 64 bits.
	literal := xt.Kind == Int && isLiteral(x.X) && xt.Size < t.Size && t.Size <= 8
	if t.Size != xt.Size && !literal {
		c.errorf(x, "cannot cast %s to %s: their sizes differ (%d and %d bytes)", xt, t, xt.Size, t.Size)
		return nil
	}
	return t
}
