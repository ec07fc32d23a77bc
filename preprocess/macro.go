package preprocess

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"kinst.dev/kinst/syntax"
)

// A macro is one #define.
type macro struct {
	name     string
	fn       bool     // function-like
	params   []string // for a variadic macro the last is __VA_ARGS__ or its GNU name
	variadic bool
	body     []token
	// user says the program or one of its own headers defined it: a
	// macro that reaches itself is then an error, where in a system
	// header it is the idiom that names an enumerator (#define X X).
	user bool
	// special is __FILE__ or __LINE__, whose values depend on the use.
	special string
}

// define handles #define.
func (p *pp) define(src *source, name token, rest []token) {
	if len(rest) == 0 || rest[0].kind != tIdent {
		p.errorf(name, "#define needs a macro name")
		return
	}
	m := &macro{name: rest[0].text, user: !src.system}
	if m.name == "defined" {
		p.errorf(rest[0], "\"defined\" cannot be a macro name")
		return
	}
	body := rest[1:]
	if len(body) > 0 && body[0].is(tPunct, "(") && !body[0].space {
		m.fn = true
		i := 1
		for ; ; i++ {
			if i >= len(body) {
				p.errorf(body[0], "macro %s: parameter list not closed", m.name)
				return
			}
			t := body[i]
			if t.is(tPunct, ")") && len(m.params) == 0 {
				break
			}
			switch {
			case t.is(tPunct, "..."):
				m.params = append(m.params, "__VA_ARGS__")
				m.variadic = true
			case t.kind == tIdent:
				if slices.Contains(m.params, t.text) {
					p.errorf(t, "macro %s: parameter %s is given twice", m.name, t.text)
					return
				}
				m.params = append(m.params, t.text)
				if i+1 < len(body) && body[i+1].is(tPunct, "...") {
					m.variadic = true // GNU: args...
					i++
				}
			default:
				p.errorf(t, "macro %s: expected a parameter name, found %q", m.name, t.text)
				return
			}
			i++
			if i < len(body) && body[i].is(tPunct, ")") {
				break
			}
			if i >= len(body) || !body[i].is(tPunct, ",") || m.variadic {
				at := body[len(body)-1]
				if i < len(body) {
					at = body[i]
				}
				p.errorf(at, "macro %s: expected ',' or ')' in the parameter list", m.name)
				return
			}
		}
		body = body[i+1:]
	}
	m.body = append([]token(nil), body...) // body may be a reused line
	for i, t := range body {
		if !t.is(tPunct, "##") {
			continue
		}
		if i == 0 || i == len(body)-1 {
			p.errorf(t, "macro %s: ## cannot be at either end of a macro", m.name)
			return
		}
	}
	if m.fn {
		for i, t := range body {
			if t.is(tPunct, "#") && (i+1 >= len(body) || m.param(body[i+1]) < 0) {
				p.errorf(t, "macro %s: # must be followed by a parameter", m.name)
				return
			}
		}
	}
	p.macros[m.name] = m
}

// param returns the index of the parameter t names, or -1.
func (m *macro) param(t token) int {
	if t.kind != tIdent {
		return -1
	}
	for i, n := range m.params {
		if n == t.text {
			return i
		}
	}
	return -1
}

var predefinedOnce struct {
	sync.Once
	macros map[string]*macro
}

// predefinedText is what a C compiler for x86-64 Linux defines and the
// system headers test, plus __FILE__ and __LINE__.
const predefinedText = `#define __STDC__ 1
#define __STDC_VERSION__ 201710L
#define __STDC_HOSTED__ 1
#define __GNUC__ 4
#define __GNUC_MINOR__ 2
#define __GNUC_PATCHLEVEL__ 1
#define __clang__ 1
#define __linux__ 1
#define __linux 1
#define __unix__ 1
#define __unix 1
#define __gnu_linux__ 1
#define __ELF__ 1
#define __x86_64__ 1
#define __x86_64 1
#define __amd64__ 1
#define __amd64 1
#define __LP64__ 1
#define _LP64 1
#define __CHAR_BIT__ 8
#define __SIZEOF_SHORT__ 2
#define __SIZEOF_INT__ 4
#define __SIZEOF_LONG__ 8
#define __SIZEOF_LONG_LONG__ 8
#define __SIZEOF_POINTER__ 8
#define __SIZEOF_SIZE_T__ 8
#define __SIZEOF_WCHAR_T__ 4
#define __SCHAR_MAX__ 127
#define __SHRT_MAX__ 32767
#define __INT_MAX__ 2147483647
#define __LONG_MAX__ 9223372036854775807L
#define __LONG_LONG_MAX__ 9223372036854775807LL
#define __WCHAR_MAX__ 2147483647
#define __ORDER_LITTLE_ENDIAN__ 1234
#define __ORDER_BIG_ENDIAN__ 4321
#define __ORDER_PDP_ENDIAN__ 3412
#define __BYTE_ORDER__ __ORDER_LITTLE_ENDIAN__
#define __BPFTRACE__ 1
`

