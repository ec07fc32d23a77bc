package preprocess

import (
	"bytes"

	"kinst.dev/kinst/syntax"
)

type kind uint8

const (
	tIdent  kind = iota
	tNumber      // a preprocessing number: 1, 0x10, 1_000, 2ULL
	tString      // "..."
	tChar        // '...'
	tPunct       // one punctuator; only "#", "##" and "..." are longer than a byte
	tSigil       // $name, $1, $#, @name: bpftrace's variables, never expanded
	tMarker      // an empty macro argument next to ##, gone after pasting
)

// A token is one preprocessing token with where it was written.
type token struct {
	text string
	src  *source
	// hide lists the macros whose expansion produced this token and
	// that therefore must not expand it again, outermost first.
	hide  []string
	off   int32 // first byte in src
	end   int32 // one past its last byte in src
	idx   int32 // index in src's token list; -1 for a made token
	kind  kind
	space bool // white space or a comment before it
	bol   bool // first on its line
	gen   bool // copied by a macro expansion rather than read in place
	noexp bool // in an attach point, where names are not macros
}

func (t *token) is(kind kind, text string) bool { return t.kind == kind && t.text == text }

// A source is one file the preprocessor reads.
type source struct {
	file   *syntax.File
	text   []byte
	dir    string // for #include "..."
	system bool   // macros only
	// found is the index of the search directory the file was found in,
	// where #include_next goes on; -1 when it was not found by a search.
	found int
	str   string // text as a string, made by the first lexer
	lazy  bool   // file and text are read only when a position needs them
}

func (s *source) pos(off int32) syntax.Pos { return s.file.Pos(int(off)) }

// lexer splits a source into tokens.
type lexer struct {
	src   *source
	b     []byte
	i     int
	errs  *syntax.ErrorList
	space bool   // white space since the last token
	bol   bool   // a newline since the last token
	n     int32  // tokens so far
	str   string // b as a string, which tokens' texts share
}

// splice skips backslash-newlines at i.
func (l *lexer) splice(i int) int {
	for i+1 < len(l.b) && l.b[i] == '\\' {
		switch {
		case l.b[i+1] == '\n':
			i += 2
		case l.b[i+1] == '\r' && i+2 < len(l.b) && l.b[i+2] == '\n':
			i += 3
		default:
			return i
		}
	}
	return i
}

