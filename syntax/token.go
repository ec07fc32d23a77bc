package syntax

// Token is the kind of a lexical token.
type Token int

// The tokens. Operators carry their source spelling in tokenText.
const (
	ILLEGAL Token = iota
	EOF

	IDENT     // pid, comm, printf, uint32
	INT       // 42, 0x2a, 052, 1_000
	STRING    // "text"
	VAR       // $name
	PARAM     // $1 … $N
	NPARAMS   // $#
	MAP       // @name or @
	PROBESPEC // an attach point such as tracepoint:syscalls:sys_enter_openat

	LPAREN    // (
	RPAREN    // )
	LBRACE    // {
	RBRACE    // }
	LBRACK    // [
	RBRACK    // ]
	COMMA     // ,
	SEMICOLON // ;
	COLON     // :
	QUESTION  // ?
	DOT       // .
	DOTDOT    // ..
	ARROW     // ->

	ASSIGN     // =
	ADD_ASSIGN // +=
	SUB_ASSIGN // -=
	MUL_ASSIGN // *=
	QUO_ASSIGN // /=
	REM_ASSIGN // %=
	AND_ASSIGN // &=
	OR_ASSIGN  // |=
	XOR_ASSIGN // ^=
	SHL_ASSIGN // <<=
	SHR_ASSIGN // >>=

	INC // ++
	DEC // --

	LOR   // ||
	LAND  // &&
	OR    // |
	XOR   // ^
	AND   // &
	EQL   // ==
	NEQ   // !=
	LSS   // <
	LEQ   // <=
	GTR   // >
	GEQ   // >=
	SHL   // <<
	SHR   // >>
	ADD   // +
	SUB   // -
	MUL   // *
	QUO   // /
	REM   // %
	NOT   // !
	TILDE // ~

	keywordStart
	IF
	ELSE
	UNROLL
	WHILE
	FOR
	RETURN
	BREAK
	CONTINUE
	SIZEOF
	OFFSETOF
	STRUCT
	UNION
	ENUM
	keywordEnd
)

var tokenText = [...]string{
	ILLEGAL:   "illegal token",
	EOF:       "end of program",
	IDENT:     "identifier",
	INT:       "integer",
	STRING:    "string",
	VAR:       "variable",
	PARAM:     "positional parameter",
	NPARAMS:   "$#",
	MAP:       "map",
	PROBESPEC: "attach point",
	LPAREN:    "(",
	RPAREN:    ")",
	LBRACE:    "{",
	RBRACE:    "}",
	LBRACK:    "[",
	RBRACK:    "]",
	COMMA:     ",",
	SEMICOLON: ";",
	COLON:     ":",
	QUESTION:  "?",
	DOT:       ".",
	DOTDOT:    "..",
	ARROW:     "->",

	ASSIGN:     "=",
	ADD_ASSIGN: "+=",
	SUB_ASSIGN: "-=",
	MUL_ASSIGN: "*=",
	QUO_ASSIGN: "/=",
	REM_ASSIGN: "%=",
	AND_ASSIGN: "&=",
	OR_ASSIGN:  "|=",
	XOR_ASSIGN: "^=",
	SHL_ASSIGN: "<<=",
	SHR_ASSIGN: ">>=",
	INC:        "++",
	DEC:        "--",

	LOR:   "||",
	LAND:  "&&",
	OR:    "|",
	XOR:   "^",
	AND:   "&",
	EQL:   "==",
	NEQ:   "!=",
	LSS:   "<",
	LEQ:   "<=",
	GTR:   ">",
	GEQ:   ">=",
	SHL:   "<<",
	SHR:   ">>",
	ADD:   "+",
	SUB:   "-",
	MUL:   "*",
	QUO:   "/",
	REM:   "%",
	NOT:   "!",
	TILDE: "~",

	IF:       "if",
	ELSE:     "else",
	UNROLL:   "unroll",
	WHILE:    "while",
	FOR:      "for",
	RETURN:   "return",
	BREAK:    "break",
	CONTINUE: "continue",
	SIZEOF:   "sizeof",
	OFFSETOF: "offsetof",
	STRUCT:   "struct",
	UNION:    "union",
	ENUM:     "enum",
}

func (t Token) String() string {
	if t >= 0 && int(t) < len(tokenText) && tokenText[t] != "" {
		return tokenText[t]
	}
	return "token"
}

var keywords = func() map[string]Token {
	m := make(map[string]Token)
	for t := keywordStart + 1; t < keywordEnd; t++ {
		m[tokenText[t]] = t
	}
	return m
}()

// precedence returns the binding strength of a binary operator, or 0 for
// a token that is not one. Higher binds tighter, as in C.
func (t Token) precedence() int {
	switch t {
	case LOR:
		return 1
	case LAND:
		return 2
	case OR:
		return 3
	case XOR:
		return 4
	case AND:
		return 5
	case EQL, NEQ:
		return 6
	case LSS, LEQ, GTR, GEQ:
		return 7
	case SHL, SHR:
		return 8
	case ADD, SUB:
		return 9
	case MUL, QUO, REM:
		return 10
	}
	return 0
}

// IsAssign reports whether t is = or a compound assignment.
func (t Token) IsAssign() bool { return t >= ASSIGN && t <= SHR_ASSIGN }

// BinaryOf returns the binary operator a compound assignment applies:
// ADD for +=, and so on.
func (t Token) BinaryOf() Token {
	switch t {
	case ADD_ASSIGN:
		return ADD
	case SUB_ASSIGN:
		return SUB
	case MUL_ASSIGN:
		return MUL
	case QUO_ASSIGN:
		return QUO
	case REM_ASSIGN:
		return REM
	case AND_ASSIGN:
		return AND
	case OR_ASSIGN:
		return OR
	case XOR_ASSIGN:
		return XOR
	case SHL_ASSIGN:
		return SHL
	case SHR_ASSIGN:
		return SHR
	}
	return ILLEGAL
}