// predefined returns a fresh copy of the predefined macros.
func predefined(btf bool) map[string]*macro {
	predefinedOnce.Do(func() {
		p := &pp{macros: map[string]*macro{}}
		text := []byte(predefinedText)
		src := &source{file: syntax.NewFile("<built-in>", text), text: text, system: true, found: -1}
		p.run(src)
		p.macros["__FILE__"] = &macro{name: "__FILE__", special: "__FILE__"}
		p.macros["__LINE__"] = &macro{name: "__LINE__", special: "__LINE__"}
		predefinedOnce.macros = p.macros
	})
	m := make(map[string]*macro, len(predefinedOnce.macros)+1)
	for k, v := range predefinedOnce.macros {
		m[k] = v
	}
	if btf {
		m["BPFTRACE_HAVE_BTF"] = &macro{name: "BPFTRACE_HAVE_BTF", body: []token{{kind: tNumber, text: "1", src: builtinSrc, idx: -1}}}
	}
	return m
}

var builtinSrc = &source{file: syntax.NewFile("<built-in>", nil), found: -1}

// expand macro-expands toks (Prosser's algorithm: every token carries
// the set of macros it came from, which it may not expand again). A
// macro of the program's own that reaches itself is an error.
func (p *pp) expand(toks []token) []token {
	if !slices.ContainsFunc(toks, func(t token) bool { return t.kind == tIdent && p.macros[t.text] != nil }) {
		return toks // nothing to expand, and nothing to copy
	}
	// stack holds the tokens still to read, the next one last.
	stack := make([]token, len(toks))
	for i, t := range toks {
		stack[len(toks)-1-i] = t
	}
	out := make([]token, 0, len(toks))
	var site token // the last token read in place: where __LINE__ is
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !t.gen {
			site = t
		}
		if p.expanded++; p.expanded > maxExpansion {
			if p.expanded == maxExpansion+1 {
				p.errorf(site, "macro expansion goes past %d tokens", maxExpansion)
			}
			return out
		}
		m := p.macros[t.text]
		if t.kind != tIdent || m == nil || t.noexp {
			out = append(out, t)
			continue
		}
		if i := indexOf(t.hide, t.text); i >= 0 {
			if m.user && len(p.errs) < maxErrors {
				chain := strings.Join(append(t.hide[i:len(t.hide):len(t.hide)], t.text), " -> ")
				p.errorf(t, "macro %s is recursive: %s", t.text, chain)
				// Once reported, the name stays as it is.
			}
			out = append(out, t)
			continue
		}
		if m.special != "" {
			out = append(out, p.special(m, t, site))
			continue
		}
		if !m.fn {
			body := p.subst(m, t, nil, withHide(t.hide, m.name))
			stack = pushReversed(stack, body)
			continue
		}
		// A function-like macro's name without '(' is just a name.
		if len(stack) == 0 || !stack[len(stack)-1].is(tPunct, "(") {
			out = append(out, t)
			continue
		}
		args, rparen, rest, ok := p.collect(m, t, stack[:len(stack)-1])
		if !ok {
			// The use is reported; what follows it is read on, so that
			// its own mistakes are reported too.
			out = append(out, t)
			stack = rest
			continue
		}
		stack = rest
		body := p.subst(m, t, args, withHide(intersect(t.hide, rparen.hide), m.name))
		stack = pushReversed(stack, body)
	}
	return out
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// withHide returns hide plus name in a new slice.
func withHide(hide []string, name string) []string {
	h := make([]string, len(hide), len(hide)+1)
	copy(h, hide)
	return append(h, name)
}

func intersect(a, b []string) []string {
	var out []string
	for _, s := range a {
		if indexOf(b, s) >= 0 {
			out = append(out, s)
		}
	}
	return out
}

func pushReversed(stack, toks []token) []token {
	for i := len(toks) - 1; i >= 0; i-- {
		stack = append(stack, toks[i])
	}
	return stack
}

// special expands __FILE__ or __LINE__ at t, for the use at site.
func (p *pp) special(m *macro, t, site token) token {
	if site.src == nil {
		site = t
	}
	site.src.load()
	pos := site.src.file.Position(site.src.pos(site.off))
	r := t
	r.gen = true
	if m.special == "__FILE__" {
		r.kind, r.text = tString, strconv.Quote(pos.Filename)
	} else {
		r.kind, r.text = tNumber, strconv.Itoa(pos.Line)
	}
	return r
}