// at returns the byte at i after splices and the index past it; false
// at the end of the text.
func (l *lexer) at(i int) (byte, int, bool) {
	if i < len(l.b) && l.b[i] != '\\' {
		return l.b[i], i + 1, true
	}
	i = l.splice(i)
	if i >= len(l.b) {
		return 0, i, false
	}
	return l.b[i], i + 1, true
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lex returns every token of src.
func lex(src *source, errs *syntax.ErrorList) []token {
	l := newLexer(src, errs)
	toks := make([]token, 0, len(l.b)/6) // sized from the text to spare growing
	for {
		t, ok := l.next()
		if !ok {
			return toks
		}
		toks = append(toks, t)
	}
}

func newLexer(src *source, errs *syntax.ErrorList) *lexer {
	if src.str == "" {
		src.str = string(src.text) // once per file, however often it is lexed
	}
	l := &lexer{src: src, b: src.text, str: src.str, errs: errs, bol: true}
	if bytes.HasPrefix(l.b, []byte("#!")) {
		// An interpreter line, as the parser skips it.
		for l.i < len(l.b) && l.b[l.i] != '\n' {
			l.i++
		}
	}
	return l
}

// next returns the next token; false at the end of the text or at an
// unterminated comment.
func (l *lexer) next() (token, bool) {
	src := l.src
	for {
		c, next, ok := l.at(l.i)
		if !ok {
			return token{}, false
		}
		start := l.splice(l.i)
		switch {
		case c == '\n':
			l.space, l.bol = true, true
			l.i = next
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.space = true
			l.i = next
			continue
		case c == '/':
			if c2, n2, _ := l.at(next); c2 == '/' {
				i := n2
				for {
					c3, n3, ok := l.at(i)
					if !ok || c3 == '\n' {
						break
					}
					i = n3
				}
				l.i = i
				l.space = true
				continue
			} else if c2 == '*' {
				i := n2
				closed := false
				for {
					c3, n3, ok := l.at(i)
					if !ok {
						break
					}
					if c3 == '*' {
						if c4, n4, _ := l.at(n3); c4 == '/' {
							i, closed = n4, true
							break
						}
					}
					i = n3
				}
				if !closed {
					l.errs.Add(src.file, src.file.Pos(start), src.file.Pos(start+2), "comment not terminated")
					l.i = len(l.b)
					return token{}, false
				}
				l.i = i
				l.space = true
				continue
			}
		}
		if l.bol && c != '#' && src.system {
			// Only directives matter in a system header: skip its text
			// without making tokens.
			l.i = l.skipLine(start)
			continue
		}
		t := token{src: src, off: int32(start), space: l.space, bol: l.bol, idx: l.n}
		l.space, l.bol = false, false
		l.n++
		i := next
		switch {
		case isIdent(c) && !isDigit(c):
			t.kind = tIdent
			i = l.run(i, isIdent)
			// L'x', u"x" and the like are literals with a prefix.
			if q, n, _ := l.at(i); (q == '\'' || q == '"') && i-start <= 2 {
				switch l.text(start, i) {
				case "L", "u", "U", "u8":
					t.kind = tString
					if q == '\'' {
						t.kind = tChar
					}
					i = l.quoted(n, q)
				}
			}
		case isDigit(c) || c == '.' && isDigit(l.peek(next)):
			t.kind = tNumber
			for {
				c2, n2, _ := l.at(i)
				if isIdent(c2) || c2 == '.' {
					i = n2
					if c2 == 'e' || c2 == 'E' || c2 == 'p' || c2 == 'P' {
						if c3, n3, _ := l.at(i); c3 == '+' || c3 == '-' {
							i = n3
						}
					}
					continue
				}
				break
			}
		case c == '"' || c == '\'':
			t.kind = tString
			if c == '\'' {
				t.kind = tChar
			}
			i = l.quoted(i, c)
		case (c == '$' || c == '@') && (isIdent(l.peek(next)) || c == '$' && l.peek(next) == '#'):
			t.kind = tSigil
			if c2, n2, _ := l.at(i); c2 == '#' {
				i = n2
			} else {
				i = l.run(i, isIdent)
			}
		default:
			t.kind = tPunct
			switch c2, n2, _ := l.at(i); {
			case c == '#' && c2 == '#':
				i = n2
			case c == '.' && c2 == '.':
				if c3, n3, _ := l.at(n2); c3 == '.' {
					i = n3
				}
			}
		}
		t.end = int32(i)
		t.text = l.text(start, i)
		l.i = i
		return t, true
	}
}

// skipLine skips the rest of a line of text, to its newline, jumping
// over comments and literals, which may hide newlines or a comment's
// start.
func (l *lexer) skipLine(i int) int {
	for i < len(l.b) {
		switch l.b[i] {
		case '\n':
			return i
		case '\\':
			i = l.splice(i)
			if i < len(l.b) && l.b[i] == '\\' {
				i++
			}
		case '"', '\'':
			i = l.quoted(i+1, l.b[i])
		case '/':
			switch {
			case i+1 < len(l.b) && l.b[i+1] == '/':
				return i // the main loop reads the comment to the newline
			case i+1 < len(l.b) && l.b[i+1] == '*':
				end := bytes.Index(l.b[i+2:], []byte("*/"))
				if end < 0 {
					return i // the main loop reports it
				}
				i += 2 + end + 2
			default:
				i++
			}
		default:
			i++
		}
	}
	return i
}

func (l *lexer) peek(i int) byte {
	c, _, _ := l.at(i)
	return c
}

// run skips bytes for which ok holds.
func (l *lexer) run(i int, ok func(byte) bool) int {
	for {
		c, n, more := l.at(i)
		if !more || !ok(c) {
			return i
		}
		i = n
	}
}

// quoted skips a string or character literal's body after its opening
// quote. An unterminated one ends with its line, and the parser (or the
// #if evaluator) complains about it.
func (l *lexer) quoted(i int, q byte) int {
	for {
		c, n, ok := l.at(i)
		switch {
		case !ok || c == '\n':
			return i
		case c == q:
			return n
		case c == '\\':
			if c2, n2, ok := l.at(n); ok && c2 != '\n' {
				n = n2
			}
		}
		i = n
	}
}

// text returns the bytes of [start, end) without backslash-newlines,
// as a piece of the source's one string where it can.
func (l *lexer) text(start, end int) string {
	b := l.b[start:end]
	if bytes.IndexByte(b, '\\') < 0 {
		return l.str[start:end]
	}
	var out []byte
	for i := start; i < end; {
		i = l.splice(i)
		if i >= end {
			break
		}
		out = append(out, l.b[i])
		i++
	}
	return string(out)
}
