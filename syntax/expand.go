package syntax

import (
	"fmt"
	"strconv"
	"strings"
)

// An expansion is one copy of a macro's body: the bytes [from, to) of a
// File's Src, made for the call at [call, callEnd).
type expansion struct {
	from, to      Pos
	call, callEnd Pos
	name          string
}

// writeExpansions adds to an error's detail a note for each macro call
// whose expansion p lies in, innermost first.
func (f *File) writeExpansions(b *strings.Builder, p Pos) {
	for _, x := range f.expansions {
		if x.from <= p && p < x.to {
			note := &Error{File: f, Pos: x.call, End: x.callEnd, Msg: "note: in the expansion of macro " + x.name + " called here"}
			b.WriteByte('\n')
			b.WriteString(note.Detail())
			return
		}
	}
}

// ExpandedFrom reports the macro call whose expansion holds p, the
// innermost when calls nest: its start and end. A caller walks the
// chain of calls by asking again about the call's start.
func (f *File) ExpandedFrom(p Pos) (call, end Pos, ok bool) {
	for _, x := range f.expansions {
		if x.from <= p && p < x.to {
			return x.call, x.callEnd, true
		}
	}
	return NoPos, NoPos, false
}

// Expand replaces every call of one of prog's macros with the macro's
// body, and then empties prog.Macros: the rest of the pipeline never
// sees a macro. A call is NAME(args) with as many arguments as the
// macro has parameters, or a bare NAME for a macro without parameters.
//
// A call used as a statement becomes the body's statements, and its
// value if that is a call or an increment. A call in
// an expression becomes the body's final expression, and its
// statements run before the statement the call is in; where that would
// change what runs (a predicate, a loop's condition, the right of && or
// ||, a branch of ?:) only a macro without statements may be called.
//
// Each call gets its own copy of the body's text at the end of a new
// prog.File, whose positions resolve to the body as written, so that an
// error in an expanded body points into the macro and names the call.
// Variables the body assigns are renamed apart for each call, so that
// they are the macro's own. A call whose arguments no definition takes
// is an error, unless builtin (which may be nil) reports its name as a
// builtin's: that call is the builtin's.
// The returned error, if any, is an ErrorList.
func Expand(prog *Program, builtin func(name string) bool) error {
	if len(prog.Macros) == 0 {
		return nil
	}
	orig := prog.File
	e := &expander{
		orig:    orig,
		src:     append([]byte(nil), orig.Src...),
		spans:   []Span{{Off: 0, Orig: orig, OrigOff: 0}},
		macros:  map[string][]*Macro{},
		builtin: builtin,
	}
	for _, m := range prog.Macros {
		if prev := e.lookup(m.Name, len(m.Params)); prev != nil {
			e.errorf(m.NamePos, m.NamePos+Pos(len(m.Name)), "macro %s with %s is defined twice; the first definition is at %s",
				m.Name, count(len(m.Params), "parameter"), orig.Position(prev.NamePos))
			continue
		}
		e.checkParams(m)
		e.macros[m.Name] = append(e.macros[m.Name], m)
	}
	for _, pr := range prog.Probes {
		if pr.Pred != nil {
			pr.Pred = e.expr(pr.Pred, nil, "a predicate")
		}
		pr.Body = e.block(pr.Body)
	}
	f := NewMappedFile(orig.Name, e.src, e.spans)
	f.expansions = e.expansions
	for _, err := range e.errs {
		err.File = f
	}
	prog.File = f
	prog.Macros = nil
	e.errs.Sort()
	return e.errs.Err()
}

type expander struct {
	orig       *File
	src        []byte // orig's source, then one copy of a body per call
	spans      []Span
	expansions []expansion
	macros     map[string][]*Macro // by name, one per number of parameters
	builtin    func(name string) bool
	stack      []*Macro // the calls being expanded, outermost first
	n          int      // expansions so far, to rename variables apart
	errs       ErrorList
}

func (e *expander) errorf(pos, end Pos, format string, args ...any) {
	e.errs = append(e.errs, &Error{Pos: pos, End: end, Msg: fmt.Sprintf(format, args...)})
}

