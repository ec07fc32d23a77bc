package syntax

// Node is any node of the syntax tree.
type Node interface {
	Pos() Pos // first byte
	End() Pos // one past the last byte
}

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a statement node.
type Stmt interface {
	Node
	stmtNode()
}

// A Program is a whole source file.
type Program struct {
	File  *File
	Decls []*Decl // C type declarations, in source order
	// Config is the config block's items, nil without one.
	Config   []*ConfigItem
	MapDecls []*MapDecl
	Probes   []*Probe
	// Macros are bpftrace 0.26's macro definitions; Expand substitutes
	// their calls and empties the list.
	Macros []*Macro
	// Imports are the files the program imports (bpftrace 0.26);
	// ResolveImports reads them.
	Imports []*Import
}

// A Probe is a header of attach points, an optional predicate and a body.
type Probe struct {
	Points []*AttachPoint
	Pred   Expr // nil without a /predicate/
	Body   *Block
}

func (p *Probe) Pos() Pos { return p.Points[0].Pos() }
func (p *Probe) End() Pos { return p.Body.End() }

// An AttachPoint names where a probe fires, as written: the provider (in
// its full name; "k" becomes "kprobe") and the colon-separated parts that
// follow it, with quotes removed. BEGIN and END have no parts.
type AttachPoint struct {
	SpecPos  Pos
	Raw      string // the text as written
	Provider string
	Parts    []string
}

func (a *AttachPoint) Pos() Pos { return a.SpecPos }
func (a *AttachPoint) End() Pos { return a.SpecPos + Pos(len(a.Raw)) }

// A Block is a braced list of statements.
type Block struct {
	Lbrace Pos
	Stmts  []Stmt
	Rbrace Pos
}

func (b *Block) Pos() Pos { return b.Lbrace }
func (b *Block) End() Pos { return b.Rbrace + 1 }

// Statements.
type (
	// ExprStmt is an expression evaluated for its effect: a call, ++ or --.
	ExprStmt struct {
		X Expr
	}

	// AssignStmt stores to a map element or a scratch variable; Op is
	// ASSIGN or a compound assignment such as ADD_ASSIGN.
	AssignStmt struct {
		Lhs   Expr // *MapExpr or *VarExpr
		OpPos Pos
		Op    Token
		Rhs   Expr
	}

	// IfStmt is if, with else if chains as nested IfStmts in Else.
	IfStmt struct {
		If   Pos
		Cond Expr
		Then *Block
		Else Stmt // nil, *Block or *IfStmt
	}

	// UnrollStmt repeats its body Count times at compile time.
	UnrollStmt struct {
		Unroll Pos
		Count  Expr
		Body   *Block
	}

	// WhileStmt is a loop the verifier must be able to bound.
	WhileStmt struct {
		While Pos
		Cond  Expr
		Body  *Block
	}

	// ForStmt is for ($v : From..To), a loop over the integers from
	// From up to To, excluded, as bpftrace 0.24 has it; or, with Map
	// set instead, for ($v : @map) over a map's elements (bpftrace 0.21).
	ForStmt struct {
		For      Pos
		Var      *VarExpr
		From, To Expr
		Map      *MapExpr
		Body     *Block
	}

	// JumpStmt is return, break or continue. X is the value a return
	// names (bpftrace 0.26 takes one in a probe and ignores it), or nil.
	JumpStmt struct {
		TokPos Pos
		Tok    Token
		X      Expr
	}
)

func (s *ExprStmt) Pos() Pos   { return s.X.Pos() }
func (s *ExprStmt) End() Pos   { return s.X.End() }
func (s *AssignStmt) Pos() Pos { return s.Lhs.Pos() }
func (s *AssignStmt) End() Pos { return s.Rhs.End() }
func (s *IfStmt) Pos() Pos     { return s.If }
func (s *IfStmt) End() Pos {
	if s.Else != nil {
		return s.Else.End()
	}
	return s.Then.End()
}
func (s *UnrollStmt) Pos() Pos { return s.Unroll }
func (s *UnrollStmt) End() Pos { return s.Body.End() }
func (s *WhileStmt) Pos() Pos  { return s.While }
func (s *WhileStmt) End() Pos  { return s.Body.End() }
func (s *ForStmt) Pos() Pos    { return s.For }
func (s *ForStmt) End() Pos    { return s.Body.End() }
func (s *JumpStmt) Pos() Pos   { return s.TokPos }
func (s *JumpStmt) End() Pos {
	if s.X != nil {
		return s.X.End()
	}
	return s.TokPos + Pos(len(s.Tok.String()))
}
func (b *Block) stmtNode()    {}
func (*ExprStmt) stmtNode()   {}
func (*AssignStmt) stmtNode() {}
func (*IfStmt) stmtNode()     {}
func (*UnrollStmt) stmtNode() {}
func (*WhileStmt) stmtNode()  {}
func (*ForStmt) stmtNode()    {}
func (*JumpStmt) stmtNode()   {}

