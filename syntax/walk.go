package syntax

// Inspect traverses the tree rooted at n in depth-first order, calling f
// for each node before its children. If f returns false, Inspect skips
// the node's children. After the children, f is called with nil.
func Inspect(n Node, f func(Node) bool) {
	if n == nil || !f(n) {
		return
	}
	for _, c := range children(n) {
		Inspect(c, f)
	}
	f(nil)
}

// children lists a node's direct children in source order.
func children(n Node) []Node {
	var out []Node
	add := func(ns ...Node) {
		for _, c := range ns {
			if c != nil && !isNilNode(c) {
				out = append(out, c)
			}
		}
	}
	exprs := func(xs []Expr) {
		for _, x := range xs {
			add(x)
		}
	}
	switch n := n.(type) {
	case *Program:
		for _, d := range n.Decls {
			add(d)
		}
		for _, c := range n.Config {
			add(c)
		}
		for _, d := range n.MapDecls {
			add(d)
		}
		for _, p := range n.Probes {
			add(p)
		}
	case *Probe:
		for _, a := range n.Points {
			add(a)
		}
		if n.Pred != nil {
			add(n.Pred)
		}
		add(n.Body)
	case *Block:
		for _, s := range n.Stmts {
			add(s)
		}
	case *ExprStmt:
		add(n.X)
	case *DiscardStmt:
		add(n.X)
	case *JumpStmt:
		add(n.X)
	case *BlockExpr:
		for _, s := range n.Stmts {
			add(s)
		}
		add(n.Value)
	case *ComptimeExpr:
		add(n.X)
	case *AssignStmt:
		add(n.Lhs, n.Rhs)
	case *ConfigItem:
		add(n.Value)
	case *MapDecl:
		add(n.Map, n.Kind, n.Size)
	case *LetStmt:
		add(n.Var)
		if n.Type != nil {
			add(n.Type)
		}
		if n.Rhs != nil {
			add(n.Rhs)
		}
	case *IfStmt:
		add(n.Cond, n.Then)
		if n.Else != nil {
			add(n.Else)
		}
	case *UnrollStmt:
		add(n.Count, n.Body)
	case *WhileStmt:
		add(n.Cond, n.Body)
	case *ForStmt:
		add(n.Var)
		if n.Map != nil {
			add(n.Map)
		} else {
			add(n.From, n.To)
		}
		add(n.Body)
	case *MapExpr:
		exprs(n.Keys)
	case *CallExpr:
		exprs(n.Args)
	case *UnaryExpr:
		add(n.X)
	case *IncDecExpr:
		add(n.X)
	case *BinaryExpr:
		add(n.X, n.Y)
	case *CondExpr:
		add(n.Cond, n.X, n.Y)
	case *CastExpr:
		add(n.Type, n.X)
	case *FieldExpr:
		add(n.X)
	case *IndexExpr:
		add(n.X, n.Index)
	case *TupleExpr:
		for i, x := range n.Elems {
			if n.Names != nil {
				add(n.Names[i])
			}
			add(x)
		}
	case *ParenExpr:
		add(n.X)
	case *SizeofExpr:
		if n.Type != nil {
			add(n.Type)
		} else {
			add(n.X)
		}
	case *OffsetofExpr:
		add(n.Type)
	case *TypeExpr:
		add(n.Of)
	}
	return out
}

// isNilNode catches typed nil pointers stored in interfaces.
func isNilNode(n Node) bool {
	switch n := n.(type) {
	case *Block:
		return n == nil
	case *TypeExpr:
		return n == nil
	}
	return false
}