func (e *expander) lookup(name string, arity int) *Macro {
	for _, m := range e.macros[name] {
		if len(m.Params) == arity {
			return m
		}
	}
	return nil
}

// checkParams reports a parameter named twice.
func (e *expander) checkParams(m *Macro) {
	seen := map[string]bool{}
	for _, p := range m.Params {
		name := paramName(p)
		if seen[name] {
			e.errorf(p.Pos(), p.End(), "macro %s has two parameters %s", m.Name, name)
		}
		seen[name] = true
	}
}

// count says n things, as "1 argument" or "2 arguments".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// paramName spells a parameter as written.
func paramName(p Expr) string {
	switch p := p.(type) {
	case *VarExpr:
		return "$" + p.Name
	case *MapExpr:
		return "@" + p.Name
	}
	return p.(*Ident).Name
}

func (e *expander) block(b *Block) *Block {
	b.Stmts = e.stmts(b.Stmts)
	return b
}

func (e *expander) stmts(list []Stmt) []Stmt {
	var out []Stmt
	for _, s := range list {
		out = append(out, e.stmt(s)...)
	}
	return out
}

// stmt expands the macro calls in s, giving s after the statements its
// calls hoist.
func (e *expander) stmt(s Stmt) []Stmt {
	var pre []Stmt
	switch s := s.(type) {
	case *ExprStmt:
		if call, ok := s.X.(*CallExpr); ok {
			for i, a := range call.Args {
				call.Args[i] = e.expr(a, &pre, "")
			}
		}
		if m, args := e.stmtCall(s.X); m != nil {
			stmts, result, _ := e.expand(s.X, m, args)
			stmts = append(pre, stmts...)
			// A value nobody uses is dropped, unless computing it does
			// something.
			switch result.(type) {
			case *CallExpr, *IncDecExpr:
				stmts = append(stmts, &ExprStmt{X: result})
			}
			return stmts
		}
		s.X = e.expr(s.X, &pre, "")
	case *AssignStmt:
		s.Lhs = e.expr(s.Lhs, &pre, "")
		s.Rhs = e.expr(s.Rhs, &pre, "")
	case *LetStmt:
		s.Rhs = e.expr(s.Rhs, &pre, "")
	case *DiscardStmt:
		s.X = e.expr(s.X, &pre, "")
	case *JumpStmt:
		s.X = e.expr(s.X, &pre, "")
	case *IfStmt:
		s.Cond = e.expr(s.Cond, &pre, "")
		s.Then = e.block(s.Then)
		if s.Else != nil {
			els := e.stmt(s.Else)
			if len(els) == 1 {
				s.Else = els[0]
			} else {
				// An else if whose condition calls a macro: its
				// statements run only when the if's condition fails.
				s.Else = &Block{Lbrace: s.Else.Pos(), Stmts: els, Rbrace: s.Else.End() - 1}
			}
		}
	case *UnrollStmt:
		s.Count = e.expr(s.Count, nil, "unroll's count")
		s.Body = e.block(s.Body)
	case *WhileStmt:
		s.Cond = e.expr(s.Cond, nil, "a while condition")
		s.Body = e.block(s.Body)
	case *ForStmt:
		if s.Map == nil {
			s.From = e.expr(s.From, &pre, "")
			s.To = e.expr(s.To, &pre, "")
		}
		s.Body = e.block(s.Body)
	case *Block:
		e.block(s)
	}
	return append(pre, s)
}

// stmtCall returns the macro x calls and the arguments, if x is a
// call of one with the right number of arguments.
func (e *expander) stmtCall(x Expr) (*Macro, []Expr) {
	switch x := x.(type) {
	case *CallExpr:
		return e.lookup(x.Fun.Name, len(x.Args)), x.Args
	case *Ident:
		return e.lookup(x.Name, 0), nil
	}
	return nil, nil
}

