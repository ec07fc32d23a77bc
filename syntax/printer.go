package syntax

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Fprint writes n as source text in kinst's canonical layout: one probe
// after another, a tab per nesting level, a semicolon after every simple
// statement. Parsing the output gives the same tree.
func Fprint(w io.Writer, n Node) error {
	var p printer
	p.node(n)
	_, err := io.WriteString(w, p.b.String())
	return err
}

// String returns n as source text.
func String(n Node) string {
	var p printer
	p.node(n)
	return p.b.String()
}

type printer struct {
	b      strings.Builder
	indent int
}

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

func (p *printer) newline() {
	p.b.WriteByte('\n')
	for i := 0; i < p.indent; i++ {
		p.b.WriteByte('\t')
	}
}

func (p *printer) node(n Node) {
	switch n := n.(type) {
	case *Program:
		for _, d := range n.Decls {
			p.decl(d)
			p.b.WriteString("\n\n")
		}
		if n.Config != nil {
			p.b.WriteString("config = {")
			for _, c := range n.Config {
				p.printf(" %s = ", c.Key)
				p.expr(c.Value, 0)
				p.b.WriteByte(';')
			}
			p.b.WriteString(" }\n\n")
		}
		for _, d := range n.MapDecls {
			p.printf("let @%s = %s(", d.Map.Name, d.Kind.Name)
			p.expr(d.Size, 0)
			p.b.WriteString(");\n\n")
		}
		for i, pr := range n.Probes {
			if i > 0 {
				p.b.WriteString("\n\n")
			}
			p.node(pr)
		}
		p.b.WriteByte('\n')
	case *Probe:
		for i, a := range n.Points {
			if i > 0 {
				p.b.WriteString(",")
				p.newline()
			}
			p.b.WriteString(a.Raw)
		}
		if n.Pred != nil {
			p.b.WriteString(" /")
			p.expr(n.Pred, 0)
			p.b.WriteString("/")
		}
		p.newline()
		p.block(n.Body)
	case *AttachPoint:
		p.b.WriteString(n.Raw)
	case *Decl:
		p.decl(n)
	case Stmt:
		p.stmt(n)
	case Expr:
		p.expr(n, 0)
	case *TypeExpr:
		p.typ(n)
	}
}

func (p *printer) block(b *Block) {
	p.stmts(b.Stmts, nil)
}

// stmts prints a braced list of statements and, for a block expression,
// its value.
func (p *printer) stmts(list []Stmt, value Expr) {
	p.b.WriteByte('{')
	p.indent++
	for _, s := range list {
		p.newline()
		p.stmt(s)
		if !isBlockStmt(s) {
			p.b.WriteByte(';')
		}
	}
	if value != nil {
		p.newline()
		p.expr(value, 0)
	}
	p.indent--
	p.newline()
	p.b.WriteByte('}')
}

func (p *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *ExprStmt:
		p.expr(s.X, 0)
	case *AssignStmt:
		p.expr(s.Lhs, 0)
		p.printf(" %s ", s.Op)
		p.expr(s.Rhs, 0)
	case *IfStmt:
		p.b.WriteString("if (")
		p.expr(s.Cond, 0)
		p.b.WriteString(") ")
		p.block(s.Then)
		if s.Else != nil {
			p.b.WriteString(" else ")
			p.stmt(s.Else)
		}
	case *UnrollStmt:
		p.b.WriteString("unroll (")
		p.expr(s.Count, 0)
		p.b.WriteString(") ")
		p.block(s.Body)
	case *WhileStmt:
		p.b.WriteString("while (")
		p.expr(s.Cond, 0)
		p.b.WriteString(") ")
		p.block(s.Body)
	case *ForStmt:
		p.printf("for ($%s : ", s.Var.Name)
		if s.Map != nil {
			p.expr(s.Map, 0)
		} else {
			p.expr(s.From, 0)
			p.b.WriteString("..")
			p.expr(s.To, 0)
		}
		p.b.WriteString(") ")
		p.block(s.Body)
	case *JumpStmt:
		p.b.WriteString(s.Tok.String())
		if s.X != nil {
			p.b.WriteByte(' ')
			p.expr(s.X, 0)
		}
	case *DiscardStmt:
		p.b.WriteString("_ = ")
		p.expr(s.X, 0)
	case *LetStmt:
		p.printf("let $%s", s.Var.Name)
		if s.Type != nil {
			p.b.WriteString(": ")
			p.typ(s.Type)
		}
		if s.Rhs != nil {
			p.b.WriteString(" = ")
			p.expr(s.Rhs, 0)
		}
	case *Block:
		p.block(s)
	}
}

