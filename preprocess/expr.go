package preprocess

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"kinst.dev/kinst/syntax"
)

// val is a value of an #if expression: intmax_t or uintmax_t.
type val struct {
	v        int64
	unsigned bool
}

// eval evaluates the tokens of an #if or #elif line. strict makes an
// identifier left after expansion an error instead of 0, for Eval.
func (p *pp) eval(toks []token, strict bool) (val, error) {
	toks = p.resolveDefined(toks)
	toks = p.expand(toks)
	e := &evaluator{toks: toks, strict: strict}
	if len(toks) == 0 {
		return val{}, errors.New("empty expression")
	}
	v, err := e.cond()
	if err != nil {
		return val{}, err
	}
	if e.i < len(toks) {
		return val{}, e.errorf(toks[e.i], "unexpected %q in #if expression", toks[e.i].text)
	}
	return v, nil
}

// resolveDefined replaces defined NAME, defined(NAME) and the
// __has_include family before macro expansion, which would change
// their operands.
func (p *pp) resolveDefined(toks []token) []token {
	if !slices.ContainsFunc(toks, func(t token) bool {
		return t.kind == tIdent && (t.text == "defined" || strings.HasPrefix(t.text, "__has_"))
	}) {
		return toks
	}
	var out []token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tIdent {
			out = append(out, t)
			continue
		}
		switch {
		case t.text == "defined":
			j := i + 1
			paren := j < len(toks) && toks[j].is(tPunct, "(")
			if paren {
				j++
			}
			if j >= len(toks) || toks[j].kind != tIdent || paren && (j+1 >= len(toks) || !toks[j+1].is(tPunct, ")")) {
				out = append(out, t) // the evaluator reports it
				continue
			}
			name := toks[j].text
			_, def := p.macros[name]
			def = def || name == "__has_include" || name == "__has_include_next"
			out = append(out, number(t, def))
			if paren {
				j++
			}
			i = j
		case strings.HasPrefix(t.text, "__has_") && i+1 < len(toks) && toks[i+1].is(tPunct, "("):
			j, depth := i+1, 0
			for ; j < len(toks); j++ {
				if toks[j].is(tPunct, "(") {
					depth++
				} else if toks[j].is(tPunct, ")") {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j >= len(toks) {
				out = append(out, t)
				continue
			}
			has := false
			if t.text == "__has_include" || t.text == "__has_include_next" {
				if file, angle, ok := headerName(toks[i+2 : j]); ok {
					_, _, _, err := p.find(t.src, file, angle, t.text == "__has_include_next")
					has = err == nil
				}
			}
			// Attributes, builtins and features are a compiler's: kinst
			// has none, and the headers then take their plain C paths.
			out = append(out, number(t, has))
			i = j
		default:
			out = append(out, t)
		}
	}
	return out
}

func number(at token, b bool) token {
	t := at
	t.kind, t.text = tNumber, "0"
	if b {
		t.text = "1"
	}
	return t
}

// evaluator parses and evaluates an #if expression by precedence
// climbing. skip counts the operands whose value does not matter, as
// the right side of 0 && x, where division by zero is no error.
type evaluator struct {
	toks   []token
	i      int
	skip   int
	strict bool
}

func (e *evaluator) errorf(t token, format string, args ...any) error {
	return &syntax.Error{File: t.src.file, Pos: t.src.pos(t.off), End: t.src.pos(t.end), Msg: fmt.Sprintf(format, args...)}
}

func (e *evaluator) peek() *token {
	if e.i < len(e.toks) {
		return &e.toks[e.i]
	}
	return nil
}

func (e *evaluator) last() token {
	if e.i > 0 {
		return e.toks[e.i-1]
	}
	return e.toks[0]
}

func (e *evaluator) accept(op string) bool {
	if t := e.peek(); t != nil && t.kind == tPunct && t.text == op {
		e.i++
		return true
	}
	return false
}

func (e *evaluator) cond() (val, error) {
	c, err := e.binary(0)
	if err != nil || !e.accept("?") {
		return c, err
	}
	if c.v == 0 {
		e.skip++
	}
	a, err := e.cond()
	if c.v == 0 {
		e.skip--
	}
	if err != nil {
		return c, err
	}
	if !e.accept(":") {
		return c, e.errorf(e.last(), "expected ':' in #if expression")
	}
	if c.v != 0 {
		e.skip++
	}
	b, err := e.cond()
	if c.v != 0 {
		e.skip--
	}
	if err != nil {
		return c, err
	}
	r := b
	if c.v != 0 {
		r = a
	}
	r.unsigned = a.unsigned || b.unsigned
	return r, nil
}

// binary operators by precedence, loosest first.
var levels = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

// op reads a binary operator of the level, joining the one-byte
// punctuators the lexer gives.
func (e *evaluator) op(level int) (string, token, bool) {
	t := e.peek()
	if t == nil || t.kind != tPunct {
		return "", token{}, false
	}
	text := t.text
	n := 1
	if e.i+1 < len(e.toks) {
		u := e.toks[e.i+1]
		if u.kind == tPunct && !u.space {
			switch two := text + u.text; two {
			case "||", "&&", "==", "!=", "<=", ">=", "<<", ">>":
				text, n = two, 2
			}
		}
	}
	for _, o := range levels[level] {
		if o == text {
			e.i += n
			return text, *t, true
		}
	}
	return "", token{}, false
}

func (e *evaluator) binary(level int) (val, error) {
	if level == len(levels) {
		return e.unary()
	}
	l, err := e.binary(level + 1)
	if err != nil {
		return l, err
	}
	for {
		op, at, ok := e.op(level)
		if !ok {
			return l, nil
		}
		short := op == "&&" && l.v == 0 || op == "||" && l.v != 0
		if short {
			e.skip++
		}
		r, err := e.binary(level + 1)
		if short {
			e.skip--
		}
		if err != nil {
			return l, err
		}
		if l, err = e.apply(op, at, l, r); err != nil {
			return l, err
		}
	}
}

func b2v(b bool) val {
	if b {
		return val{v: 1}
	}
	return val{}
}

func (e *evaluator) apply(op string, at token, l, r val) (val, error) {
	u := l.unsigned || r.unsigned
	a, b := l.v, r.v
	switch op {
	case "||":
		return b2v(a != 0 || b != 0), nil
	case "&&":
		return b2v(a != 0 && b != 0), nil
	case "==":
		return b2v(a == b), nil
	case "!=":
		return b2v(a != b), nil
	case "<", ">", "<=", ">=":
		var lt, gt bool
		if u {
			lt, gt = uint64(a) < uint64(b), uint64(a) > uint64(b)
		} else {
			lt, gt = a < b, a > b
		}
		switch op {
		case "<":
			return b2v(lt), nil
		case ">":
			return b2v(gt), nil
		case "<=":
			return b2v(!gt), nil
		}
		return b2v(!lt), nil
	case "<<":
		return val{v: a << (uint64(b) & 63), unsigned: l.unsigned}, nil
	case ">>":
		if l.unsigned {
			return val{v: int64(uint64(a) >> (uint64(b) & 63)), unsigned: true}, nil
		}
		return val{v: a >> (uint64(b) & 63)}, nil
	}
	var v int64
	switch op {
	case "|":
		v = a | b
	case "^":
		v = a ^ b
	case "&":
		v = a & b
	case "+":
		v = a + b
	case "-":
		v = a - b
	case "*":
		v = a * b
	case "/", "%":
		if b == 0 {
			if e.skip > 0 {
				return val{unsigned: u}, nil
			}
			return val{}, e.errorf(at, "division by zero in #if expression")
		}
		switch {
		case u && op == "/":
			v = int64(uint64(a) / uint64(b))
		case u:
			v = int64(uint64(a) % uint64(b))
		case b == -1: // Go panics on MinInt64 / -1
			if op == "/" {
				v = -a
			}
		case op == "/":
			v = a / b
		default:
			v = a % b
		}
	}
	return val{v: v, unsigned: u}, nil
}

func (e *evaluator) unary() (val, error) {
	t := e.peek()
	if t == nil {
		return val{}, e.errorf(e.last(), "#if expression ends early")
	}
	e.i++
	switch t.kind {
	case tPunct:
		switch t.text {
		case "(":
			v, err := e.cond()
			if err != nil {
				return v, err
			}
			if !e.accept(")") {
				return v, e.errorf(e.last(), "expected ')' in #if expression")
			}
			return v, nil
		case "+", "-", "~", "!":
			v, err := e.unary()
			if err != nil {
				return v, err
			}
			switch t.text {
			case "-":
				v.v = -v.v
			case "~":
				v.v = ^v.v
			case "!":
				v = b2v(v.v == 0)
			}
			return v, nil
		}
	case tNumber:
		return e.number(*t)
	case tChar:
		return e.char(*t)
	case tIdent:
		if t.text == "defined" {
			return val{}, e.errorf(*t, "defined needs a macro name")
		}
		if e.strict && e.skip == 0 {
			return val{}, e.errorf(*t, "%s is not an integer constant", t.text)
		}
		if t.text == "true" {
			return val{v: 1}, nil
		}
		return val{}, nil // what no macro names is 0
	}
	return val{}, e.errorf(*t, "unexpected %q in #if expression", t.text)
}

// number parses an integer constant with its suffixes.
func (e *evaluator) number(t token) (val, error) {
	s := t.text
	end := len(s)
	unsigned := false
	for end > 0 && strings.ContainsRune("uUlL", rune(s[end-1])) {
		if s[end-1] == 'u' || s[end-1] == 'U' {
			unsigned = true
		}
		end--
	}
	digits := s[:end]
	base := 10
	switch {
	case strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X"):
		base, digits = 16, digits[2:]
	case strings.HasPrefix(digits, "0b") || strings.HasPrefix(digits, "0B"):
		base, digits = 2, digits[2:]
	case len(digits) > 1 && digits[0] == '0':
		base, digits = 8, digits[1:]
	}
	u, err := strconv.ParseUint(digits, base, 64)
	if err != nil || digits == "" {
		return val{}, e.errorf(t, "%s is not an integer constant", s)
	}
	// A decimal constant too big for intmax_t, or any with a u suffix,
	// is unsigned; hexadecimal and octal ones become unsigned when they
	// need the top bit.
	return val{v: int64(u), unsigned: unsigned || u > 1<<63-1}, nil
}

// char parses a character constant.
func (e *evaluator) char(t token) (val, error) {
	s := strings.TrimLeft(t.text, "LuU8")
	if len(s) < 3 || s[len(s)-1] != '\'' {
		return val{}, e.errorf(t, "malformed character constant %s", s)
	}
	body := s[1 : len(s)-1]
	if body[0] != '\\' {
		if len(body) != 1 {
			return val{}, e.errorf(t, "malformed character constant %s", s)
		}
		return val{v: int64(int8(body[0]))}, nil
	}
	esc := body[1:]
	var v uint64
	var err error
	switch {
	case esc == "":
		err = strconv.ErrSyntax
	case esc[0] >= '0' && esc[0] <= '7' && len(esc) <= 3:
		v, err = strconv.ParseUint(esc, 8, 8)
	case esc[0] == 'x' && len(esc) > 1:
		v, err = strconv.ParseUint(esc[1:], 16, 8)
	case len(esc) == 1:
		c, ok := map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v', 'e': 27, '\\': '\\', '\'': '\'', '"': '"', '?': '?'}[esc[0]]
		if !ok {
			err = strconv.ErrSyntax
		}
		v = uint64(c)
	default:
		err = strconv.ErrSyntax
	}
	if err != nil {
		return val{}, e.errorf(t, "malformed character constant %s", s)
	}
	return val{v: int64(int8(v))}, nil
}

// Eval evaluates expr as an integer constant expression, with the
// macros defined at the end of the program, as #if would but with no
// identifier left over: for constants in tables.
func (r *Result) Eval(expr string) (int64, error) {
	p := &pp{macros: r.macros}
	src := &source{file: syntax.NewFile("expr", []byte(expr)), text: []byte(expr), found: -1}
	toks := lex(src, &p.errs)
	if len(p.errs) > 0 {
		return 0, p.errs
	}
	v, err := p.eval(toks, true)
	if err == nil && len(p.errs) > 0 {
		err = p.errs
	}
	return v.v, err
}
