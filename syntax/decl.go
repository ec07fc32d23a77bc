package syntax

import "strings"

// C declarations: the struct, union, enum and typedef definitions a
// program may give at the top level, before and between its probes.
type (
	// A Decl is one top-level declaration: a struct, union or enum
	// definition or forward declaration, or a typedef of Names.
	Decl struct {
		Start   Pos
		Typedef bool
		Type    *CType
		Names   []*Declarator // the typedef's names; none otherwise
		EndPos  Pos
	}

	// A CType is a C type specifier: base type words such as
	// "unsigned long" or a typedef name (Kind IDENT), or a struct,
	// union or enum with a tag, a body or both.
	CType struct {
		NamePos Pos
		Kind    Token // IDENT, STRUCT, UNION or ENUM
		Name    string
		Body    bool // braces follow: this is a definition
		Packed  bool // __attribute__((packed))
		Align   Expr // __attribute__((aligned(N))) of the type, or nil
		Fields  []*CField
		Values  []*Enumerator
		EndPos  Pos
	}

	// A CField is one member line of a struct or union: a type and
	// its declarators, or an anonymous struct or union (no Decls).
	CField struct {
		Type  *CType
		Decls []*Declarator
	}

	// A Declarator names a field or typedef and adds pointer levels,
	// array dimensions and a bitfield width to the base type.
	Declarator struct {
		NamePos Pos
		Name    string // "" for an unnamed bitfield
		Ptr     int
		Func    bool   // (*Name)(...): a function pointer
		Dims    []Expr // array dimensions, outermost first
		Bits    Expr   // bitfield width, or nil
		Align   Expr   // __attribute__((aligned(N))), or nil
		EndPos  Pos
	}

	// An Enumerator is one constant of an enum, with its explicit value
	// if it has one.
	Enumerator struct {
		NamePos Pos
		Name    string
		Value   Expr
	}
)

func (d *Decl) Pos() Pos       { return d.Start }
func (d *Decl) End() Pos       { return d.EndPos }
func (t *CType) Pos() Pos      { return t.NamePos }
func (t *CType) End() Pos      { return t.EndPos }
func (d *Declarator) Pos() Pos { return d.NamePos }
func (d *Declarator) End() Pos { return d.EndPos }

// cBaseWords are the words that make up C's base type names.
var cBaseWords = map[string]bool{
	"unsigned": true, "signed": true, "char": true, "short": true, "int": true,
	"long": true, "_Bool": true, "bool": true, "void": true, "float": true, "double": true,
}

// cQualifiers are ignored wherever they appear in a type.
var cQualifiers = map[string]bool{
	"const": true, "volatile": true, "restrict": true, "__restrict": true,
	"__const": true, "__volatile__": true,
}

// cSpecifiers are the storage classes and function specifiers that
// open a declaration of variables or functions.
var cSpecifiers = map[string]bool{
	"extern": true, "static": true, "inline": true, "__inline": true, "__inline__": true,
	"register": true, "_Noreturn": true, "__extension__": true, "_Thread_local": true, "__thread": true,
}

// isDeclStart reports whether a top-level token the scanner read as an
// attach point is really the start of a C declaration: struct, union,
// enum, typedef, a storage class, a qualifier, a base type word, an
// attribute, a typedef name, or an unknown name followed by a name or a
// '*' (a header's size_t or pid_t, which system headers do not declare
// for kinst). An attach point's provider is never a type name.
func (p *parser) isDeclStart() bool {
	lit := p.lit
	n := 0
	for n < len(lit) && isLetter(lit[n]) || n > 0 && n < len(lit) && isDigit(lit[n]) {
		n++
	}
	word, rest := lit[:n], lit[n:]
	if word == "" || rest != "" && !strings.ContainsRune("(*;", rune(rest[0])) {
		return false
	}
	switch {
	case word == "struct" || word == "union" || word == "enum" || word == "typedef",
		word == "_Static_assert" || word == "__attribute__",
		cSpecifiers[word] || cQualifiers[word] || cBaseWords[word] || p.typedefs[word]:
		return true
	case providers[word] != "":
		return false
	case rest != "":
		// "word*" opens a pointer declaration, or a wildcard probe
		// type such as us*:PATH:NAME, which a colon ends.
		return rest[0] == '*' && !isWildcardProvider(lit)
	}
	off, nerr := p.s.off, len(p.errs)
	p.s.off = p.file.Offset(p.pos) + n
	next, _, _, _ := p.s.scan()
	p.s.off = off
	p.errs = p.errs[:nerr]
	return next == IDENT || next == MUL
}

