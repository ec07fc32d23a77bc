package syntax

import (
	"math"
	"strconv"
	"strings"
)

// maxErrors bounds how many errors one parse reports; past it the rest
// are usually echoes of the first.
const maxErrors = 10

// Parse parses a whole program. name is what messages call the source.
// The returned error, if any, is an ErrorList.
func Parse(name string, src []byte) (*Program, error) {
	return ParseFile(NewFile(name, src))
}

// ParseFile parses a whole program from f, which may be a preprocessor's
// output.
func ParseFile(f *File) (*Program, error) {
	var p parser
	p.init(f, true)
	prog := p.parseProgram()
	p.errs.Sort()
	if len(p.errs) > maxErrors {
		p.errs = p.errs[:maxErrors]
	}
	return prog, p.errs.Err()
}

// ParseExpr parses a lone expression, for tests and tools.
func ParseExpr(src string) (Expr, error) {
	f := NewFile("expr", []byte(src))
	var p parser
	p.init(f, false)
	x := p.parseExpr()
	if p.tok != EOF {
		p.errorExpected("end of expression")
	}
	return x, p.errs.Err()
}

type parser struct {
	file *File
	s    scanner
	errs ErrorList

	// current token
	tok   Token
	pos   Pos
	end   Pos
	lit   string
	specs bool // scan the next token as an attach point

	inPred bool // a "/" before "{" closes the predicate
	// typedefs names the program's typedefs declared so far, which
	// casts and sizeof take as type names, as a C parser does.
	typedefs map[string]bool
	bail     bool // too many errors: stop reporting
}

// bailout ends a parse that has reported too many errors.
type bailout struct{}

// init readies p; a program starts with an attach point, an expression
// does not.
func (p *parser) init(f *File, program bool) {
	p.file = f
	p.s.init(f, &p.errs)
	p.specs = program
	p.next()
}

func (p *parser) next() {
	var tok Token
	var start, end int
	var lit string
	if p.specs {
		tok, start, end, lit = p.s.scanProbeSpec()
		p.specs = false
	} else {
		tok, start, end, lit = p.s.scan()
	}
	p.tok, p.pos, p.end, p.lit = tok, p.file.Pos(start), p.file.Pos(end), lit
}

// peek returns the token after the current one without consuming it.
func (p *parser) peek() Token {
	off, nerr := p.s.off, len(p.errs)
	tok, _, _, _ := p.s.scan()
	p.s.off = off
	p.errs = p.errs[:nerr]
	return tok
}

// peek2 returns the two tokens after the current one.
func (p *parser) peek2() (Token, Token) {
	off, nerr := p.s.off, len(p.errs)
	t1, _, _, _ := p.s.scan()
	t2, _, _, _ := p.s.scan()
	p.s.off = off
	p.errs = p.errs[:nerr]
	return t1, t2
}

func (p *parser) error(pos, end Pos, format string, args ...any) {
	if p.bail {
		return
	}
	// One error per place: later ones there are consequences of the first.
	if n := len(p.errs); n > 0 && p.errs[n-1].Pos == pos {
		return
	}
	p.errs.Add(p.file, pos, end, format, args...)
	if len(p.errs) > maxErrors {
		p.bail = true
		panic(bailout{})
	}
}

func (p *parser) describe() string {
	switch p.tok {
	case IDENT, INT:
		return "'" + p.lit + "'"
	case STRING:
		return "string " + strconv.Quote(p.lit)
	case VAR:
		return "'$" + p.lit + "'"
	case MAP:
		return "'@" + p.lit + "'"
	case EOF:
		return "end of program"
	case PROBESPEC:
		return "'" + p.lit + "'"
	}
	return "'" + p.tok.String() + "'"
}

func (p *parser) errorExpected(what string) {
	p.error(p.pos, p.end, "expected %s, found %s", what, p.describe())
}

func (p *parser) expect(tok Token) Pos {
	pos := p.pos
	if p.tok != tok {
		p.errorExpected("'" + tok.String() + "'")
	} else {
		p.next()
	}
	return pos
}