// callOf returns the macro x calls and the arguments, if x is a call of
// one.
func (e *expander) callOf(x Expr) (*Macro, []Expr) {
	switch x := x.(type) {
	case *CallExpr:
		if ms := e.macros[x.Fun.Name]; ms != nil {
			if m := e.lookup(x.Fun.Name, len(x.Args)); m != nil {
				return m, x.Args
			}
			// A macro of that name takes other arguments: say so,
			// unless the call is a builtin's.
			if e.builtin != nil && e.builtin(x.Fun.Name) {
				return nil, nil
			}
			m := ms[0]
			e.errorf(x.Pos(), x.End(), "macro %s takes %s, not %d", m.Name, count(len(m.Params), "argument"), len(x.Args))
		}
	case *Ident:
		if m := e.lookup(x.Name, 0); m != nil {
			return m, nil
		}
	}
	return nil, nil
}

// expr expands the macro calls in x. Their statements go to *pre; with
// pre nil, where names the place, where statements cannot go.
func (e *expander) expr(x Expr, pre *[]Stmt, where string) Expr {
	if x == nil {
		return nil
	}
	// The right of && and ||, and the branches of ?:, run only
	// sometimes: statements hoisted from there would always run.
	const sometimes = "an operand that runs only sometimes (the right of && or ||, a branch of ?:)"
	switch x := x.(type) {
	case *CallExpr:
		for i, a := range x.Args {
			x.Args[i] = e.expr(a, pre, where)
		}
		if m, args := e.callOf(x); m != nil {
			return e.value(x, m, args, pre, where)
		}
	case *Ident:
		if m, _ := e.callOf(x); m != nil {
			return e.value(x, m, nil, pre, where)
		}
	case *MapExpr:
		for i, k := range x.Keys {
			x.Keys[i] = e.expr(k, pre, where)
		}
	case *UnaryExpr:
		x.X = e.expr(x.X, pre, where)
	case *IncDecExpr:
		x.X = e.expr(x.X, pre, where)
	case *BinaryExpr:
		x.X = e.expr(x.X, pre, where)
		if x.Op == LAND || x.Op == LOR {
			x.Y = e.expr(x.Y, nil, sometimes)
		} else {
			x.Y = e.expr(x.Y, pre, where)
		}
	case *CondExpr:
		x.Cond = e.expr(x.Cond, pre, where)
		x.X = e.expr(x.X, nil, sometimes)
		x.Y = e.expr(x.Y, nil, sometimes)
	case *CastExpr:
		x.X = e.expr(x.X, pre, where)
	case *FieldExpr:
		x.X = e.expr(x.X, pre, where)
	case *IndexExpr:
		x.X = e.expr(x.X, pre, where)
		x.Index = e.expr(x.Index, pre, where)
	case *TupleExpr:
		for i, el := range x.Elems {
			x.Elems[i] = e.expr(el, pre, where)
		}
	case *ParenExpr:
		x.X = e.expr(x.X, pre, where)
	case *BlockExpr:
		// The block's own statements take what its value hoists.
		x.Stmts = e.stmts(x.Stmts)
		x.Value = e.expr(x.Value, &x.Stmts, "")
	case *ComptimeExpr:
		x.X = e.expr(x.X, pre, where)
	case *SizeofExpr:
		x.X = e.expr(x.X, pre, where)
	}
	return x
}

// value expands call, which is used for its value.
func (e *expander) value(call Expr, m *Macro, args []Expr, pre *[]Stmt, where string) Expr {
	stmts, result, ok := e.expand(call, m, args)
	if len(stmts) > 0 {
		if pre == nil {
			e.errorf(call.Pos(), call.End(), "macro %s runs statements, which cannot run in %s; call it in a statement of its own", m.Name, where)
		} else {
			*pre = append(*pre, stmts...)
		}
	}
	if result == nil {
		if ok {
			e.errorf(call.Pos(), call.End(), "macro %s has no value: its body does not end in an expression without ';'", m.Name)
		}
		return &BadExpr{From: call.Pos(), To: call.End()}
	}
	return result
}