// isWildcardProvider reports whether an attach point starts with a
// wildcard over probe types: letters, digits and wildcards up to a colon.
func isWildcardProvider(spec string) bool {
	prov, _, ok := strings.Cut(spec, ":")
	return ok && strings.ContainsAny(prov, "*?") && strings.Trim(prov, "*?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// parseDecl parses a top-level declaration. It is entered with the
// scanner in ordinary mode at the first keyword, and leaves it in
// attach-point mode at whatever follows, consuming an optional ';'.
//
// Declarations of variables and functions (prototypes, extern and
// static variables, inline function definitions: what a program's own
// header holds besides types) declare nothing a probe can use; they are
// read and dropped, as bpftrace's clang reads them. A struct, union or
// enum defined on the way is kept.
func (p *parser) parseDecl() *Decl {
	d := &Decl{Start: p.pos}
	if p.tok == IDENT && p.lit == "_Static_assert" {
		p.next()
		if p.tok != LPAREN {
			p.errorExpected("'('")
			p.syncDecl()
		} else if p.skipGroup() {
			p.next()
			p.endObjects()
		}
		return nil
	}
specifiers:
	for p.tok == IDENT {
		switch {
		case p.lit == "typedef":
			d.Typedef = true
		case cSpecifiers[p.lit]:
		case p.isAttribute():
			if !p.skipAttribute() {
				return nil
			}
			continue
		default:
			break specifiers
		}
		p.next()
	}
	d.Type = p.parseCType(!d.Typedef)
	if !d.Typedef {
		t := d.Type
		switch {
		case t.Kind == IDENT && t.Name == "":
			p.syncDecl() // parseCType said what it expected
			return nil
		case t.Body && p.tok == RBRACE:
			// The closing brace is the current token; a ';' or the
			// declarators of variables of the type may follow.
			d.EndPos = p.end
			if !p.declaratorAt(p.s.off) {
				p.endDecl()
				return p.named(d)
			}
			p.next()
		case t.Body && !p.declaratorAt(p.file.Offset(p.pos)):
			// An attribute followed the body: what follows it was read
			// as an ordinary token.
			d.EndPos = t.EndPos
			if p.tok != SEMICOLON {
				p.s.off = p.file.Offset(p.pos)
			}
			p.specs = true
			p.next()
			return p.named(d)
		case t.Kind != IDENT && !t.Body && p.tok == SEMICOLON:
			// A forward declaration.
			d.EndPos = p.end
			p.specs = true
			p.next()
			return d
		}
		p.skipObjects()
		if t.Body && t.Name != "" {
			if d.EndPos == 0 {
				d.EndPos = t.EndPos
			}
			return d
		}
		return nil
	}
	for {
		n := p.parseDeclarator(false)
		if n.Name == "" {
			p.syncDecl()
			return nil
		}
		d.Names = append(d.Names, n)
		if p.typedefs == nil {
			p.typedefs = map[string]bool{}
		}
		p.typedefs[n.Name] = true
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	if p.tok != SEMICOLON {
		p.errorExpected("';' after typedef")
		p.syncDecl()
		return nil
	}
	d.EndPos = p.end
	p.specs = true
	p.next()
	return d
}

// named reports a struct or union defined with no name and no
// variables, which nothing can refer to. An enum's constants name its
// values, with or without a tag, as bpftrace 0.26 has them; 0.17's
// refusal of one without is the checker's (check.AnonymousEnum).
func (p *parser) named(d *Decl) *Decl {
	if d.Type.Name != "" || d.Type.Kind == ENUM {
		return d
	}
	p.error(d.Type.Pos(), d.Type.Pos()+Pos(len(d.Type.Kind.String())), "a %s declared outside a typedef needs a name", d.Type.Kind)
	return nil
}

// declaratorAt reports whether the text at off, after the body of a
// top-level struct, union or enum, is the declarator of a variable or
// function rather than a ';' or the next probe, which a missing ';'
// lets follow at once.
func (p *parser) declaratorAt(off int) bool {
	saved, nerr := p.s.off, len(p.errs)
	defer func() { p.s.off, p.errs = saved, p.errs[:nerr] }()
	p.s.off = off
	tok, _, _, _ := p.s.scan()
	if tok != IDENT {
		return tok == MUL || tok == LPAREN
	}
	p.s.off = off
	_, _, _, spec := p.s.scanProbeSpec()
	word, _, _ := strings.Cut(spec, ",")
	return !strings.Contains(word, ":") && providers[word] == ""
}

// skipObjects reads the declarators of variables or functions up to the
// declaration's ';', or a function definition's body: nothing of them is
// kept.
func (p *parser) skipObjects() {
	for {
		if !p.skipDeclarator() {
			p.syncDecl()
			return
		}
		switch p.tok {
		case LBRACE: // a function definition
			if p.skipGroup() {
				p.specs = true
				p.next()
			}
			return
		case ASSIGN:
			nerr := len(p.errs)
			p.next()
			for p.tok != COMMA && p.tok != SEMICOLON && p.tok != EOF && p.tok != RBRACE {
				if (p.tok == LPAREN || p.tok == LBRACK || p.tok == LBRACE) && !p.skipGroup() {
					return
				}
				p.skipCharConst()
				p.next()
			}
			p.errs = p.errs[:nerr] // C's constants are not kinst's
		}
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	p.endObjects()
}

// endObjects expects the ';' that ends a declaration and reads on in
// attach-point mode.
func (p *parser) endObjects() {
	if p.tok != SEMICOLON {
		p.errorExpected("';' after declaration")
		p.syncDecl()
		return
	}
	p.specs = true
	p.next()
}

// skipDeclarator reads one declarator of a variable or function:
// pointers and qualifiers, a name or a declarator in parentheses, then
// parameter lists, array sizes, attributes and asm labels.
func (p *parser) skipDeclarator() bool {
	for p.tok == MUL || p.tok == IDENT && cQualifiers[p.lit] {
		p.next()
	}
	switch {
	case p.tok == IDENT && !p.isAttribute():
		p.next()
	case p.tok == LPAREN:
		p.next()
		if !p.skipDeclarator() {
			return false
		}
		if p.tok != RPAREN {
			p.errorExpected("')'")
			return false
		}
		p.next()
	default:
		p.errorExpected("name")
		return false
	}
	for {
		switch {
		case p.tok == LPAREN || p.tok == LBRACK:
			if !p.skipGroup() {
				return false
			}
			p.next()
		case p.isAttribute() || p.tok == IDENT && (p.lit == "asm" || p.lit == "__asm" || p.lit == "__asm__"):
			if !p.skipAttribute() {
				return false
			}
		case p.tok == IDENT && cQualifiers[p.lit]:
			p.next()
		default:
			return true
		}
	}
}

// skipAttribute skips __attribute__((...)) or asm("..."), the current
// token and its parenthesized arguments.
func (p *parser) skipAttribute() bool {
	p.next()
	if p.tok != LPAREN {
		p.errorExpected("'('")
		return false
	}
	if !p.skipGroup() {
		return false
	}
	p.next()
	return true
}

// skipGroup skips from the current opening bracket to the one that
// closes it, which it leaves current. It steps over C's character
// constants, which kinst's language has not, and reports a bracket
// never closed.
func (p *parser) skipGroup() bool {
	open, start, end := p.tok, p.pos, p.end
	nerr := len(p.errs)
	depth := 0
	for ; p.tok != EOF; p.next() {
		switch p.tok {
		case LPAREN, LBRACK, LBRACE:
			depth++
		case RPAREN, RBRACK, RBRACE:
			if depth--; depth == 0 {
				p.errs = p.errs[:nerr]
				return true
			}
		default:
			p.skipCharConst()
		}
	}
	p.errs = p.errs[:nerr]
	p.error(start, end, "'%s' is not closed", open)
	return false
}

// skipCharConst steps over the rest of a C character constant when the
// current token is the quote that opens it.
func (p *parser) skipCharConst() {
	if p.tok != ILLEGAL || p.lit != "'" {
		return
	}
	s := &p.s
	for s.off < len(s.src) && s.src[s.off] != '\n' {
		c := s.src[s.off]
		s.off++
		if c == '\\' {
			s.off++
		} else if c == '\'' {
			return
		}
	}
}

// endDecl finishes a declaration whose last token is current: it skips
// an optional ';' and reads on in attach-point mode.
func (p *parser) endDecl() {
	if p.peek() == SEMICOLON {
		p.next()
	}
	p.specs = true
	p.next()
}

// syncDecl skips the rest of a broken declaration: up to a ';' outside
// braces, or past the brace that closes its body.
func (p *parser) syncDecl() {
	switch p.skipBalanced(true) {
	case RBRACE:
		p.endDecl()
	case SEMICOLON:
		p.specs = true
		p.next()
	}
}

func (p *parser) skipQualifiers() {
	for p.tok == IDENT && cQualifiers[p.lit] {
		p.next()
	}
}

// parseCType parses a type specifier. At the top level (top) a body's
// closing brace stays the current token, since what follows it is read
// in attach-point mode.
func (p *parser) parseCType(top bool) *CType {
	p.skipQualifiers()
	t := &CType{NamePos: p.pos, EndPos: p.end, Kind: IDENT}
	switch p.tok {
	case STRUCT, UNION, ENUM:
		t.Kind = p.tok
		p.next()
		if p.isAttribute() {
			p.parseAttribute(&t.Packed, &t.Align)
		}
		if p.tok == IDENT {
			t.Name = p.lit
			t.EndPos = p.end
			p.next()
		}
		if p.tok != LBRACE {
			if t.Name == "" {
				p.errorExpected(t.Kind.String() + " name or '{'")
			}
			break
		}
		t.Body = true
		p.next()
		if t.Kind == ENUM {
			p.parseEnumBody(t)
		} else {
			p.parseFields(t)
		}
		t.EndPos = p.end
		if p.tok != RBRACE {
			p.errorExpected("'}'")
			return t
		}
		if top {
			if tok, lit := p.peekLit(); tok != IDENT || lit != "__attribute__" {
				return t
			}
		}
		p.next()
		for p.isAttribute() {
			t.EndPos = p.parseAttribute(&t.Packed, &t.Align)
		}
	case IDENT:
		if !cBaseWords[p.lit] {
			t.Name = p.lit
			p.next()
			break
		}
		var words []string
		for p.tok == IDENT && (cBaseWords[p.lit] || cQualifiers[p.lit]) {
			if cBaseWords[p.lit] {
				words = append(words, p.lit)
				t.EndPos = p.end
			}
			p.next()
		}
		t.Name = strings.Join(words, " ")
	default:
		p.errorExpected("type")
		return t
	}
	p.skipQualifiers()
	if t.Kind == IDENT && p.isAttribute() {
		// "T __attribute__((aligned(N))) name", as linux/types.h's
		// __aligned_u64 expands: the attribute aligns the type.
		t.EndPos = p.parseAttribute(nil, &t.Align)
		p.skipQualifiers()
	}
	return t
}

// parseFields parses the members of a struct or union body up to the
// closing brace.
func (p *parser) parseFields(t *CType) {
	for p.tok != RBRACE && p.tok != EOF {
		start := p.pos
		f := &CField{Type: p.parseCType(false)}
		if p.tok == SEMICOLON && f.Type.Body && f.Type.Kind != ENUM {
			// An anonymous struct or union: its members belong to t.
			t.Fields = append(t.Fields, f)
			p.next()
			continue
		}
		for {
			d := p.parseDeclarator(true)
			f.Decls = append(f.Decls, d)
			if p.tok != COMMA {
				break
			}
			p.next()
		}
		t.Fields = append(t.Fields, f)
		// clang lets the last member go without its ';', and so
		// bpftrace does.
		if p.tok != SEMICOLON && p.tok != RBRACE {
			p.errorExpected("';' after field")
			for p.tok != SEMICOLON && p.tok != RBRACE && p.tok != EOF {
				p.next()
			}
		}
		if p.tok == SEMICOLON {
			p.next()
		}
		if p.pos == start {
			p.next()
		}
	}
}

// parseEnumBody parses an enum's constants up to the closing brace.
func (p *parser) parseEnumBody(t *CType) {
	for p.tok == IDENT {
		e := &Enumerator{NamePos: p.pos, Name: p.lit}
		p.next()
		if p.tok == ASSIGN {
			p.next()
			e.Value = p.parseExpr()
		}
		t.Values = append(t.Values, e)
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	if p.tok != RBRACE {
		p.errorExpected("enum constant or '}'")
		for p.tok != RBRACE && p.tok != EOF {
			p.next()
		}
	}
}

// parseDeclarator parses pointer stars, a name, array dimensions and, in
// a struct (field), a bitfield width. A function pointer (*name)(...)
// keeps only its name: kinst treats it as an untyped pointer.
func (p *parser) parseDeclarator(field bool) *Declarator {
	d := &Declarator{NamePos: p.pos, EndPos: p.pos}
	for p.tok == MUL {
		d.Ptr++
		p.next()
		p.skipQualifiers()
	}
	switch {
	case p.tok == IDENT:
		d.NamePos, d.Name, d.EndPos = p.pos, p.lit, p.end
		p.next()
	case p.tok == LPAREN && p.peek() == MUL:
		p.next()
		for p.tok == MUL {
			p.next()
		}
		if p.tok != IDENT {
			p.errorExpected("name of function pointer")
			return d
		}
		d.NamePos, d.Name, d.Func = p.pos, p.lit, true
		p.next()
		d.EndPos = p.expect(RPAREN) + 1
		if p.tok == LPAREN {
			depth := 0
			for p.tok != EOF {
				if p.tok == LPAREN {
					depth++
				} else if p.tok == RPAREN {
					depth--
					if depth == 0 {
						d.EndPos = p.end
						p.next()
						break
					}
				}
				p.next()
			}
		}
		return d
	case field && p.tok == COLON:
	default:
		p.errorExpected("name")
		return d
	}
	if !field && p.tok == LPAREN {
		// A typedef of a function type, name(...): what kinst keeps of
		// it is what a pointer to it is, an untyped pointer.
		if p.skipGroup() {
			d.Func, d.EndPos = true, p.end
			p.next()
		}
		return d
	}
	for p.tok == LBRACK {
		p.next()
		d.Dims = append(d.Dims, p.parseExpr())
		d.EndPos = p.expect(RBRACK) + 1
	}
	if field && p.tok == COLON {
		p.next()
		d.Bits = p.parseExpr()
		d.EndPos = d.Bits.End()
	}
	if p.isAttribute() {
		d.EndPos = p.parseAttribute(nil, &d.Align)
	}
	return d
}

func (p *parser) isAttribute() bool { return p.tok == IDENT && p.lit == "__attribute__" }

// peekLit returns the token after the current one and its text.
func (p *parser) peekLit() (Token, string) {
	off, nerr := p.s.off, len(p.errs)
	tok, _, _, lit := p.s.scan()
	p.s.off = off
	p.errs = p.errs[:nerr]
	return tok, lit
}

// parseAttribute parses __attribute__((...)) with the attributes that
// change a layout: packed (where packed is given) and aligned(N). It
// returns the end of the attribute.
func (p *parser) parseAttribute(packed *bool, align *Expr) Pos {
	p.next()
	p.expect(LPAREN)
	p.expect(LPAREN)
	for p.tok == IDENT {
		name, pos, end := strings.Trim(p.lit, "_"), p.pos, p.end
		p.next()
		switch {
		case name == "packed" && packed != nil:
			*packed = true
		case name == "aligned" && p.tok == LPAREN:
			p.next()
			*align = p.parseExpr()
			p.expect(RPAREN)
		default:
			// Report it and read on past its arguments, so that the
			// declaration and what follows parse as written.
			p.error(pos, end, "attribute %s is not supported here", name)
			if p.tok == LPAREN {
				p.skipParens()
			}
		}
		if p.tok != COMMA {
			break
		}
		p.next()
	}
	p.expect(RPAREN)
	end := p.end
	p.expect(RPAREN)
	return end
}

// skipParens skips a parenthesised list, from its '(' to past the ')'
// that closes it.
func (p *parser) skipParens() {
	depth := 0
	for ; p.tok != EOF; p.next() {
		switch p.tok {
		case LPAREN:
			depth++
		case RPAREN:
			if depth--; depth == 0 {
				p.next()
				return
			}
		}
	}
}

// decl prints a top-level declaration.
func (p *printer) decl(d *Decl) {
	if d.Typedef {
		p.b.WriteString("typedef ")
	}
	p.ctype(d.Type)
	p.declarators(d.Names)
}

// declarators writes " a, *b[2];" after a declaration's type.
func (p *printer) declarators(ds []*Declarator) {
	for i, d := range ds {
		if i > 0 {
			p.b.WriteByte(',')
		}
		p.b.WriteByte(' ')
		p.declarator(d)
	}
	p.b.WriteByte(';')
}

func (p *printer) ctype(t *CType) {
	if t.Kind == IDENT {
		p.b.WriteString(t.Name)
		p.attribute(false, t.Align)
		return
	}
	p.b.WriteString(t.Kind.String())
	if t.Name != "" {
		p.b.WriteByte(' ')
		p.b.WriteString(t.Name)
	}
	if !t.Body {
		return
	}
	p.b.WriteString(" {")
	p.indent++
	for i, e := range t.Values {
		p.newline()
		p.b.WriteString(e.Name)
		if e.Value != nil {
			p.b.WriteString(" = ")
			p.expr(e.Value, 0)
		}
		if i < len(t.Values)-1 {
			p.b.WriteByte(',')
		}
	}
	for _, f := range t.Fields {
		p.newline()
		p.ctype(f.Type)
		p.declarators(f.Decls)
	}
	p.indent--
	p.newline()
	p.b.WriteByte('}')
	p.attribute(t.Packed, t.Align)
}

func (p *printer) attribute(packed bool, align Expr) {
	switch {
	case packed && align != nil:
		p.b.WriteString(" __attribute__((packed, aligned(")
	case packed:
		p.b.WriteString(" __attribute__((packed))")
		return
	case align != nil:
		p.b.WriteString(" __attribute__((aligned(")
	default:
		return
	}
	p.expr(align, 0)
	p.b.WriteString(")))")
}

func (p *printer) declarator(d *Declarator) {
	if d.Func {
		p.printf("(*%s)()", d.Name)
		return
	}
	if d.Name == "" {
		p.b.WriteString(": ")
		p.expr(d.Bits, 0)
		return
	}
	p.b.WriteString(strings.Repeat("*", d.Ptr))
	p.b.WriteString(d.Name)
	for _, x := range d.Dims {
		p.b.WriteByte('[')
		p.expr(x, 0)
		p.b.WriteByte(']')
	}
	if d.Bits != nil {
		p.b.WriteString(" : ")
		p.expr(d.Bits, 0)
	}
	p.attribute(false, d.Align)
}