func (p *parser) parseProgram() (prog *Program) {
	prog = &Program{File: p.file}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
		}
	}()
	if p.tok == EOF {
		p.error(p.pos, p.end, "program has no probes")
		return prog
	}
	defer func() {
		if len(prog.Probes) == 0 && len(p.errs) == 0 {
			p.error(p.pos, p.end, "program has no probes")
		}
	}()
	for p.tok != EOF {
		start := p.pos
		if p.isImportStart() {
			prog.Imports = append(prog.Imports, p.parseImport())
			continue
		}
		if p.isMacroStart() {
			if m := p.parseMacro(); m != nil {
				prog.Macros = append(prog.Macros, m)
			}
			continue
		}
		if kw := topKeyword(p.lit); p.tok == PROBESPEC && kw != "" {
			p.parseTopDecl(prog, kw)
			continue
		}
		if p.tok == PROBESPEC && p.isDeclStart() {
			// Read the keyword again as an ordinary token.
			p.s.off = p.file.Offset(p.pos)
			p.next()
			if d := p.parseDecl(); d != nil {
				prog.Decls = append(prog.Decls, d)
			}
			if p.pos == start && p.tok != EOF {
				p.skipProbe()
			}
			continue
		}
		if pr := p.parseProbe(); pr != nil {
			prog.Probes = append(prog.Probes, pr)
		}
		if p.pos == start && p.tok != EOF {
			p.skipProbe()
		}
	}
	return prog
}

// skipProbe resynchronises after a broken probe: it skips to the brace
// that closes the current top-level block.
func (p *parser) skipProbe() {
	if p.skipBalanced(false) == RBRACE {
		p.specs = true
		p.next()
	}
}

// skipBalanced skips tokens, keeping count of braces, up to the brace
// that closes the current block or, with semicolon, a ';' outside braces;
// it returns the token it stopped at, left unread, or EOF.
func (p *parser) skipBalanced(semicolon bool) Token {
	depth := 0
	for ; p.tok != EOF; p.next() {
		switch p.tok {
		case LBRACE:
			depth++
		case RBRACE:
			if depth--; depth <= 0 {
				return RBRACE
			}
		case SEMICOLON:
			if semicolon && depth == 0 {
				return SEMICOLON
			}
		}
	}
	return EOF
}

func (p *parser) parseProbe() *Probe {
	pr := &Probe{}
	for {
		if p.tok != PROBESPEC {
			p.errorExpected("attach point")
			p.skipProbe()
			return nil
		}
		pr.Points = append(pr.Points, p.parseAttachPoint())
		p.next()
		if p.tok != COMMA {
			break
		}
		p.specs = true
		p.next()
	}
	if p.tok == QUO {
		p.next()
		p.inPred = true
		pr.Pred = p.parseExpr()
		p.inPred = false
		p.expect(QUO)
	}
	if p.tok != LBRACE {
		p.errorExpected("'{' or a /predicate/")
		p.skipProbe()
		return nil
	}
	pr.Body = p.parseBlock()
	p.specs = true
	p.next()
	return pr
}

// providers maps every provider spelling to its full name.
var providers = map[string]string{
	"BEGIN":           "BEGIN",
	"END":             "END",
	"begin":           "BEGIN", // bpftrace 0.26 writes them in lower case
	"end":             "END",
	"kprobe":          "kprobe",
	"k":               "kprobe",
	"kretprobe":       "kretprobe",
	"kr":              "kretprobe",
	"uprobe":          "uprobe",
	"u":               "uprobe",
	"uretprobe":       "uretprobe",
	"ur":              "uretprobe",
	"tracepoint":      "tracepoint",
	"t":               "tracepoint",
	"rawtracepoint":   "rawtracepoint",
	"rt":              "rawtracepoint",
	"usdt":            "usdt",
	"U":               "usdt",
	"profile":         "profile",
	"p":               "profile",
	"interval":        "interval",
	"i":               "interval",
	"software":        "software",
	"s":               "software",
	"hardware":        "hardware",
	"h":               "hardware",
	"watchpoint":      "watchpoint",
	"w":               "watchpoint",
	"asyncwatchpoint": "asyncwatchpoint",
	"fentry":          "fentry",
	"kfunc":           "fentry",
	"f":               "fentry",
	"fexit":           "fexit",
	"kretfunc":        "fexit",
	"fr":              "fexit",
	"fmod_ret":        "fmod_ret",
	"iter":            "iter",
	"it":              "iter",
	"self":            "self",  // self:signal:SIGUSR1, bpftrace 0.26
	"test":            "test",  // test:NAME, run by --test (bpftrace 0.26)
	"bench":           "bench", // bench:NAME, run by --bench (bpftrace 0.26)
}

