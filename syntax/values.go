package syntax

// bpftrace 0.26's value syntax: block expressions, the discard
// statement _ = e and comptime.

// A BlockExpr is { stmts; value }, a block whose last statement is an
// expression no ';' ends: that expression is its value.
type BlockExpr struct {
	Lbrace Pos
	Stmts  []Stmt
	Value  Expr
	Rbrace Pos
}

func (x *BlockExpr) Pos() Pos { return x.Lbrace }
func (x *BlockExpr) End() Pos { return x.Rbrace + 1 }
func (*BlockExpr) exprNode()  {}

// A ComptimeExpr is comptime x: x, which must be known when the program
// is compiled. An if whose condition is one compiles only the branch it
// takes.
type ComptimeExpr struct {
	Comptime Pos
	X        Expr
}

func (x *ComptimeExpr) Pos() Pos { return x.Comptime }
func (x *ComptimeExpr) End() Pos { return x.X.End() }
func (*ComptimeExpr) exprNode()  {}

// A DiscardStmt is _ = x: x evaluated for its effects, its value
// dropped on purpose.
type DiscardStmt struct {
	Under Pos
	X     Expr
}

func (s *DiscardStmt) Pos() Pos { return s.Under }
func (s *DiscardStmt) End() Pos { return s.X.End() }
func (*DiscardStmt) stmtNode()  {}

// parseBlockExpr parses { stmts; value } where an expression is due.
func (p *parser) parseBlockExpr() Expr {
	x := p.blockValue(p.parseBlock())
	p.next()
	return x
}

// blockValue makes parsed block b a value: its value is its last
// statement, an expression without ';', a block with a value, or an if
// with an else whose blocks have values, as in bpftrace 0.26.
func (p *parser) blockValue(b *Block) *BlockExpr {
	x := &BlockExpr{Lbrace: b.Lbrace, Stmts: b.Stmts, Rbrace: b.Rbrace}
	if n := len(b.Stmts); n > 0 {
		switch s := b.Stmts[n-1].(type) {
		case *ExprStmt:
			if !p.semicolonAfter(s) {
				x.Value = s.X
			}
		case *Block:
			x.Value = p.blockValue(s)
		case *IfStmt:
			if s.Else != nil {
				x.Value = p.ifValue(s)
			}
		}
		if x.Value != nil {
			x.Stmts = b.Stmts[:n-1]
		}
	}
	if x.Value == nil {
		p.error(x.Pos(), x.End(), "a block used as a value must end in an expression without ';'")
	}
	return x
}

// parseIfExpr parses if (c) { x } else { y } where an expression is
// due, as bpftrace 0.26 allows: the checker refuses it in the 0.17 mode.
func (p *parser) parseIfExpr() Expr { return p.ifValue(p.parseIf().(*IfStmt)) }

// ifValue turns if statement s into the value of its branches, which
// an else must complete.
func (p *parser) ifValue(s *IfStmt) *CondExpr {
	x := &CondExpr{If: s.If, Cond: s.Cond, X: p.blockValue(s.Then)}
	switch e := s.Else.(type) {
	case *Block:
		x.Y = p.blockValue(e)
	case *IfStmt:
		x.Y = p.ifValue(e)
	default:
		p.error(s.Pos(), s.End(), "an if used as a value must have an else")
		x.Y = &BadExpr{From: s.End(), To: s.End()}
	}
	return x
}

// comptimeFollows reports whether the identifier comptime at the current
// token begins a comptime expression: an operand follows it.
func (p *parser) comptimeFollows() bool {
	if p.tok != IDENT || p.lit != "comptime" {
		return false
	}
	switch p.peek() {
	case INT, STRING, VAR, MAP, PARAM, NPARAMS, IDENT, LPAREN, LBRACE, NOT, SUB, TILDE, SIZEOF, OFFSETOF:
		return true
	}
	return false
}

// isTypeof reports whether the current token begins typeof(…).
func (p *parser) isTypeof() bool {
	return p.tok == IDENT && p.lit == "typeof" && p.peek() == LPAREN
}

// parseTypeof parses typeof(type) or typeof(expr) into t, from the
// word typeof.
func (p *parser) parseTypeof(t *TypeExpr) {
	t.Name = p.lit
	p.next()
	p.expect(LPAREN)
	if p.isTypeStart() || p.tok == IDENT && p.starsThenParen() {
		t.Of = p.parseType()
	} else {
		t.Of = p.parseExpr()
	}
	t.EndPos = p.pos + 1
	p.expect(RPAREN)
}

// parseRecord parses (name = x, …) after its '('.
func (p *parser) parseRecord(lparen Pos) Expr {
	x := &TupleExpr{Lparen: lparen}
	for p.tok != RPAREN && p.tok != EOF {
		if p.tok != IDENT {
			p.errorExpected("a field name, as in (name = value)")
			break
		}
		name := &Ident{NamePos: p.pos, Name: p.lit}
		for _, n := range x.Names {
			if n.Name == name.Name {
				p.error(name.Pos(), name.End(), "record field %s is named twice", name.Name)
			}
		}
		p.next()
		p.expect(ASSIGN)
		x.Names = append(x.Names, name)
		x.Elems = append(x.Elems, p.parseExpr())
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	x.Rparen = p.expect(RPAREN)
	return x
}

// starsThenParen reports whether one or more '*' and a ')' are what the
// scanner reads next, as after the type name in typeof(size_t *).
func (p *parser) starsThenParen() bool {
	off, nerr := p.s.off, len(p.errs)
	defer func() { p.s.off = off; p.errs = p.errs[:nerr] }()
	n := 0
	for {
		tok, _, _, _ := p.s.scan()
		switch tok {
		case MUL:
			n++
		case RPAREN:
			return n > 0
		default:
			return false
		}
	}
}
