package syntax

import (
	"strings"
)

// A scanner splits a File's source into tokens. The parser switches it
// into attach-point mode where a probe's header is expected, because an
// attach point such as uprobe:/bin/bash:readline is not made of ordinary
// tokens.
type scanner struct {
	file *File
	src  []byte
	off  int // next byte to read
	errs *ErrorList
}

func (s *scanner) init(f *File, errs *ErrorList) {
	s.file = f
	s.src = f.Src
	s.errs = errs
	s.skipHeader()
}

// skipHeader drops a "#!" interpreter line so scripts can be executable.
func (s *scanner) skipHeader() {
	if strings.HasPrefix(string(s.src), "#!") {
		for s.off < len(s.src) && s.src[s.off] != '\n' {
			s.off++
		}
	}
}

func (s *scanner) error(off, end int, format string, args ...any) {
	s.errs.Add(s.file, s.file.Pos(off), s.file.Pos(end), format, args...)
}

// skipSpace skips white space, comments and preprocessor directives: a
// program compiled by kinst has had them carried out by package
// preprocess, and a parse without it (tools, tests) ignores them.
func (s *scanner) skipSpace() {
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.off++
		case c == '/' && s.peek(1) == '/':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.off++
			}
		case c == '/' && s.peek(1) == '*':
			start := s.off
			end := strings.Index(string(s.src[s.off+2:]), "*/")
			if end < 0 {
				s.error(start, start+2, "comment not terminated")
				s.off = len(s.src)
				return
			}
			s.off += 2 + end + 2
		case c == '#' && s.atLineStart():
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.off++
			}
		default:
			return
		}
	}
}

func (s *scanner) atLineStart() bool {
	for i := s.off - 1; i >= 0; i-- {
		switch s.src[i] {
		case ' ', '\t':
			continue
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func (s *scanner) peek(n int) byte {
	if s.off+n < len(s.src) {
		return s.src[s.off+n]
	}
	return 0
}

func isLetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scan returns the next token, its start and end offsets, and its
// literal text: the name for IDENT, VAR and MAP (without the sigil), the
// digits for INT and PARAM, and the unescaped value for STRING.
func (s *scanner) scan() (tok Token, start, end int, lit string) {
	s.skipSpace()
	start = s.off
	if s.off >= len(s.src) {
		return EOF, start, start, ""
	}
	c := s.src[s.off]
	switch {
	case isLetter(c):
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.off++
		}
		lit = string(s.src[start:s.off])
		if kw, ok := keywords[lit]; ok {
			return kw, start, s.off, lit
		}
		return IDENT, start, s.off, lit
	case isDigit(c):
		return s.scanNumber(start)
	case c == '"':
		return s.scanString(start)
	case c == '$':
		s.off++
		switch {
		case s.off < len(s.src) && s.src[s.off] == '#':
			s.off++
			return NPARAMS, start, s.off, "#"
		case s.off < len(s.src) && isDigit(s.src[s.off]):
			for s.off < len(s.src) && isDigit(s.src[s.off]) {
				s.off++
			}
			return PARAM, start, s.off, string(s.src[start+1 : s.off])
		case s.off < len(s.src) && isLetter(s.src[s.off]):
			for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
				s.off++
			}
			return VAR, start, s.off, string(s.src[start+1 : s.off])
		}
		s.error(start, s.off, "'$' must be followed by a variable name, a number or '#'")
		return ILLEGAL, start, s.off, "$"
	case c == '@':
		s.off++
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.off++
		}
		return MAP, start, s.off, string(s.src[start+1 : s.off])
	}
	s.off++
	two := func(next byte, yes, no Token) Token {
		if s.off < len(s.src) && s.src[s.off] == next {
			s.off++
			return yes
		}
		return no
	}
	switch c {
	case '(':
		tok = LPAREN
	case ')':
		tok = RPAREN
	case '{':
		tok = LBRACE
	case '}':
		tok = RBRACE
	case '[':
		tok = LBRACK
	case ']':
		tok = RBRACK
	case ',':
		tok = COMMA
	case ';':
		tok = SEMICOLON
	case ':':
		tok = COLON
	case '?':
		tok = QUESTION
	case '.':
		tok = two('.', DOTDOT, DOT)
	case '~':
		tok = TILDE
	case '=':
		tok = two('=', EQL, ASSIGN)
	case '!':
		tok = two('=', NEQ, NOT)
	case '*':
		tok = two('=', MUL_ASSIGN, MUL)
	case '/':
		tok = two('=', QUO_ASSIGN, QUO)
	case '%':
		tok = two('=', REM_ASSIGN, REM)
	case '^':
		tok = two('=', XOR_ASSIGN, XOR)
	case '+':
		if tok = two('+', INC, ILLEGAL); tok == ILLEGAL {
			tok = two('=', ADD_ASSIGN, ADD)
		}
	case '-':
		switch {
		case s.off < len(s.src) && s.src[s.off] == '-':
			s.off++
			tok = DEC
		case s.off < len(s.src) && s.src[s.off] == '>':
			s.off++
			tok = ARROW
		default:
			tok = two('=', SUB_ASSIGN, SUB)
		}
	case '&':
		if tok = two('&', LAND, ILLEGAL); tok == ILLEGAL {
			tok = two('=', AND_ASSIGN, AND)
		}
	case '|':
		if tok = two('|', LOR, ILLEGAL); tok == ILLEGAL {
			tok = two('=', OR_ASSIGN, OR)
		}
	case '<':
		if tok = two('<', SHL, ILLEGAL); tok == SHL {
			tok = two('=', SHL_ASSIGN, SHL)
		} else {
			tok = two('=', LEQ, LSS)
		}
	case '>':
		if tok = two('>', SHR, ILLEGAL); tok == SHR {
			tok = two('=', SHR_ASSIGN, SHR)
		} else {
			tok = two('=', GEQ, GTR)
		}
	default:
		s.error(start, s.off, "unexpected character %q", rune(c))
		return ILLEGAL, start, s.off, string(c)
	}
	return tok, start, s.off, ""
}