// Expressions.
type (
	// IntLit is an integer literal; Value holds its bits and Raw its
	// spelling.
	IntLit struct {
		ValuePos Pos
		Raw      string
		Value    uint64
	}

	// StringLit is a string literal with its escapes resolved.
	StringLit struct {
		ValuePos Pos
		EndPos   Pos
		Value    string
	}

	// Ident is a bare name: a builtin such as pid or args.
	Ident struct {
		NamePos Pos
		Name    string
	}

	// VarExpr is a scratch variable, $name.
	VarExpr struct {
		NamePos Pos
		Name    string // without the $
	}

	// ParamExpr is a positional parameter $N, or $# when Count is set.
	ParamExpr struct {
		NamePos Pos
		N       int
		Count   bool
		EndPos  Pos
	}

	// MapExpr is @name or @name[k1, k2]; Name is "" for the anonymous @.
	MapExpr struct {
		NamePos Pos
		Name    string
		Keys    []Expr // nil for a map without keys
		Rbrack  Pos
	}

	// CallExpr calls a builtin function.
	CallExpr struct {
		Fun    *Ident
		Args   []Expr
		Rparen Pos
	}

	// UnaryExpr is -x, !x, ~x, *x (dereference) or &x.
	UnaryExpr struct {
		OpPos Pos
		Op    Token
		X     Expr
	}

	// IncDecExpr is x++, x--, ++x or --x on a map element or variable.
	IncDecExpr struct {
		X      Expr
		OpPos  Pos
		Op     Token // INC or DEC
		Prefix bool
	}

	// BinaryExpr is x op y.
	BinaryExpr struct {
		X     Expr
		OpPos Pos
		Op    Token
		Y     Expr
	}

	// CondExpr is c ? x : y, or c ?: y with X nil: c's value when it
	// is not zero, evaluated once. With If set it is bpftrace 0.26's
	// if (c) { x } else { y } used as a value: X is then a *BlockExpr
	// and Y one too, or the CondExpr of an else if.
	CondExpr struct {
		If   Pos
		Cond Expr
		X, Y Expr
	}

	// CastExpr is (type)x.
	CastExpr struct {
		Lparen Pos
		Type   *TypeExpr
		X      Expr
	}

	// FieldExpr is x.name, x->name, or x.N on a tuple.
	FieldExpr struct {
		X       Expr
		Arrow   bool
		Name    string
		NamePos Pos
	}

	// IndexExpr is x[i] on an array or pointer.
	IndexExpr struct {
		X      Expr
		Index  Expr
		Rbrack Pos
	}

	// TupleExpr is (a, b, …) with at least two elements, or a record
	// (a = x, b = y) of bpftrace 0.26 when Names, one per element, is
	// set.
	TupleExpr struct {
		Lparen Pos
		Names  []*Ident
		Elems  []Expr
		Rparen Pos
	}

	// ParenExpr is (x), kept so the printer can round-trip.
	ParenExpr struct {
		Lparen Pos
		X      Expr
		Rparen Pos
	}

	// SizeofExpr is sizeof(type) or sizeof(expr).
	SizeofExpr struct {
		Sizeof Pos
		Type   *TypeExpr // one of Type and X is set
		X      Expr
		Rparen Pos
	}

	// OffsetofExpr is offsetof(struct name, field), where field may
	// name a member of a member, as in a.b.
	OffsetofExpr struct {
		Offsetof Pos
		Type     *TypeExpr
		Field    string
		Rparen   Pos
	}

	// TypeExpr names a type in a cast, sizeof or offsetof: an integer
	// type such as uint32, or struct/union/enum NAME, with Ptr levels of
	// pointer.
	TypeExpr struct {
		NamePos Pos
		Kind    Token // IDENT, STRUCT, UNION or ENUM
		Name    string
		Ptr     int
		// Len is N in string[N] or an array type T[N], -1 in T[] (a
		// cast's, sized by the value cast), else 0.
		Len int
		// Of is the operand of typeof(…) (Name "typeof"): a
		// *TypeExpr or an expression whose type is meant.
		Of     Node
		EndPos Pos
	}
)