// collect reads a function-like macro's arguments from stack, whose
// next token follows the '('. It returns the arguments, the closing
// parenthesis and what is left.
func (p *pp) collect(m *macro, name token, stack []token) (args [][]token, rparen token, rest []token, ok bool) {
	depth := 0
	var cur []token
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case t.is(tPunct, "("):
			depth++
		case t.is(tPunct, ")"):
			if depth == 0 {
				args = append(args, cur)
				if len(m.params) == 0 && len(args) == 1 && len(args[0]) == 0 {
					args = nil
				}
				if len(args) == len(m.params)-1 && m.variadic {
					args = append(args, nil)
				}
				if len(args) != len(m.params) {
					p.errorf(name, "macro %s takes %d arguments, not %d", m.name, len(m.params), len(args))
					return nil, t, stack, false
				}
				return args, t, stack, true
			}
			depth--
		case t.is(tPunct, ",") && depth == 0 && !(m.variadic && len(args) == len(m.params)-1):
			args = append(args, cur)
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	p.errorf(name, "macro %s: argument list not closed", m.name)
	return nil, name, nil, false
}

// subst replaces a macro use by its body with the arguments in place,
// handling # and ##. hide is the hide set its tokens get.
func (p *pp) subst(m *macro, use token, args [][]token, hide []string) []token {
	var out []token
	expanded := make([][]token, len(args))
	pasting := false // the last thing added is the left side of a ##
	add := func(toks []token, first token) {
		for i, t := range toks {
			if i == 0 {
				t.space = first.space
			}
			if pasting && i == 0 && len(out) > 0 {
				out[len(out)-1] = p.paste(out[len(out)-1], t)
				continue
			}
			out = append(out, t)
		}
		pasting = false
	}
	body := m.body
	for i := 0; i < len(body); i++ {
		b := body[i]
		nextPaste := i+1 < len(body) && body[i+1].is(tPunct, "##")
		if b.is(tPunct, "##") {
			pasting = true
			continue
		}
		if m.fn && b.is(tPunct, "#") {
			i++
			s := b
			s.kind, s.text = tString, stringize(args[m.param(body[i])])
			add([]token{s}, b)
			continue
		}
		if k := m.param(b); k >= 0 {
			arg := args[k]
			if pasting || nextPaste {
				if len(arg) == 0 {
					if pasting && len(out) > 0 && out[len(out)-1].is(tPunct, ",") && m.variadic && k == len(m.params)-1 {
						out = out[:len(out)-1] // GNU: , ## __VA_ARGS__ with no arguments
					}
					arg = []token{{kind: tMarker, src: b.src, off: b.off, end: b.end, idx: -1}}
				}
				add(arg, b)
				continue
			}
			if expanded[k] == nil {
				expanded[k] = p.expand(arg)
				if expanded[k] == nil {
					expanded[k] = []token{}
				}
			}
			add(expanded[k], b)
			continue
		}
		add([]token{b}, b)
	}
	res := out[:0]
	for _, t := range out {
		if t.kind == tMarker {
			continue
		}
		t.gen = true
		t.bol = false
		t.hide = mergeHide(t.hide, hide)
		res = append(res, t)
	}
	if len(res) > 0 {
		res[0].space = use.space
	}
	return res
}

// mergeHide returns the union of a and b. Hide sets are never changed
// in place, so the result may be a or b itself.
func mergeHide(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	if !slices.ContainsFunc(b, func(s string) bool { return indexOf(a, s) < 0 }) {
		return a
	}
	h := make([]string, len(a), len(a)+len(b))
	copy(h, a)
	for _, s := range b {
		if indexOf(h, s) < 0 {
			h = append(h, s)
		}
	}
	return h
}

// paste joins two tokens with ##; the result must be one token.
func (p *pp) paste(l, r token) token {
	if r.kind == tMarker {
		return l
	}
	if l.kind == tMarker {
		r.space = l.space
		return r
	}
	text := l.text + r.text
	src := &source{file: syntax.NewFile("<paste>", []byte(text)), text: []byte(text), found: -1}
	var errs syntax.ErrorList
	toks := lex(src, &errs)
	if len(toks) != 1 || len(errs) > 0 {
		p.errorf(l, "pasting %q and %q does not give a valid token", l.text, r.text)
		return l
	}
	l.kind, l.text = toks[0].kind, text
	return l
}

// stringize makes the string literal # makes of an argument.
func stringize(arg []token) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, t := range arg {
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		if t.kind == tString || t.kind == tChar {
			for j := 0; j < len(t.text); j++ {
				if c := t.text[j]; c == '"' || c == '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(t.text[j])
			}
			continue
		}
		b.WriteString(t.text)
	}
	b.WriteByte('"')
	return b.String()
}