// scanNumber reads a decimal, hexadecimal (0x) or octal (leading 0)
// integer; underscores may separate digits. The literal is returned with
// the underscores removed; the parser converts it.
func (s *scanner) scanNumber(start int) (Token, int, int, string) {
	for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
		s.off++
	}
	lit := strings.ReplaceAll(string(s.src[start:s.off]), "_", "")
	return INT, start, s.off, lit
}

// scanString reads a double-quoted string and resolves C escapes.
func (s *scanner) scanString(start int) (Token, int, int, string) {
	s.off++ // opening quote
	var b strings.Builder
	for {
		if s.off >= len(s.src) || s.src[s.off] == '\n' {
			s.error(start, s.off, "string not terminated")
			return STRING, start, s.off, b.String()
		}
		c := s.src[s.off]
		if c == '"' {
			s.off++
			return STRING, start, s.off, b.String()
		}
		if c != '\\' {
			b.WriteByte(c)
			s.off++
			continue
		}
		escStart := s.off
		s.off++
		if s.off >= len(s.src) {
			continue
		}
		e := s.src[s.off]
		s.off++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'e':
			b.WriteByte(0x1b)
		case '\\', '"', '\'':
			b.WriteByte(e)
		case 'x':
			v, n := 0, 0
			for n < 2 && s.off < len(s.src) && isHex(s.src[s.off]) {
				v = v*16 + hexVal(s.src[s.off])
				s.off++
				n++
			}
			if n == 0 {
				s.error(escStart, s.off, "\\x needs hexadecimal digits")
			}
			b.WriteByte(byte(v))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, n := int(e-'0'), 1
			for n < 3 && s.off < len(s.src) && s.src[s.off] >= '0' && s.src[s.off] <= '7' {
				v = v*8 + int(s.src[s.off]-'0')
				s.off++
				n++
			}
			if v > 255 {
				s.error(escStart, s.off, "octal escape out of range")
			}
			b.WriteByte(byte(v))
		default:
			s.error(escStart, s.off, "unknown escape sequence \\%c", e)
		}
	}
}

// partFollows reports whether a colon, and so another part of the attach
// point, comes before the end of the attach point: a predicate holds no
// colon, while a path in the middle of an attach point is followed by one.
func (s *scanner) partFollows() bool {
	for _, c := range s.src[s.off:] {
		switch c {
		case ':':
			return true
		case ' ', '\t', '\n', '\r', ',', '{', '}':
			return false
		}
	}
	return false
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// scanProbeSpec reads one attach point: everything up to white space, a
// comma or a brace. A slash belongs to the attach point when it starts a
// path (right after a colon, or inside a part that is already a path), or
// when another part follows, as in the relative path of
// uprobe:bin/prog:main; otherwise it ends it and opens the predicate. Double quotes protect
// anything, such as a path with spaces or a C++ symbol with colons.
func (s *scanner) scanProbeSpec() (tok Token, start, end int, lit string) {
	s.skipSpace()
	start = s.off
	if s.off >= len(s.src) {
		return EOF, start, start, ""
	}
	partStart := s.off
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch c {
		case ' ', '\t', '\n', '\r', ',', '{', '}':
			goto done
		case '"':
			close := strings.IndexByte(string(s.src[s.off+1:]), '"')
			if close < 0 {
				s.error(s.off, len(s.src), "string not terminated")
				s.off = len(s.src)
				goto done
			}
			s.off += close + 2
			continue
		case ':':
			partStart = s.off + 1
		case '/':
			part := s.src[partStart:s.off]
			inPath := s.off == partStart || len(part) > 0 && (part[0] == '/' || part[0] == '.' || part[0] == '"') ||
				s.partFollows()
			if !inPath {
				goto done
			}
		}
		s.off++
	}
done:
	if s.off == start {
		tok, start, end, lit = s.scan()
		return tok, start, end, lit
	}
	return PROBESPEC, start, s.off, string(s.src[start:s.off])
}