// ProviderName gives the provider a probe type or its abbreviation
// names, as the parser does for an attach point.
func ProviderName(name string) (string, bool) {
	prov, ok := providers[name]
	return prov, ok
}

// parseAttachPoint splits the current PROBESPEC token into provider and
// parts. Unknown providers are reported here, where the caret can point
// at them.
func (p *parser) parseAttachPoint() *AttachPoint {
	a := &AttachPoint{SpecPos: p.pos, Raw: p.lit}
	fields := SplitAttachPoint(p.lit)
	prov, ok := providers[fields[0]]
	if !ok && strings.Contains(fields[0], "$") {
		// A positional parameter in the provider, as bpftrace allows:
		// the checker knows the parameters (see ProviderName).
		ok, prov = true, fields[0]
	}
	if !ok && isWildcardProvider(p.lit) {
		// A wildcard over probe types, as bpftrace allows: the
		// resolver knows which types the attach point can be.
		ok, prov = true, fields[0]
	}
	if !ok {
		p.error(p.pos, p.pos+Pos(len(fields[0])), "unknown probe type %q", fields[0])
		prov = fields[0]
	}
	a.Provider = prov
	if len(fields) > 1 {
		a.Parts = fields[1:]
	}
	return a
}

// SplitAttachPoint splits an attach point at colons outside double
// quotes and removes the quotes, as the parser does; kinst -l splits its
// pattern with it so that a listing reads parts as a program does.
func SplitAttachPoint(s string) []string {
	var parts []string
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case c == ':' && !quoted:
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(parts, b.String())
}

func (p *parser) parseBlock() *Block {
	b := &Block{Lbrace: p.expect(LBRACE)}
	for p.tok != RBRACE && p.tok != EOF {
		start := p.pos
		s := p.parseStmt()
		if s != nil {
			b.Stmts = append(b.Stmts, s)
		}
		switch {
		case p.tok == SEMICOLON:
			p.next()
		case p.tok == RBRACE:
		case isBlockStmt(s):
		default:
			p.errorExpected("';' or '}' after statement")
			p.syncStmt()
		}
		if p.pos == start {
			p.syncStmt()
		}
	}
	b.Rbrace = p.pos
	if p.tok != RBRACE {
		p.errorExpected("'}'")
	}
	return b
}

func isBlockStmt(s Stmt) bool {
	switch s.(type) {
	case *IfStmt, *UnrollStmt, *WhileStmt, *ForStmt, *Block:
		return true
	}
	return false
}

// syncStmt skips to the end of the current statement.
func (p *parser) syncStmt() {
	depth := 0
	for p.tok != EOF {
		switch p.tok {
		case LBRACE:
			depth++
		case RBRACE:
			if depth == 0 {
				return
			}
			depth--
		case SEMICOLON:
			if depth == 0 {
				p.next()
				return
			}
		}
		p.next()
	}
}