// expand gives a copy of m's body for call: its statements, with the
// macros they call expanded, and its result, nil if none; ok is false
// when the call is in error.
func (e *expander) expand(call Expr, m *Macro, args []Expr) (stmts []Stmt, result Expr, ok bool) {
	for i, s := range e.stack {
		if s == m {
			var chain []string
			for _, c := range e.stack[i:] {
				chain = append(chain, c.Name)
			}
			e.errorf(call.Pos(), call.End(), "macro %s calls itself without end: %s > %s", m.Name, strings.Join(chain, " > "), m.Name)
			return nil, nil, false
		}
	}
	if !e.checkArgs(call, m, args) {
		return nil, nil, false
	}
	// Copy the body's text so that the copy's positions stand for this
	// call.
	start := e.orig.Offset(m.Body.Lbrace)
	end := e.orig.Offset(m.Body.End())
	off := len(e.src)
	e.src = append(e.src, e.orig.Src[start:end]...)
	e.src = append(e.src, '\n')
	e.spans = append(e.spans, Span{Off: off, Orig: e.orig, OrigOff: start})
	e.expansions = append(e.expansions, expansion{
		from: Pos(off + 1), to: Pos(len(e.src) + 1),
		call: call.Pos(), callEnd: call.End(), name: m.Name,
	})
	e.n++
	c := &cloner{
		m:      m,
		args:   args,
		delta:  Pos(off) - Pos(start),
		suffix: macroMark + strconv.Itoa(e.n),
		e:      e,
	}
	stmts = make([]Stmt, len(m.Body.Stmts))
	for i, s := range m.Body.Stmts {
		stmts[i] = c.stmt(s)
	}
	result = c.expr(m.Result)
	e.stack = append(e.stack, m)
	stmts = e.stmts(stmts)
	result = e.expr(result, &stmts, "")
	e.stack = e.stack[:len(e.stack)-1]
	return stmts, result, true
}

// checkArgs reports arguments that do not fit m's parameters: a
// variable parameter takes a variable, a map parameter a map.
func (e *expander) checkArgs(call Expr, m *Macro, args []Expr) bool {
	ok := true
	for i, p := range m.Params {
		a := Unparen(args[i])
		switch p := p.(type) {
		case *VarExpr:
			if _, isVar := a.(*VarExpr); !isVar {
				e.errorf(args[i].Pos(), args[i].End(), "macro %s takes a variable for $%s, as in %s($x)", m.Name, p.Name, m.Name)
				ok = false
			}
		case *MapExpr:
			if mx, isMap := a.(*MapExpr); !isMap || mx.Keys != nil {
				e.errorf(args[i].Pos(), args[i].End(), "macro %s takes a map for @%s, as in %s(@m), without keys", m.Name, p.Name, m.Name)
				ok = false
			}
		}
	}
	return ok
}

// A cloner copies a macro's body for one call: positions move to the
// call's copy of the text, parameters become the arguments, and the
// body's own variables get the call's suffix. With m nil it copies an
// argument as it is.
type cloner struct {
	m      *Macro
	args   []Expr
	delta  Pos
	suffix string
	e      *expander
}

// param returns the argument for the parameter spelled name, or nil.
func (c *cloner) param(name string) Expr {
	if c.m == nil {
		return nil
	}
	for i, p := range c.m.Params {
		if paramName(p) == name {
			return Unparen(c.args[i])
		}
	}
	return nil
}

func (c *cloner) pos(p Pos) Pos {
	if !p.IsValid() {
		return p
	}
	return p + c.delta
}

func (c *cloner) block(b *Block) *Block {
	if b == nil {
		return nil
	}
	out := &Block{Lbrace: c.pos(b.Lbrace), Rbrace: c.pos(b.Rbrace)}
	for _, s := range b.Stmts {
		out.Stmts = append(out.Stmts, c.stmt(s))
	}
	return out
}