// Precedences around the binary operators' 1..10.
const (
	precCond  = 0 // c ? x : y
	precUnary = 11
	precPost  = 12
)

func exprPrec(x Expr) int {
	switch x := x.(type) {
	case *CondExpr:
		if x.If.IsValid() {
			return precPost // an if, whose braces close it
		}
		return precCond
	case *BinaryExpr:
		return x.Op.precedence()
	case *UnaryExpr, *CastExpr, *ComptimeExpr:
		return precUnary
	case *IncDecExpr:
		if x.Prefix {
			return precUnary
		}
	}
	return precPost
}

// expr prints x, adding parentheses when its precedence is below min, so
// that trees built by hand print correctly too.
func (p *printer) expr(x Expr, min int) {
	if exprPrec(x) < min {
		p.b.WriteByte('(')
		defer p.b.WriteByte(')')
	}
	switch x := x.(type) {
	case *IntLit:
		p.b.WriteString(x.Raw)
	case *StringLit:
		p.b.WriteString(Quote(x.Value))
	case *Ident:
		p.b.WriteString(x.Name)
	case *VarExpr:
		p.printf("$%s", x.Name)
	case *ParamExpr:
		if x.Count {
			p.b.WriteString("$#")
		} else {
			p.printf("$%d", x.N)
		}
	case *MapExpr:
		p.printf("@%s", x.Name)
		if x.Keys != nil {
			p.b.WriteByte('[')
			p.list(x.Keys)
			p.b.WriteByte(']')
		}
	case *CallExpr:
		p.b.WriteString(x.Fun.Name)
		p.b.WriteByte('(')
		p.list(x.Args)
		p.b.WriteByte(')')
	case *UnaryExpr:
		p.b.WriteString(x.Op.String())
		// Keep "- -x" from printing as the decrement "--x".
		if inner, ok := x.X.(*UnaryExpr); ok && inner.Op == x.Op && (x.Op == SUB || x.Op == AND) {
			p.b.WriteByte(' ')
		}
		p.expr(x.X, precUnary)
	case *IncDecExpr:
		if x.Prefix {
			p.b.WriteString(x.Op.String())
			p.expr(x.X, precUnary)
		} else {
			p.expr(x.X, precPost)
			p.b.WriteString(x.Op.String())
		}
	case *BinaryExpr:
		prec := x.Op.precedence()
		p.expr(x.X, prec)
		p.printf(" %s ", x.Op)
		p.expr(x.Y, prec+1)
	case *CondExpr:
		if x.If.IsValid() {
			p.b.WriteString("if (")
			p.expr(x.Cond, 0)
			p.b.WriteString(") ")
			p.expr(x.X, 0)
			p.b.WriteString(" else ")
			p.expr(x.Y, 0)
			break
		}
		p.expr(x.Cond, 1)
		if x.X == nil {
			p.b.WriteString(" ?: ")
			p.expr(x.Y, precCond)
			break
		}
		p.b.WriteString(" ? ")
		p.expr(x.X, precCond)
		p.b.WriteString(" : ")
		p.expr(x.Y, precCond)
	case *CastExpr:
		p.b.WriteByte('(')
		p.typ(x.Type)
		p.b.WriteByte(')')
		p.expr(x.X, precUnary)
	case *FieldExpr:
		p.expr(x.X, precPost)
		if x.Arrow {
			p.b.WriteString("->")
		} else {
			p.b.WriteByte('.')
		}
		p.b.WriteString(x.Name)
	case *IndexExpr:
		p.expr(x.X, precPost)
		p.b.WriteByte('[')
		p.expr(x.Index, 0)
		p.b.WriteByte(']')
	case *TupleExpr:
		p.b.WriteByte('(')
		if x.Names == nil {
			p.list(x.Elems)
		}
		for i, n := range x.Names {
			if i > 0 {
				p.b.WriteString(", ")
			}
			p.b.WriteString(n.Name + " = ")
			p.expr(x.Elems[i], precCond)
		}
		p.b.WriteByte(')')
	case *BlockExpr:
		p.stmts(x.Stmts, x.Value)
	case *ComptimeExpr:
		p.b.WriteString("comptime ")
		p.expr(x.X, precUnary)
	case *ParenExpr:
		p.b.WriteByte('(')
		p.expr(x.X, 0)
		p.b.WriteByte(')')
	case *SizeofExpr:
		p.b.WriteString("sizeof(")
		if x.Type != nil {
			p.typ(x.Type)
		} else {
			p.expr(x.X, 0)
		}
		p.b.WriteByte(')')
	case *OffsetofExpr:
		p.b.WriteString("offsetof(")
		p.typ(x.Type)
		p.printf(", %s)", x.Field)
	case *BadExpr:
		p.b.WriteString("<bad expression>")
	}
}

