package syntax

import (
	"math"
	"strconv"
	"strings"
)

// bpftrace 0.26.1's declarations: a config block and map declarations
// at the top of a program, let statements in probes.

// A ConfigItem is one key = value of a config block; Value is an
// *IntLit, a *StringLit or an *Ident (true, false, or a bare word such
// as warn).
type ConfigItem struct {
	KeyPos Pos
	Key    string
	Value  Expr
}

func (c *ConfigItem) Pos() Pos { return c.KeyPos }
func (c *ConfigItem) End() Pos { return c.Value.End() }

// A MapDecl is let @name = KIND(SIZE); at the top level: the kernel map
// kind (hash, lruhash, percpuhash, percpulruhash, percpuarray) and its
// number of entries.
type MapDecl struct {
	Let  Pos
	Map  *MapExpr
	Kind *Ident
	Size Expr
	// Rparen closes the kind's argument list.
	Rparen Pos
}

func (d *MapDecl) Pos() Pos { return d.Let }
func (d *MapDecl) End() Pos { return d.Rparen + 1 }

// A LetStmt declares a scratch variable in the enclosing block: let $x;
// let $x = e; let $x: TYPE; let $x: TYPE = e. Type and Rhs may be nil.
type LetStmt struct {
	Let  Pos
	Var  *VarExpr
	Type *TypeExpr
	Rhs  Expr
}

func (s *LetStmt) Pos() Pos { return s.Let }
func (s *LetStmt) End() Pos {
	switch {
	case s.Rhs != nil:
		return s.Rhs.End()
	case s.Type != nil:
		return s.Type.End()
	}
	return s.Var.End()
}
func (*LetStmt) stmtNode() {}

// topKeyword reports which declaration, if any, an attach-point token
// at the top level begins: "config" or "let".
func topKeyword(lit string) string {
	switch {
	case lit == "let":
		return "let"
	case lit == "config" || strings.HasPrefix(lit, "config="):
		return "config"
	}
	return ""
}

// parseTopDecl parses a config block or a map declaration into prog. It
// is entered at the keyword read as an attach point, and leaves the
// scanner in attach-point mode at what follows.
func (p *parser) parseTopDecl(prog *Program, kw string) {
	p.s.off = p.file.Offset(p.pos)
	p.next()
	if kw == "config" {
		if prog.Config != nil || len(prog.MapDecls) > 0 || len(prog.Probes) > 0 {
			p.error(p.pos, p.end, "config must appear before probes and map declarations, once")
		}
		prog.Config = p.parseConfig()
		return
	}
	if d := p.parseMapDecl(); d != nil {
		prog.MapDecls = append(prog.MapDecls, d)
	}
}

// parseConfig parses config = { key = value; … }.
func (p *parser) parseConfig() []*ConfigItem {
	p.next()
	p.expect(ASSIGN)
	p.expect(LBRACE)
	items := []*ConfigItem{}
	for p.tok != RBRACE && p.tok != EOF {
		if p.tok != IDENT {
			p.errorExpected("a configuration key")
			p.skipBalanced(false)
			break
		}
		it := &ConfigItem{KeyPos: p.pos, Key: p.lit}
		p.next()
		p.expect(ASSIGN)
		switch p.tok {
		case INT, STRING, IDENT:
			it.Value = p.parseOperand()
		default:
			p.errorExpected("a number, a string or a word")
			p.skipBalanced(false)
			return items
		}
		items = append(items, it)
		if p.tok != SEMICOLON {
			break
		}
		p.next()
	}
	if p.tok != RBRACE {
		p.errorExpected("';' or '}' in config block")
		p.skipBalanced(false)
	}
	p.specs = true
	p.next()
	return items
}

// parseMapDecl parses let @name = kind(size); at the top level.
func (p *parser) parseMapDecl() *MapDecl {
	d := &MapDecl{Let: p.pos}
	p.next()
	if p.tok != MAP {
		p.errorExpected("a map such as @name: only maps are declared outside probes")
		p.skipTop()
		return nil
	}
	d.Map = &MapExpr{NamePos: p.pos, Name: p.lit}
	p.next()
	p.expect(ASSIGN)
	if p.tok != IDENT {
		p.errorExpected("a map kind such as hash(1024)")
		p.skipTop()
		return nil
	}
	d.Kind = &Ident{NamePos: p.pos, Name: p.lit}
	p.next()
	p.expect(LPAREN)
	d.Size = p.parseExpr()
	d.Rparen = p.expect(RPAREN)
	if p.tok != SEMICOLON {
		p.errorExpected("';' after the map declaration")
		p.skipTop()
		return d
	}
	p.specs = true
	p.next()
	return d
}

// skipTop skips a broken top-level declaration to its ';'.
func (p *parser) skipTop() {
	p.skipBalanced(true)
	p.specs = true
	p.next()
}

// parseLet parses a let statement, entered at the word let.
func (p *parser) parseLet() Stmt {
	s := &LetStmt{Let: p.pos}
	p.next()
	s.Var = &VarExpr{NamePos: p.pos, Name: p.lit}
	p.next()
	if p.tok == COLON {
		p.next()
		s.Type = p.parseType()
	}
	if p.tok == ASSIGN {
		p.next()
		s.Rhs = p.parseExpr()
	}
	return s
}

// parseBareCond parses the condition of if, while, unroll and for
// written without parentheses, which bpftrace 0.26.1 allows for a unary
// or postfix expression only.
func (p *parser) parseBareCond() Expr {
	x := p.parseUnary()
	if p.tok == RPAREN {
		p.error(x.Pos(), x.End(), "expected '(' before the condition, found %s", String(x))
		p.next()
		return x
	}
	if p.tok.precedence() > 0 || p.tok == QUESTION {
		p.error(x.Pos(), p.end, "a condition without parentheses must be a single term such as $x, !$x or @m[1]: put the whole condition in ( )")
		for p.tok != LBRACE && p.tok != EOF && p.tok != SEMICOLON && p.tok != RBRACE {
			p.next()
		}
	}
	return x
}

// durationUnits are the suffixes of bpftrace 0.26.1's durations, in
// nanoseconds; a longer suffix comes before its own last letter.
var durationUnits = []struct {
	suffix string
	ns     uint64
}{{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}}

// durationSuffix returns the unit a duration such as 100ms ends in after
// its digits, or "".
func durationSuffix(s string) string {
	for _, u := range durationUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok && n != "" && isDigit(n[len(n)-1]) {
			return u.suffix
		}
	}
	return ""
}

// ParseDuration reads a whole decimal number with an optional unit (ns,
// us, ms, s, m, h, d) as nanoseconds: 100ms, 1s, 5000. bpftrace 0.26.1
// writes durations so in literals and in interval and profile probes.
// The error is a *strconv.NumError.
func ParseDuration(s string) (uint64, error) {
	num, mult := s, uint64(1)
	if suf := durationSuffix(s); suf != "" {
		for _, u := range durationUnits {
			if u.suffix == suf {
				num, mult = strings.TrimSuffix(s, suf), u.ns
			}
		}
	}
	n, err := strconv.ParseUint(strings.ReplaceAll(num, "_", ""), 10, 64)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint64/mult {
		return 0, &strconv.NumError{Func: "ParseDuration", Num: s, Err: strconv.ErrRange}
	}
	return n * mult, nil
}