func (c *cloner) stmt(s Stmt) Stmt {
	switch s := s.(type) {
	case *ExprStmt:
		return &ExprStmt{X: c.expr(s.X)}
	case *AssignStmt:
		return &AssignStmt{Lhs: c.expr(s.Lhs), OpPos: c.pos(s.OpPos), Op: s.Op, Rhs: c.expr(s.Rhs)}
	case *IfStmt:
		out := &IfStmt{If: c.pos(s.If), Cond: c.expr(s.Cond), Then: c.block(s.Then)}
		if s.Else != nil {
			out.Else = c.stmt(s.Else)
		}
		return out
	case *UnrollStmt:
		return &UnrollStmt{Unroll: c.pos(s.Unroll), Count: c.expr(s.Count), Body: c.block(s.Body)}
	case *WhileStmt:
		return &WhileStmt{While: c.pos(s.While), Cond: c.expr(s.Cond), Body: c.block(s.Body)}
	case *ForStmt:
		out := &ForStmt{For: c.pos(s.For), Var: c.expr(s.Var).(*VarExpr), From: c.expr(s.From), To: c.expr(s.To), Body: c.block(s.Body)}
		if s.Map != nil {
			if m, ok := c.expr(s.Map).(*MapExpr); ok {
				out.Map = m
			}
		}
		return out
	case *JumpStmt:
		return &JumpStmt{TokPos: c.pos(s.TokPos), Tok: s.Tok, X: c.expr(s.X)}
	case *DiscardStmt:
		return &DiscardStmt{Under: c.pos(s.Under), X: c.expr(s.X)}
	case *Block:
		return c.block(s)
	case *LetStmt:
		// A variable the macro declares is its own, as one it assigns.
		return &LetStmt{Let: c.pos(s.Let), Var: c.expr(s.Var).(*VarExpr), Type: c.typ(s.Type), Rhs: c.expr(s.Rhs)}
	}
	// A statement this copy does not know yet (one a later syntax
	// adds) is refused rather than shared between calls.
	c.e.errorf(c.pos(s.Pos()), c.pos(s.End()), "kinst cannot expand a macro holding this statement yet")
	return s
}

func (c *cloner) exprs(xs []Expr) []Expr {
	if xs == nil {
		return nil
	}
	out := make([]Expr, len(xs))
	for i, x := range xs {
		out[i] = c.expr(x)
	}
	return out
}

