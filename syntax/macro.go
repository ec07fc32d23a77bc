package syntax

// A Macro is a definition of bpftrace 0.26:
//
//	macro NAME(params) { stmts; [expr] }
//
// A parameter is a variable ($x: the caller's variable, which the body
// may assign), a map (@m) or a bare name standing for an expression the
// caller gives. Expand substitutes each call with the body.
type Macro struct {
	MacroPos Pos
	Name     string
	NamePos  Pos
	Params   []Expr // *VarExpr, *MapExpr (without keys) or *Ident
	Body     *Block // without Result
	Result   Expr   // the expression the body ends in, without a ';'; nil if none
}

func (m *Macro) Pos() Pos { return m.MacroPos }
func (m *Macro) End() Pos { return m.Body.End() }

// isMacroStart reports whether a top-level token is the word macro
// followed by a name: the scanner read it as an attach point.
func (p *parser) isMacroStart() bool {
	return p.tok == PROBESPEC && p.lit == "macro" && p.peek() == IDENT
}

// parseMacro parses a definition from the word macro on.
func (p *parser) parseMacro() *Macro {
	m := &Macro{MacroPos: p.pos}
	// Read the word again as an ordinary token, then the name.
	p.s.off = p.file.Offset(p.pos)
	p.next()
	p.next()
	m.Name, m.NamePos = p.lit, p.pos
	p.next()
	p.expect(LPAREN)
	for p.tok != RPAREN && p.tok != EOF {
		switch p.tok {
		case VAR:
			m.Params = append(m.Params, &VarExpr{NamePos: p.pos, Name: p.lit})
		case MAP:
			m.Params = append(m.Params, &MapExpr{NamePos: p.pos, Name: p.lit})
		case IDENT:
			m.Params = append(m.Params, &Ident{NamePos: p.pos, Name: p.lit})
		default:
			p.errorExpected("a macro parameter: $variable, @map or name")
			p.skipProbe()
			return nil
		}
		p.next()
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	p.expect(RPAREN)
	if p.tok != LBRACE {
		p.errorExpected("'{' to begin the macro's body")
		p.skipProbe()
		return nil
	}
	m.Body = p.parseBlock()
	// The body's value is its last statement when that is an expression
	// no ';' ends.
	if n := len(m.Body.Stmts); n > 0 {
		if s, ok := m.Body.Stmts[n-1].(*ExprStmt); ok && !p.semicolonAfter(s) {
			m.Result = s.X
			m.Body.Stmts = m.Body.Stmts[:n-1]
		}
	}
	p.specs = true
	p.next()
	return m
}

// semicolonAfter reports whether a ';' follows n.
func (p *parser) semicolonAfter(n Node) bool {
	off, nerr := p.s.off, len(p.errs)
	p.s.off = p.file.Offset(n.End())
	tok, _, _, _ := p.s.scan()
	p.s.off = off
	p.errs = p.errs[:nerr]
	return tok == SEMICOLON
}
