package codegen

import (
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/syntax"
)

// blockStmts generates the statements of a block expression, before its
// value.
func (g *gen) blockStmts(x *syntax.BlockExpr) {
	for _, s := range x.Stmts {
		g.stmt(s, nil)
	}
}

// addressOf generates &$x, where the variable lives, on the stack or in
// the scratch map; or &@m, the map.
func (g *gen) addressOf(x *syntax.UnaryExpr) operand {
	t := g.newTemp()
	r := g.work(t, asm.R0)
	switch x := syntax.Unparen(x.X).(type) {
	case *syntax.VarExpr:
		g.addr(r, g.vars[x.Name])
	case *syntax.MapExpr:
		g.mapPtr(r, g.mapOf(x).Spec)
	}
	g.set(t, r)
	return t
}

// arrayToInt generates (uintN)a for an integer array a of N bits: its
// bytes read as one integer, from an aligned copy.
func (g *gen) arrayToInt(x *syntax.CastExpr) operand {
	st := g.typeOf(x.X)
	a := g.alloc(st.Size, 8)
	g.memInto(x.X, a, st)
	t := g.newTemp()
	r := g.work(t, asm.R0)
	g.loadInt(r, a.base, a.off, g.typeOf(x))
	g.set(t, r)
	return t
}

// castToArray generates (T[N])v into dst: the bytes of v, an integer,
// a string or another array of dst's size.
func (g *gen) castToArray(x *syntax.CastExpr, dst mem) {
	st := g.typeOf(x.X)
	if !st.InRegister() {
		g.memInto(x.X, dst, st)
		return
	}
	// An integer is stored whole, which needs an aligned place.
	a := g.alloc(st.Size, 8)
	g.storeValue(x.X, a, st)
	g.copyMem(dst, a)
}