func (c *cloner) expr(x Expr) Expr {
	switch x := x.(type) {
	case nil:
		return nil
	case *IntLit:
		return &IntLit{ValuePos: c.pos(x.ValuePos), Raw: x.Raw, Value: x.Value}
	case *StringLit:
		return &StringLit{ValuePos: c.pos(x.ValuePos), EndPos: c.pos(x.EndPos), Value: x.Value}
	case *Ident:
		if a := c.param(x.Name); a != nil {
			// The argument keeps the caller's positions and names.
			arg := &cloner{}
			return arg.expr(a)
		}
		return &Ident{NamePos: c.pos(x.NamePos), Name: x.Name}
	case *VarExpr:
		if c.m == nil {
			return &VarExpr{NamePos: x.NamePos, Name: x.Name}
		}
		if a, ok := c.param("$" + x.Name).(*VarExpr); ok {
			return &VarExpr{NamePos: c.pos(x.NamePos), Name: a.Name}
		}
		return &VarExpr{NamePos: c.pos(x.NamePos), Name: x.Name + c.suffix}
	case *ParamExpr:
		return &ParamExpr{NamePos: c.pos(x.NamePos), N: x.N, Count: x.Count, EndPos: c.pos(x.EndPos)}
	case *MapExpr:
		out := &MapExpr{NamePos: c.pos(x.NamePos), Name: x.Name, Keys: c.exprs(x.Keys), Rbrack: c.pos(x.Rbrack)}
		if c.m != nil {
			if a, ok := c.param("@" + x.Name).(*MapExpr); ok {
				out.Name = a.Name
			} else {
				c.e.errorf(out.Pos(), out.End(), "macro %s uses @%s, which is not one of its parameters: a macro reaches only the maps passed to it", c.m.Name, x.Name)
			}
		}
		return out
	case *CallExpr:
		return &CallExpr{Fun: &Ident{NamePos: c.pos(x.Fun.NamePos), Name: x.Fun.Name}, Args: c.exprs(x.Args), Rparen: c.pos(x.Rparen)}
	case *UnaryExpr:
		return &UnaryExpr{OpPos: c.pos(x.OpPos), Op: x.Op, X: c.expr(x.X)}
	case *IncDecExpr:
		return &IncDecExpr{X: c.expr(x.X), OpPos: c.pos(x.OpPos), Op: x.Op, Prefix: x.Prefix}
	case *BinaryExpr:
		return &BinaryExpr{X: c.expr(x.X), OpPos: c.pos(x.OpPos), Op: x.Op, Y: c.expr(x.Y)}
	case *CondExpr:
		return &CondExpr{If: c.pos(x.If), Cond: c.expr(x.Cond), X: c.expr(x.X), Y: c.expr(x.Y)}
	case *CastExpr:
		return &CastExpr{Lparen: c.pos(x.Lparen), Type: c.typ(x.Type), X: c.expr(x.X)}
	case *FieldExpr:
		return &FieldExpr{X: c.expr(x.X), Arrow: x.Arrow, Name: x.Name, NamePos: c.pos(x.NamePos)}
	case *IndexExpr:
		return &IndexExpr{X: c.expr(x.X), Index: c.expr(x.Index), Rbrack: c.pos(x.Rbrack)}
	case *TupleExpr:
		out := &TupleExpr{Lparen: c.pos(x.Lparen), Elems: c.exprs(x.Elems), Rparen: c.pos(x.Rparen)}
		for _, n := range x.Names {
			out.Names = append(out.Names, &Ident{NamePos: c.pos(n.NamePos), Name: n.Name})
		}
		return out
	case *BlockExpr:
		out := &BlockExpr{Lbrace: c.pos(x.Lbrace), Value: c.expr(x.Value), Rbrace: c.pos(x.Rbrace)}
		for _, s := range x.Stmts {
			out.Stmts = append(out.Stmts, c.stmt(s))
		}
		return out
	case *ComptimeExpr:
		return &ComptimeExpr{Comptime: c.pos(x.Comptime), X: c.expr(x.X)}
	case *ParenExpr:
		return &ParenExpr{Lparen: c.pos(x.Lparen), X: c.expr(x.X), Rparen: c.pos(x.Rparen)}
	case *SizeofExpr:
		return &SizeofExpr{Sizeof: c.pos(x.Sizeof), Type: c.typ(x.Type), X: c.expr(x.X), Rparen: c.pos(x.Rparen)}
	case *OffsetofExpr:
		return &OffsetofExpr{Offsetof: c.pos(x.Offsetof), Type: c.typ(x.Type), Field: x.Field, Rparen: c.pos(x.Rparen)}
	case *BadExpr:
		return &BadExpr{From: c.pos(x.From), To: c.pos(x.To)}
	}
	c.e.errorf(c.pos(x.Pos()), c.pos(x.End()), "kinst cannot expand a macro holding this expression yet")
	return x
}

func (c *cloner) typ(t *TypeExpr) *TypeExpr {
	if t == nil {
		return nil
	}
	out := &TypeExpr{NamePos: c.pos(t.NamePos), Kind: t.Kind, Name: t.Name, Ptr: t.Ptr, Len: t.Len, EndPos: c.pos(t.EndPos)}
	switch of := t.Of.(type) {
	case *TypeExpr:
		out.Of = c.typ(of)
	case Expr:
		out.Of = c.expr(of)
	}
	return out
}

// macroMark starts the suffix that renames a macro's variables apart for
// each call, and a loop's variable apart from others of its name (see
// RenameLoopVar); no variable of a program's own can hold it.
const macroMark = "'"

// RenameLoopVar renames the variable of loop s, in its head and body,
// apart from any other variable of its name, with a suffix made of the
// loop's position: renaming the same loop twice names it the same.
func RenameLoopVar(s *ForStmt) {
	old := s.Var.Name
	name := SourceName(old) + macroMark + "for" + strconv.Itoa(int(s.For))
	if old == name {
		return
	}
	s.Var.Name = name
	Inspect(s.Body, func(n Node) bool {
		if v, ok := n.(*VarExpr); ok && v.Name == old {
			v.Name = name
		}
		return true
	})
}

// SourceName is a variable's name as its source wrote it, without the
// suffix a macro expansion or a loop gave it.
func SourceName(name string) string {
	if i := strings.Index(name, macroMark); i >= 0 {
		return name[:i]
	}
	return name
}