func (p *printer) list(xs []Expr) {
	for i, x := range xs {
		if i > 0 {
			p.b.WriteString(", ")
		}
		p.expr(x, precCond)
	}
}

func (p *printer) typ(t *TypeExpr) {
	if t.Kind != IDENT {
		p.printf("%s ", t.Kind)
	}
	p.b.WriteString(t.Name)
	switch of := t.Of.(type) {
	case *TypeExpr:
		p.b.WriteByte('(')
		p.typ(of)
		p.b.WriteByte(')')
	case Expr:
		p.b.WriteByte('(')
		p.expr(of, 0)
		p.b.WriteByte(')')
	}
	if t.Ptr > 0 {
		p.b.WriteByte(' ')
		p.b.WriteString(strings.Repeat("*", t.Ptr))
	}
	switch {
	case t.Len > 0:
		p.printf("[%d]", t.Len)
	case t.Len < 0:
		p.b.WriteString("[]")
	}
}

// Quote returns s as a double-quoted literal with C escapes.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				b.WriteString(`\x`)
				b.WriteString(strconv.FormatUint(uint64(c)|0x100, 16)[1:])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Dump writes the tree under n, one node per line, indented by depth:
// what "kinst --dump ast" shows.
func Dump(w io.Writer, n Node) error {
	var b strings.Builder
	depth := 0
	Inspect(n, func(n Node) bool {
		if n == nil {
			depth--
			return false
		}
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(describeNode(n))
		b.WriteByte('\n')
		depth++
		return true
	})
	_, err := io.WriteString(w, b.String())
	return err
}

func describeNode(n Node) string {
	switch n := n.(type) {
	case *Program:
		return "program"
	case *Decl:
		var p printer
		p.ctype(&CType{Kind: n.Type.Kind, Name: n.Type.Name})
		if n.Typedef {
			return "typedef " + p.b.String()
		}
		return "declaration " + p.b.String()
	case *Probe:
		return "probe"
	case *AttachPoint:
		return fmt.Sprintf("attach %s %q", n.Provider, n.Parts)
	case *Block:
		return "block"
	case *ExprStmt:
		return "expression statement"
	case *AssignStmt:
		return "assign " + n.Op.String()
	case *IfStmt:
		return "if"
	case *UnrollStmt:
		return "unroll"
	case *WhileStmt:
		return "while"
	case *ForStmt:
		return "for $" + n.Var.Name
	case *JumpStmt:
		return n.Tok.String()
	case *ConfigItem:
		return "config " + n.Key
	case *MapDecl:
		return "declare map @" + n.Map.Name + " " + n.Kind.Name
	case *LetStmt:
		return "let $" + n.Var.Name
	case *IntLit:
		return "int " + n.Raw
	case *StringLit:
		return "string " + Quote(n.Value)
	case *Ident:
		return "builtin " + n.Name
	case *VarExpr:
		return "variable $" + n.Name
	case *ParamExpr:
		if n.Count {
			return "param $#"
		}
		return fmt.Sprintf("param $%d", n.N)
	case *MapExpr:
		return "map @" + n.Name
	case *CallExpr:
		return "call " + n.Fun.Name
	case *UnaryExpr:
		return "unary " + n.Op.String()
	case *IncDecExpr:
		if n.Prefix {
			return "prefix " + n.Op.String()
		}
		return "postfix " + n.Op.String()
	case *BinaryExpr:
		return "binary " + n.Op.String()
	case *CondExpr:
		if n.If.IsValid() {
			return "if expression"
		}
		return "conditional"
	case *CastExpr:
		return "cast"
	case *FieldExpr:
		if n.Arrow {
			return "field ->" + n.Name
		}
		return "field ." + n.Name
	case *IndexExpr:
		return "index"
	case *TupleExpr:
		if n.Names != nil {
			return "record"
		}
		return "tuple"
	case *ParenExpr:
		return "paren"
	case *BlockExpr:
		return "block expression"
	case *ComptimeExpr:
		return "comptime"
	case *DiscardStmt:
		return "discard"
	case *SizeofExpr:
		return "sizeof"
	case *OffsetofExpr:
		return "offsetof " + n.Field
	case *TypeExpr:
		var p printer
		p.typ(n)
		return "type " + p.b.String()
	case *BadExpr:
		return "bad expression"
	}
	return fmt.Sprintf("%T", n)
}