func (p *parser) parseStmt() Stmt {
	switch p.tok {
	case IF:
		return p.parseIf()
	case UNROLL:
		s := &UnrollStmt{Unroll: p.pos}
		p.next()
		s.Count = p.parseCond()
		s.Body = p.parseBlock()
		p.next()
		return s
	case WHILE:
		s := &WhileStmt{While: p.pos}
		p.next()
		s.Cond = p.parseCond()
		s.Body = p.parseBlock()
		p.next()
		return s
	case FOR:
		return p.parseFor()
	case RETURN, BREAK, CONTINUE:
		s := &JumpStmt{TokPos: p.pos, Tok: p.tok}
		p.next()
		if s.Tok == RETURN && p.tok != SEMICOLON && p.tok != RBRACE && p.tok != EOF {
			s.X = p.parseExpr()
		}
		return s
	case LBRACE:
		b := p.parseBlock()
		p.next()
		return b
	case SEMICOLON:
		return nil
	case IDENT:
		if p.lit == "let" && p.peek() == VAR {
			return p.parseLet()
		}
		if p.lit == "_" && p.peek() == ASSIGN {
			s := &DiscardStmt{Under: p.pos}
			p.next()
			p.next()
			s.X = p.parseExpr()
			return s
		}
	}
	x := p.parseExpr()
	if p.tok.IsAssign() {
		s := &AssignStmt{Lhs: x, OpPos: p.pos, Op: p.tok}
		switch x.(type) {
		case *MapExpr, *VarExpr:
		default:
			p.error(x.Pos(), x.End(), "cannot assign to this expression: only maps (@x) and variables ($x) take assignments")
		}
		p.next()
		s.Rhs = p.parseExpr()
		return s
	}
	return &ExprStmt{X: x}
}

// parseCond parses the expression after if, while and unroll:
// parenthesised, or a single term without parentheses.
func (p *parser) parseCond() Expr {
	if p.tok != LPAREN {
		return p.parseBareCond()
	}
	p.next()
	x := p.parseExpr()
	p.expect(RPAREN)
	return x
}

// parseFor parses for ($v : A..B) and for ($v : @map).
func (p *parser) parseFor() Stmt {
	s := &ForStmt{For: p.pos}
	p.next()
	open := p.tok == LPAREN
	if open {
		p.next()
	}
	if p.tok != VAR {
		p.errorExpected("a variable such as $i")
	}
	s.Var = &VarExpr{NamePos: p.pos, Name: p.lit}
	p.next()
	p.expect(COLON)
	x := p.parseExpr()
	if p.tok == DOTDOT {
		p.next()
		s.From, s.To = x, p.parseExpr()
	} else if m, ok := x.(*MapExpr); ok && m.Keys == nil {
		s.Map = m
	} else {
		p.error(x.Pos(), x.End(), "for iterates over a range A..B or a map @name")
	}
	if open || p.tok == RPAREN {
		p.expect(RPAREN)
		if !open {
			p.error(s.Var.Pos(), s.Var.End(), "expected '(' before $%s, as the ')' after the range needs", s.Var.Name)
		}
	}
	s.Body = p.parseBlock()
	p.next()
	return s
}

func (p *parser) parseIf() Stmt {
	s := &IfStmt{If: p.pos}
	p.next()
	s.Cond = p.parseCond()
	s.Then = p.parseBlock()
	p.next()
	if p.tok == ELSE {
		p.next()
		if p.tok == IF {
			s.Else = p.parseIf()
		} else {
			s.Else = p.parseBlock()
			p.next()
		}
	}
	return s
}

func (p *parser) parseExpr() Expr {
	x := p.parseBinary(1)
	if p.tok != QUESTION {
		return x
	}
	p.next()
	var then Expr
	if p.tok != COLON {
		then = p.parseExpr()
	}
	p.expect(COLON)
	els := p.parseExpr()
	return &CondExpr{Cond: x, X: then, Y: els}
}

func (p *parser) parseBinary(prec int) Expr {
	x := p.parseUnary()
	for {
		op := p.tok
		oprec := op.precedence()
		if oprec < prec {
			return x
		}
		if op == QUO && p.inPred && p.peek() == LBRACE {
			return x // the slash closes the predicate
		}
		pos := p.pos
		p.next()
		y := p.parseBinary(oprec + 1)
		x = &BinaryExpr{X: x, OpPos: pos, Op: op, Y: y}
	}
}

