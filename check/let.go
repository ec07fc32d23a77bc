package check

import (
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// Scratch variables are visible in the block that declares them (with
// let, or by a first assignment) and the blocks inside it, as in
// bpftrace 0.26.1; in 0.17 mode the whole probe is one scope. Storage
// stays one slot per name in the probe: scoping decides what a name may
// reach, not where it lives.

func (c *checker) blockScoped() bool { return c.conf.Compat != compat.V017 }

func (c *checker) pushScope() {
	if c.blockScoped() || len(c.scopes) == 0 {
		c.scopes = append(c.scopes, map[string]bool{})
	}
}

// popScope leaves the innermost scope and returns what it declared.
func (c *checker) popScope() map[string]bool {
	if !c.blockScoped() {
		return nil
	}
	top := c.scopes[len(c.scopes)-1]
	c.scopes = c.scopes[:len(c.scopes)-1]
	return top
}

// ifStmt checks an if/else chain. A variable that every branch of a
// chain ending in else assigns first stays in reach after it, as in
// bpftrace 0.17, whose tools set an address in both branches of an
// IPv4/IPv6 test and print it after; bpftrace 0.26.1 refuses the read,
// so kinst warns at it. A variable only some branches assign is out of
// reach, as in 0.26.1.
func (c *checker) ifStmt(s *syntax.IfStmt) {
	for name := range c.branches(s) {
		c.scopes[len(c.scopes)-1][name] = true
		if _, ok := c.kept[name]; !ok {
			c.kept[name] = false
		}
	}
}

// branches checks the branches of s and returns the variables all of
// them declare: none where the chain has no final else.
func (c *checker) branches(s *syntax.IfStmt) map[string]bool {
	c.cond(s.Cond, "if condition")
	then := c.block(s.Then)
	var els map[string]bool
	switch e := s.Else.(type) {
	case *syntax.Block:
		els = c.block(e)
	case *syntax.IfStmt:
		els = c.branches(e)
	}
	for name := range then {
		if !els[name] {
			delete(then, name)
		}
	}
	return then
}

func (c *checker) visible(name string) bool {
	for _, s := range c.scopes {
		if s[name] {
			return true
		}
	}
	return false
}

// loopVarApart makes the variable of loop s, which lives in the loop, a
// variable of its own in the default mode, apart from any other of its
// name in the probe, so that the two may hold values of different
// types, as two loops over different maps do in bpftrace 0.26.1. Storage
// being one slot per name, the loop's variable is renamed apart, as a
// macro's are. In the 0.17 mode the probe is one scope.
func (c *checker) loopVarApart(s *syntax.ForStmt) {
	if c.blockScoped() {
		syntax.RenameLoopVar(s)
	}
}

// scopeVar declares x in the innermost scope at an assignment, unless
// an enclosing scope has it.
func (c *checker) scopeVar(x *syntax.VarExpr) {
	if !c.visible(x.Name) {
		c.scopes[len(c.scopes)-1][x.Name] = true
	}
}

// reachable reports whether a read of x finds a variable in scope, and
// reports the error if not. In 0.17 mode the read is left to the check
// of assignment order.
func (c *checker) reachable(x *syntax.VarExpr) bool {
	if !c.blockScoped() || c.failedVars[x.Name] {
		return true
	}
	if c.visible(x.Name) {
		if warned, ok := c.kept[x.Name]; ok && !warned {
			c.kept[x.Name] = true
			c.warnf(x, "$%s is assigned in every branch of an if/else but declared before none: bpftrace 0.26.1 refuses to read it after the if, as bpftrace 0.17 did not (declare it first with let $%s;)", syntax.SourceName(x.Name), syntax.SourceName(x.Name))
		}
		return true
	}
	c.errorf(x, "Undefined or undeclared variable: $%s", syntax.SourceName(x.Name))
	return false
}

// letStmt checks let $x [: TYPE] [= e]: a new variable in this scope,
// of the annotated type if there is one, which its values must fit.
func (c *checker) letStmt(s *syntax.LetStmt) {
	if c.visible(s.Var.Name) {
		c.errorf(s, "Variable $%s was already declared. Variable shadowing is not allowed.", s.Var.Name)
		return
	}
	c.scopes[len(c.scopes)-1][s.Var.Name] = true
	if s.Type != nil {
		t := c.letType(s.Type)
		if t == nil {
			c.failedVars[s.Var.Name] = true
			return
		}
		if v := c.probe.Vars[s.Var.Name]; v != nil && !v.Type.Equal(t) {
			c.errorf(s, "$%s holds %s values elsewhere in the probe; cannot declare it %s", s.Var.Name, v.Type, t)
			return
		}
		v := c.defineVar(s.Var, t)
		v.Type, v.Declared = t, true
		c.probe.Types[s.Var] = t
	}
	if s.Rhs != nil {
		c.assign(&syntax.AssignStmt{Lhs: s.Var, OpPos: s.Let, Op: syntax.ASSIGN, Rhs: s.Rhs})
	} else if s.Type == nil {
		c.bareLets[s.Var.Name] = true
	}
}

// bareLetRead types a read of a variable a bare let declared before any
// assignment: the type a previous pass saw assigned, or int64 once the
// passes stop finding one; nil, with another pass asked for, before.
func (c *checker) bareLetRead(x *syntax.VarExpr) *Type {
	t := c.varTypes()[x.Name]
	if t == nil {
		if !c.defaultInts {
			c.pending = true
			return nil
		}
		t = TInt64
	}
	return c.defineVar(x, t).Type
}

// letType resolves a let annotation: a type a cast may name, an array
// of one, T[N], or string[N] (string alone is a string of the
// configured length).
func (c *checker) letType(te *syntax.TypeExpr) *Type {
	if te.Kind == syntax.IDENT && te.Name == "string" && te.Ptr == 0 {
		if te.Len > 0 {
			return StrType(te.Len)
		}
		return StrType(c.conf.StrLen)
	}
	return c.typeExpr(te)
}

// fitsDeclared reports whether a value of type t from rhs may be stored
// in a variable declared of type decl: an integer constant that decl's
// range holds, an integer type decl holds all values of, a string no
// longer than decl, or the same type.
func (c *checker) fitsDeclared(decl, t *Type, rhs syntax.Expr) bool {
	switch {
	case decl.Kind == Int && t.Kind == Int:
		if v, ok := c.probe.Consts[rhs]; ok && !v.IsStr {
			// A literal above 1<<63-1 is unsigned, as in bpftrace 0.26.1.
			_, lit := syntax.Unparen(rhs).(*syntax.IntLit)
			return constFits(v.Int, t.Signed && !lit, decl)
		}
		if t.Signed == decl.Signed {
			return t.Size <= decl.Size
		}
		return !t.Signed && t.Size < decl.Size
	case decl.Kind == Str && t.Kind == Str:
		return t.Size <= decl.Size
	}
	u, ok := unify(decl, t)
	return ok && u.Equal(decl)
}

// constFits reports whether the constant bits v, signed or not, lie in
// the range of the integer type t.
func constFits(v uint64, signed bool, t *Type) bool {
	bits := uint(t.Size * 8)
	if signed && int64(v) < 0 {
		return t.Signed && (bits == 64 || int64(v) >= -(1<<(bits-1)))
	}
	switch {
	case bits == 64:
		return !t.Signed || v <= 1<<63-1
	case t.Signed:
		return v <= 1<<(bits-1)-1
	}
	return v <= 1<<bits-1
}

// mapDecls checks the program's map declarations once its maps have
// their types: a known kind that suits the values (the per-CPU kinds
// for aggregations, the others for plain values) and a positive size.
// A declared map no probe uses is a warning.
func (c *checker) mapDecls(prog *syntax.Program) {
	seen := map[string]bool{}
	for _, d := range prog.MapDecls {
		name := d.Map.Name
		if seen[name] {
			c.errorf(d, "@%s is declared twice", name)
			continue
		}
		seen[name] = true
		percpu, ok := mapKinds[d.Kind.Name]
		if !ok {
			c.errorf(d.Kind, "Invalid bpf map type: %s (valid map types: hash, lruhash, percpuhash, percpulruhash)", d.Kind.Name)
			continue
		}
		size, isInt := d.Size.(*syntax.IntLit)
		if !isInt || size.Value == 0 || size.Value > 1<<31 {
			c.errorf(d.Size, "a map's size is a positive integer literal")
			continue
		}
		m := c.prog.mapIndex[name]
		if m == nil {
			c.warnf(d, "Unused map: @%s", name)
			continue
		}
		if percpu != m.Value.IsAggregation() {
			want := "hash or lruhash"
			if m.Value.IsAggregation() {
				want = "percpuhash or percpulruhash"
			}
			c.errorf(d.Kind, "Incompatible map types: @%s holds %s values, which a %s map stores, not %s", name, m.Value, want, d.Kind.Name)
			continue
		}
		m.Kind, m.Entries = d.Kind.Name, int(size.Value)
	}
}

// mapKinds are the kinds a map declaration may name, and whether each
// keeps a value per CPU.
var mapKinds = map[string]bool{"hash": false, "lruhash": false, "percpuhash": true, "percpulruhash": true}