func (x *IntLit) Pos() Pos       { return x.ValuePos }
func (x *IntLit) End() Pos       { return x.ValuePos + Pos(len(x.Raw)) }
func (x *StringLit) Pos() Pos    { return x.ValuePos }
func (x *StringLit) End() Pos    { return x.EndPos }
func (x *Ident) Pos() Pos        { return x.NamePos }
func (x *Ident) End() Pos        { return x.NamePos + Pos(len(x.Name)) }
func (x *VarExpr) Pos() Pos      { return x.NamePos }
func (x *VarExpr) End() Pos      { return x.NamePos + Pos(len(SourceName(x.Name))+1) }
func (x *ParamExpr) Pos() Pos    { return x.NamePos }
func (x *ParamExpr) End() Pos    { return x.EndPos }
func (x *MapExpr) Pos() Pos      { return x.NamePos }
func (x *CallExpr) Pos() Pos     { return x.Fun.Pos() }
func (x *CallExpr) End() Pos     { return x.Rparen + 1 }
func (x *UnaryExpr) Pos() Pos    { return x.OpPos }
func (x *UnaryExpr) End() Pos    { return x.X.End() }
func (x *BinaryExpr) Pos() Pos   { return x.X.Pos() }
func (x *BinaryExpr) End() Pos   { return x.Y.End() }
func (x *CondExpr) End() Pos     { return x.Y.End() }
func (x *CastExpr) Pos() Pos     { return x.Lparen }
func (x *CastExpr) End() Pos     { return x.X.End() }
func (x *FieldExpr) Pos() Pos    { return x.X.Pos() }
func (x *FieldExpr) End() Pos    { return x.NamePos + Pos(len(x.Name)) }
func (x *IndexExpr) Pos() Pos    { return x.X.Pos() }
func (x *IndexExpr) End() Pos    { return x.Rbrack + 1 }
func (x *TupleExpr) Pos() Pos    { return x.Lparen }
func (x *TupleExpr) End() Pos    { return x.Rparen + 1 }
func (x *ParenExpr) Pos() Pos    { return x.Lparen }
func (x *ParenExpr) End() Pos    { return x.Rparen + 1 }
func (x *SizeofExpr) Pos() Pos   { return x.Sizeof }
func (x *SizeofExpr) End() Pos   { return x.Rparen + 1 }
func (x *OffsetofExpr) Pos() Pos { return x.Offsetof }
func (x *OffsetofExpr) End() Pos { return x.Rparen + 1 }
func (x *TypeExpr) Pos() Pos     { return x.NamePos }
func (x *TypeExpr) End() Pos     { return x.EndPos }

// Pos is where an if used as a value starts, at its if.
func (x *CondExpr) Pos() Pos {
	if x.If.IsValid() {
		return x.If
	}
	return x.Cond.Pos()
}

func (x *MapExpr) End() Pos {
	if x.Keys != nil {
		return x.Rbrack + 1
	}
	return x.NamePos + Pos(len(x.Name)+1)
}

func (x *IncDecExpr) Pos() Pos {
	if x.Prefix {
		return x.OpPos
	}
	return x.X.Pos()
}

func (x *IncDecExpr) End() Pos {
	if x.Prefix {
		return x.X.End()
	}
	return x.OpPos + 2
}

func (*IntLit) exprNode()       {}
func (*StringLit) exprNode()    {}
func (*Ident) exprNode()        {}
func (*VarExpr) exprNode()      {}
func (*ParamExpr) exprNode()    {}
func (*MapExpr) exprNode()      {}
func (*CallExpr) exprNode()     {}
func (*UnaryExpr) exprNode()    {}
func (*IncDecExpr) exprNode()   {}
func (*BinaryExpr) exprNode()   {}
func (*CondExpr) exprNode()     {}
func (*CastExpr) exprNode()     {}
func (*FieldExpr) exprNode()    {}
func (*IndexExpr) exprNode()    {}
func (*TupleExpr) exprNode()    {}
func (*ParenExpr) exprNode()    {}
func (*SizeofExpr) exprNode()   {}
func (*OffsetofExpr) exprNode() {}

// Unparen strips any parentheses around x.
func Unparen(x Expr) Expr {
	for {
		p, ok := x.(*ParenExpr)
		if !ok {
			return x
		}
		x = p.X
	}
}

// BadExpr stands where an expression could not be parsed, so that the
// tree stays whole after an error.
type BadExpr struct {
	From, To Pos
}

func (x *BadExpr) Pos() Pos { return x.From }
func (x *BadExpr) End() Pos { return x.To }
func (*BadExpr) exprNode()  {}

func (p *Program) Pos() Pos { return p.File.Pos(0) }
func (p *Program) End() Pos { return p.File.Pos(len(p.File.Src)) }