func (p *parser) parseUnary() Expr {
	switch p.tok {
	case SUB, NOT, TILDE, MUL, AND, ADD:
		pos, op := p.pos, p.tok
		p.next()
		x := p.parseUnary()
		if op == ADD {
			return x
		}
		return &UnaryExpr{OpPos: pos, Op: op, X: x}
	case INC, DEC:
		pos, op := p.pos, p.tok
		p.next()
		x := p.parseUnary()
		return &IncDecExpr{X: x, OpPos: pos, Op: op, Prefix: true}
	case IDENT:
		if p.comptimeFollows() {
			pos := p.pos
			p.next()
			return &ComptimeExpr{Comptime: pos, X: p.parseUnary()}
		}
	case LPAREN:
		if p.isCast() {
			lparen := p.pos
			p.next()
			t := p.parseType()
			p.expect(RPAREN)
			return &CastExpr{Lparen: lparen, Type: t, X: p.parseUnary()}
		}
	}
	return p.parsePostfix(p.parseOperand())
}

// intTypes are the integer type names a cast may use.
var intTypes = map[string]bool{
	"int8": true, "int16": true, "int32": true, "int64": true,
	"uint8": true, "uint16": true, "uint32": true, "uint64": true,
}

// isCast decides, at a "(", whether a type name follows.
func (p *parser) isCast() bool {
	t1, t2 := p.peek2()
	switch t1 {
	case STRUCT, UNION, ENUM:
		return true
	case IDENT:
		off, nerr := p.s.off, len(p.errs)
		_, _, _, name := p.s.scan()
		p.s.off = off
		p.errs = p.errs[:nerr]
		if name == "typeof" && t2 == LPAREN {
			return true
		}
		if intTypes[name] || name == "bool" || p.typedefs[name] {
			return t2 == RPAREN || t2 == MUL || t2 == LBRACK
		}
		// Another name, a kernel type's, is a type when what follows
		// the ')' can only begin an operand, as bpftrace 0.26.1 reads
		// (uint64_t)1; it must be a pointer to be told from (x * y).
		return t2 == RPAREN && p.operandAfterParen() || t2 == MUL && p.onlyStarsThenParen()
	}
	return false
}

// operandAfterParen reports whether, after "(" IDENT ")", a token that
// can only begin an operand follows.
func (p *parser) operandAfterParen() bool {
	off, nerr := p.s.off, len(p.errs)
	defer func() { p.s.off = off; p.errs = p.errs[:nerr] }()
	p.s.scan() // the identifier
	p.s.scan() // ')'
	switch tok, _, _, _ := p.s.scan(); tok {
	case INT, STRING, VAR, MAP, PARAM, NPARAMS, IDENT, LPAREN, NOT, TILDE:
		return true
	}
	return false
}

// onlyStarsThenParen reports whether after "(" IDENT the tokens are
// one or more "*" and a ")".
func (p *parser) onlyStarsThenParen() bool {
	off, nerr := p.s.off, len(p.errs)
	defer func() { p.s.off = off; p.errs = p.errs[:nerr] }()
	p.s.scan() // the identifier
	return p.starsThenParen()
}

func (p *parser) parseType() *TypeExpr {
	t := &TypeExpr{NamePos: p.pos, Kind: IDENT}
	switch p.tok {
	case STRUCT, UNION, ENUM:
		t.Kind = p.tok
		p.next()
		if p.tok != IDENT {
			p.errorExpected("type name")
			return t
		}
	case IDENT:
	default:
		p.errorExpected("type name")
		return t
	}
	if p.isTypeof() {
		p.parseTypeof(t)
	} else {
		t.Name = p.lit
		t.EndPos = p.end
		p.next()
	}
	for p.tok == MUL {
		t.Ptr++
		t.EndPos = p.end
		p.next()
	}
	if p.tok == LBRACK {
		// string[N], or an array type T[N]; T[] in a cast takes its
		// length from the value cast.
		p.next()
		switch {
		case p.tok == RBRACK:
			t.Len = -1
		case p.tok != INT:
			p.errorExpected("a size")
		default:
			if n, err := parseInt(p.lit); err == nil && n > 0 && n <= 1<<20 {
				t.Len = int(n)
			} else {
				p.error(p.pos, p.end, "bad size %s", p.lit)
			}
			p.next()
		}
		t.EndPos = p.end
		p.expect(RBRACK)
	}
	return t
}

