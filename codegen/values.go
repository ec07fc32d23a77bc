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

// addressOf generates &$x: where the variable lives, on the stack or in
// the scratch map.
func (g *gen) addressOf(x *syntax.UnaryExpr) operand {
	v := g.vars[syntax.Unparen(x.X).(*syntax.VarExpr).Name]
	t := g.newTemp()
	r := g.work(t, asm.R0)
	g.addr(r, v)
	g.set(t, r)
	return t
}
