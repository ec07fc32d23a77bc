package syntax

// RewriteExprs replaces every expression x of prog's predicates and
// probe bodies with f(x), children before their parents.
func RewriteExprs(prog *Program, f func(Expr) Expr) {
	r := rewriter(f)
	for _, pr := range prog.Probes {
		pr.Pred = r.expr(pr.Pred)
		r.block(pr.Body)
	}
}

type rewriter func(Expr) Expr

func (r rewriter) block(b *Block) {
	for _, s := range b.Stmts {
		r.stmt(s)
	}
}

func (r rewriter) stmt(s Stmt) {
	switch s := s.(type) {
	case *ExprStmt:
		s.X = r.expr(s.X)
	case *DiscardStmt:
		s.X = r.expr(s.X)
	case *JumpStmt:
		s.X = r.expr(s.X)
	case *AssignStmt:
		s.Lhs, s.Rhs = r.expr(s.Lhs), r.expr(s.Rhs)
	case *LetStmt:
		s.Rhs = r.expr(s.Rhs)
	case *IfStmt:
		s.Cond = r.expr(s.Cond)
		r.block(s.Then)
		if s.Else != nil {
			r.stmt(s.Else)
		}
	case *UnrollStmt:
		s.Count = r.expr(s.Count)
		r.block(s.Body)
	case *WhileStmt:
		s.Cond = r.expr(s.Cond)
		r.block(s.Body)
	case *ForStmt:
		s.From, s.To = r.expr(s.From), r.expr(s.To)
		r.block(s.Body)
	case *Block:
		r.block(s)
	}
}

func (r rewriter) exprs(xs []Expr) {
	for i, x := range xs {
		xs[i] = r.expr(x)
	}
}

func (r rewriter) expr(x Expr) Expr {
	switch x := x.(type) {
	case nil:
		return nil
	case *MapExpr:
		r.exprs(x.Keys)
	case *CallExpr:
		r.exprs(x.Args)
	case *UnaryExpr:
		x.X = r.expr(x.X)
	case *IncDecExpr:
		x.X = r.expr(x.X)
	case *BinaryExpr:
		x.X, x.Y = r.expr(x.X), r.expr(x.Y)
	case *CondExpr:
		x.Cond, x.X, x.Y = r.expr(x.Cond), r.expr(x.X), r.expr(x.Y)
	case *CastExpr:
		x.X = r.expr(x.X)
	case *FieldExpr:
		x.X = r.expr(x.X)
	case *IndexExpr:
		x.X, x.Index = r.expr(x.X), r.expr(x.Index)
	case *TupleExpr:
		r.exprs(x.Elems)
	case *ParenExpr:
		x.X = r.expr(x.X)
	case *BlockExpr:
		for _, s := range x.Stmts {
			r.stmt(s)
		}
		x.Value = r.expr(x.Value)
	case *ComptimeExpr:
		x.X = r.expr(x.X)
	case *SizeofExpr:
		x.X = r.expr(x.X)
	}
	return r(x)
}