func (p *parser) parseOperand() Expr {
	switch p.tok {
	case INT:
		x := &IntLit{ValuePos: p.pos, Raw: string(p.file.Src[p.file.Offset(p.pos):p.file.Offset(p.end)])}
		v, err := parseInt(p.lit)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				p.error(p.pos, p.end, "integer literal %s does not fit in 64 bits", x.Raw)
			} else {
				p.error(p.pos, p.end, "invalid integer literal %s", x.Raw)
			}
		}
		x.Value = v
		p.next()
		return x
	case STRING:
		x := &StringLit{ValuePos: p.pos, EndPos: p.end, Value: p.lit}
		p.next()
		return x
	case VAR:
		x := &VarExpr{NamePos: p.pos, Name: p.lit}
		p.next()
		return x
	case PARAM:
		n, err := strconv.Atoi(p.lit)
		if err != nil || n < 1 {
			p.error(p.pos, p.end, "positional parameters start at $1")
		}
		x := &ParamExpr{NamePos: p.pos, N: n, EndPos: p.end}
		p.next()
		return x
	case NPARAMS:
		x := &ParamExpr{NamePos: p.pos, Count: true, EndPos: p.end}
		p.next()
		return x
	case MAP:
		x := &MapExpr{NamePos: p.pos, Name: p.lit}
		p.next()
		if p.tok == LBRACK {
			p.next()
			x.Keys = p.parseList(RBRACK)
			x.Rbrack = p.expect(RBRACK)
			if len(x.Keys) == 0 {
				p.error(x.NamePos, x.Rbrack+1, "map key list is empty")
			}
		}
		return x
	case IDENT:
		id := &Ident{NamePos: p.pos, Name: p.lit}
		p.next()
		if p.tok == LPAREN {
			p.next()
			call := &CallExpr{Fun: id, Args: p.parseList(RPAREN)}
			call.Rparen = p.expect(RPAREN)
			return call
		}
		return id
	case SIZEOF:
		x := &SizeofExpr{Sizeof: p.pos}
		p.next()
		p.expect(LPAREN)
		if p.isTypeStart() {
			x.Type = p.parseType()
		} else {
			x.X = p.parseExpr()
		}
		x.Rparen = p.expect(RPAREN)
		return x
	case OFFSETOF:
		x := &OffsetofExpr{Offsetof: p.pos}
		p.next()
		p.expect(LPAREN)
		x.Type = p.parseType()
		p.expect(COMMA)
		for {
			if p.tok != IDENT {
				p.errorExpected("field name")
				break
			}
			x.Field += p.lit
			p.next()
			if p.tok != DOT {
				break
			}
			x.Field += "."
			p.next()
		}
		x.Rparen = p.expect(RPAREN)
		return x
	case LBRACE:
		return p.parseBlockExpr()
	case IF:
		return p.parseIfExpr()
	case LPAREN:
		lparen := p.pos
		p.next()
		if p.tok == IDENT && p.peek() == ASSIGN {
			return p.parseRecord(lparen)
		}
		x := p.parseExpr()
		if p.tok == COMMA {
			p.next()
			elems := append([]Expr{x}, p.parseList(RPAREN)...)
			rparen := p.expect(RPAREN)
			return &TupleExpr{Lparen: lparen, Elems: elems, Rparen: rparen}
		}
		rparen := p.expect(RPAREN)
		return &ParenExpr{Lparen: lparen, X: x, Rparen: rparen}
	}
	pos, end := p.pos, p.end
	p.errorExpected("expression")
	if !p.closes() {
		p.next()
	}
	return &BadExpr{From: pos, To: end}
}

// closes reports whether the current token ends something an operand
// sits in: a statement, a block, a list, brackets, a ?: or the
// predicate. A missing operand leaves it for its owner to read, so
// that the one mistake is reported once.
func (p *parser) closes() bool {
	switch p.tok {
	case RBRACE, SEMICOLON, EOF, RPAREN, RBRACK, COMMA, COLON:
		return true
	case QUO:
		return p.inPred && p.peek() == LBRACE
	}
	return false
}

// isTypeStart reports whether the current token begins a type name in
// sizeof: a struct/union/enum keyword or an integer type name.
func (p *parser) isTypeStart() bool {
	switch p.tok {
	case STRUCT, UNION, ENUM:
		return true
	case IDENT:
		return intTypes[p.lit] || p.typedefs[p.lit] || p.isTypeof()
	}
	return false
}

// parseList parses comma-separated expressions up to (not including) end.
func (p *parser) parseList(end Token) []Expr {
	var list []Expr
	for p.tok != end && p.tok != EOF {
		list = append(list, p.parseExpr())
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	return list
}

func (p *parser) parsePostfix(x Expr) Expr {
	for {
		switch p.tok {
		case DOT, ARROW:
			arrow := p.tok == ARROW
			p.next()
			if p.tok != IDENT && p.tok != INT {
				p.errorExpected("field name")
				return x
			}
			x = &FieldExpr{X: x, Arrow: arrow, Name: p.lit, NamePos: p.pos}
			p.next()
		case LBRACK:
			p.next()
			idx := p.parseExpr()
			rbrack := p.expect(RBRACK)
			x = &IndexExpr{X: x, Index: idx, Rbrack: rbrack}
		case INC, DEC:
			x = &IncDecExpr{X: x, OpPos: p.pos, Op: p.tok}
			p.next()
		default:
			return x
		}
	}
}

// ParseIntLit converts an integer literal as the language reads one,
// wherever else one appears, as in an attach point's count.
func ParseIntLit(lit string) (uint64, error) { return parseInt(lit) }

// parseInt converts an integer literal as bpftrace 0.17 reads them: C's
// u, l, ul and ll suffixes on decimal and octal literals, and scientific
// notation with a one-digit coefficient, such as 5e3.
func parseInt(lit string) (uint64, error) {
	if durationSuffix(lit) != "" && !strings.HasPrefix(lit, "0x") && !strings.HasPrefix(lit, "0X") {
		return ParseDuration(lit)
	}
	if !strings.HasPrefix(lit, "0x") && !strings.HasPrefix(lit, "0X") {
		lit = trimIntSuffix(lit)
		if mant, exp, ok := strings.Cut(strings.ToLower(lit), "e"); ok && len(mant) == 1 && isDigit(mant[0]) && exp != "" {
			n, err := strconv.ParseUint(exp, 10, 8)
			if err != nil {
				return 0, err
			}
			v := uint64(mant[0] - '0')
			for ; n > 0; n-- {
				if v > math.MaxUint64/10 {
					return 0, &strconv.NumError{Func: "parseInt", Num: lit, Err: strconv.ErrRange}
				}
				v *= 10
			}
			return v, nil
		}
	}
	return strconv.ParseUint(lit, 0, 64)
}

// trimIntSuffix removes a suffix of the form u, or an optional u followed
// by one or two l's, in any case.
func trimIntSuffix(lit string) string {
	t := lit
	for i := 0; i < 2 && strings.HasSuffix(strings.ToLower(t), "l"); i++ {
		t = t[:len(t)-1]
	}
	if strings.HasSuffix(strings.ToLower(t), "u") {
		t = t[:len(t)-1]
	}
	if t == "" || !isDigit(t[len(t)-1]) {
		return lit
	}
	return t
}
