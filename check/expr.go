package check

import (
	"math"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/spell"
	"kinst.dev/kinst/syntax"
)

// expr checks x and returns its type, or nil after reporting an error.
func (c *checker) expr(x syntax.Expr) *Type {
	c.seen[x] = true
	t := c.expr1(x)
	if t != nil && t.Kind == Float {
		c.errorf(x, "cannot read a %s: floating-point values are not supported", t)
		return nil
	}
	if t != nil {
		c.probe.Types[x] = t
	}
	return t
}

func (c *checker) setConst(x syntax.Expr, v Const) { c.probe.Consts[x] = v }

func (c *checker) expr1(x syntax.Expr) *Type {
	switch x := x.(type) {
	case *syntax.IntLit:
		c.setConst(x, Const{Int: x.Value})
		if c.conf.Compat == compat.V017 {
			// bpftrace 0.17 types every literal int64, so literals past
			// MaxInt64 are negative: 0xffffffffffffffff prints as -1.
			return TInt64
		}
		return literalType(x.Value)
	case *syntax.StringLit:
		c.setConst(x, Const{IsStr: true, Str: x.Value})
		return StrType(len(x.Value) + 1)
	case *syntax.ParamExpr:
		return c.paramExpr(x)
	case *syntax.Ident:
		return c.builtin(x)
	case *syntax.VarExpr:
		if !c.reachable(x) {
			return nil
		}
		v := c.probe.Vars[x.Name]
		if v == nil && c.bareLets[x.Name] && !c.failedVars[x.Name] {
			return c.bareLetRead(x)
		}
		if v == nil {
			if !c.failedVars[x.Name] {
				c.errorf(x, "variable $%s is used before it is assigned", syntax.SourceName(x.Name))
			}
			return nil
		}
		return v.Type
	case *syntax.MapExpr:
		return c.mapRead(x)
	case *syntax.CallExpr:
		return c.call(x, false)
	case *syntax.ParenExpr:
		t := c.expr(x.X)
		if v, ok := c.probe.Consts[x.X]; ok {
			c.setConst(x, v)
		}
		return t
	case *syntax.UnaryExpr:
		return c.unary(x)
	case *syntax.IncDecExpr:
		return c.incDec(x)
	case *syntax.BinaryExpr:
		return c.binary(x)
	case *syntax.CondExpr:
		return c.condExpr(x)
	case *syntax.CastExpr:
		return c.cast(x)
	case *syntax.FieldExpr:
		return c.field(x)
	case *syntax.IndexExpr:
		return c.index(x)
	case *syntax.TupleExpr:
		what := "a tuple"
		if x.Names != nil {
			what = "a record"
		}
		elems := make([]*Type, len(x.Elems))
		for i, e := range x.Elems {
			t := c.expr(e)
			if t == nil {
				return nil
			}
			if !storable(t) {
				c.errorf(e, "%s cannot hold a %s value", what, t)
				return nil
			}
			elems[i] = t
		}
		if x.Names != nil {
			names := make([]string, len(x.Names))
			for i, n := range x.Names {
				names[i] = n.Name
			}
			return RecordType(names, elems)
		}
		return TupleType(elems)
	case *syntax.BlockExpr:
		return c.blockExpr(x)
	case *syntax.ComptimeExpr:
		t := c.expr(x.X)
		if t == nil {
			return nil
		}
		v, ok := c.probe.Consts[x.X]
		if !ok {
			c.errorf(x.X, "comptime needs a value known when the program is compiled")
			return nil
		}
		c.setConst(x, v)
		return t
	case *syntax.SizeofExpr:
		var t *Type
		if x.Type != nil {
			t = c.typeExpr(x.Type)
		} else {
			// sizeof(size_t) names a kernel type the parser cannot
			// tell from an expression.
			t = c.typeOf(x.X)
		}
		if t == nil {
			return nil
		}
		c.setConst(x, Const{Int: uint64(t.Size)})
		return TUint64
	case *syntax.OffsetofExpr:
		t := c.typeExpr(x.Type)
		if t == nil {
			return nil
		}
		// a.b is b's offset in a plus a's.
		off := 0
		for name := range strings.SplitSeq(x.Field, ".") {
			f := t.Field(name)
			if f == nil {
				c.errorf(x, "%s has no field %s", t, name)
				return nil
			}
			off += f.Offset
			t = f.Type
		}
		c.setConst(x, Const{Int: uint64(off)})
		return TUint64
	case *syntax.BadExpr:
		return nil
	}
	c.errorf(x, "unexpected expression")
	return nil
}

// storable reports whether values of t can be kept in variables, map
// keys, map values and tuples.
func storable(t *Type) bool {
	switch t.Kind {
	case Record:
		return complete(t)
	case Void, Count, Sum, Min, Max, Avg, Stats, Hist, Lhist, TSeries:
		return false
	}
	return true
}

func (c *checker) paramExpr(x *syntax.ParamExpr) *Type {
	if x.Count {
		c.setConst(x, Const{Int: uint64(len(c.conf.Params))})
		return c.paramType(uint64(len(c.conf.Params)), false)
	}
	s := c.param(x.N)
	if v, ok := paramInt(s); ok {
		c.setConst(x, Const{Int: v})
		return c.paramType(v, strings.HasPrefix(s, "-"))
	}
	c.setConst(x, Const{IsStr: true, Str: s})
	return StrType(len(s) + 1)
}

// paramType is the type of a numeric positional parameter: int64 in
// bpftrace 0.17, a literal's in 0.26.
func (c *checker) paramType(v uint64, negative bool) *Type {
	switch {
	case c.conf.Compat == compat.V017:
		return TInt64
	case negative:
		return negativeType(int64(v))
	}
	return literalType(v)
}

func (c *checker) unary(x *syntax.UnaryExpr) *Type {
	if x.Op == syntax.AND {
		return c.addressOf(x)
	}
	t := c.expr(x.X)
	if t == nil {
		return nil
	}
	v, isConst := c.probe.Consts[x.X]
	switch x.Op {
	case syntax.SUB, syntax.TILDE:
		if t.Kind != Int {
			c.errorf(x, "operator %s needs an integer, not %s", x.Op, t)
			return nil
		}
		if isConst && x.Op == syntax.SUB && v.Int > 1<<63 && !t.Signed && isLiteral(x.X) && c.conf.Compat != compat.V017 {
			// bpftrace 0.26 keeps a negated literal in int64.
			c.errorf(x, "negative value will underflow")
			return nil
		}
		if isConst {
			r := -v.Int
			if x.Op == syntax.TILDE {
				r = ^v.Int
			}
			c.setConst(x, Const{Int: truncate(r, t)})
			if c.conf.Compat != compat.V017 && isLiteral(x.X) {
				// bpftrace 0.26 folds the operator into a new literal:
				// ~10 is the uint64 18446744073709551605, and -10 the
				// int64 it reads as.
				if x.Op == syntax.SUB && r != 0 && (t.Flex || !t.Signed) {
					return negativeType(int64(r))
				}
				return literalType(r)
			}
		}
		return t
	case syntax.NOT:
		if !t.IsInt() {
			c.errorf(x, "operator ! needs an integer, not %s", t)
			return nil
		}
		if isConst {
			c.setConst(x, Const{Int: b2u(v.Int == 0)})
		}
		return c.boolType()
	case syntax.MUL:
		if t.Kind == Int {
			// An integer is a kernel address holding a u64, as in
			// bpftrace 0.17: *kaddr("avenrun").
			return TUint64
		}
		if t.Kind != Ptr {
			c.errorf(x, "cannot dereference %s: it is not a pointer", t)
			return nil
		}
		if t.Elem == nil {
			c.errorf(x, "cannot dereference an untyped pointer: cast it first, for example (uint64 *)")
			return nil
		}
		if t.Elem.Kind != Record && !storable(t.Elem) {
			c.errorf(x, "cannot dereference a pointer to %s", t.Elem)
			return nil
		}
		return t.Elem
	}
	c.errorf(x, "operator %s is not supported", x.Op)
	return nil
}

// ElemSize is the size of what pointer p points to; an untyped pointer
// counts in bytes.
func ElemSize(p *Type) int {
	if p.Elem == nil || p.Elem.Size == 0 {
		return 1
	}
	return p.Elem.Size
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// truncate gives v as a value of integer type t: its low bytes, sign- or
// zero-extended back to 64 bits.
func truncate(v uint64, t *Type) uint64 {
	if t.Kind != Int || t.Size == 8 {
		return v
	}
	bits := uint(t.Size * 8)
	v &= 1<<bits - 1
	if t.Signed && v&(1<<(bits-1)) != 0 {
		v |= ^uint64(0) << bits
	}
	return v
}

func (c *checker) incDec(x *syntax.IncDecExpr) *Type {
	switch target := x.X.(type) {
	case *syntax.MapExpr:
		value := TInt64
		if m := c.prog.mapIndex[target.Name]; m != nil && m.Value.Kind == Ptr {
			value = m.Value // ++ steps a pointer
		}
		m := c.useMap(target, value, true)
		if m == nil {
			return nil
		}
		m.Read = true
		if m.Value.Kind != Int && m.Value.Kind != Ptr {
			c.errorf(x, "%s holds %s values; %s needs integers", m.Display(), m.Value, x.Op)
			return nil
		}
		return m.Value
	case *syntax.VarExpr:
		c.scopeVar(target)
		v := c.probe.Vars[target.Name]
		if v == nil {
			v = c.defineVar(target, TInt64)
		}
		if v.Type.Kind == Int && !v.Type.IsBool() && c.conf.Compat != compat.V017 {
			// bpftrace 0.26 steps to a 64-bit result, signed when
			// decrementing, which the variable widens to hold: a
			// literal's int8 counts on past 127, and (uint8)0
			// decremented is -1.
			if u := promoteInt(v.Type, IntType(8, v.Type.Signed || x.Op == syntax.DEC)); !u.Equal(v.Type) || u.Flex != v.Type.Flex {
				v.Type = u
				c.rememberVar(target.Name, u)
			}
		}
		c.probe.Types[target] = v.Type
		if v.Type.Kind != Int && v.Type.Kind != Ptr {
			c.errorf(x, "$%s holds %s values; %s needs integers", syntax.SourceName(target.Name), v.Type, x.Op)
			return nil
		}
		return v.Type
	}
	c.errorf(x, "%s applies only to maps and variables", x.Op)
	return nil
}

// probeString types x, when it is the probe builtin, as bpftrace 0.26
// types it where a string is wanted: the name of the attach point that
// fired, a string long enough for each of the probe's. Other expressions,
// and any in the 0.17 mode, keep their type t.
func (c *checker) probeString(x syntax.Expr, t *Type) *Type {
	if t == nil || t.Kind != ProbeName || c.conf.Compat == compat.V017 {
		return t
	}
	if _, ok := syntax.Unparen(x).(*syntax.Ident); !ok {
		return t
	}
	n := 0
	for _, target := range c.probe.Targets {
		n = max(n, len(target.FullName()))
	}
	s := StrType(n + 1)
	for e := x; ; {
		c.probe.Types[e] = s
		p, ok := e.(*syntax.ParenExpr)
		if !ok {
			return s
		}
		e = p.X
	}
}

func isComparison(op syntax.Token) bool {
	switch op {
	case syntax.EQL, syntax.NEQ, syntax.LSS, syntax.LEQ, syntax.GTR, syntax.GEQ:
		return true
	}
	return false
}

func (c *checker) binary(x *syntax.BinaryExpr) *Type {
	lt := c.expr(x.X)
	rt := c.expr(x.Y)
	if lt == nil || rt == nil {
		return nil
	}
	op := x.Op
	// Strings compare with == and !=.
	if lt.Kind == Str || rt.Kind == Str {
		lt, rt = c.probeString(x.X, lt), c.probeString(x.Y, rt)
		if lt.Kind != rt.Kind || (op != syntax.EQL && op != syntax.NEQ) {
			c.errorf(x, "invalid operation: %s %s %s (strings support only == and !=)", lt, op, rt)
			return nil
		}
		lv, lok := c.probe.Consts[x.X]
		rv, rok := c.probe.Consts[x.Y]
		if lok && rok {
			c.setConst(x, Const{Int: b2u((lv.Str == rv.Str) == (op == syntax.EQL))})
		}
		return c.boolType()
	}
	// Tuples compare element by element, with == and != only.
	if lt.Kind == Tuple || rt.Kind == Tuple {
		if _, ok := unify(lt, rt); !ok || lt.Kind != rt.Kind || (op != syntax.EQL && op != syntax.NEQ) {
			c.errorf(x, "invalid operation: %s %s %s (tuples of the same shape support only == and !=)", lt, op, rt)
			return nil
		}
		return c.boolType()
	}
	// Arrays compare element by element, with == and != only.
	if lt.Kind == Array || rt.Kind == Array {
		if !lt.Equal(rt) || (op != syntax.EQL && op != syntax.NEQ) {
			c.errorf(x, "invalid operation: %s %s %s (arrays of the same type support only == and !=)", lt, op, rt)
			return nil
		}
		return c.boolType()
	}
	// Buffers too, byte by byte with their length; buffers of
	// different sizes differ.
	if lt.Kind == Buffer || rt.Kind == Buffer {
		if lt.Kind != rt.Kind || (op != syntax.EQL && op != syntax.NEQ) {
			c.errorf(x, "invalid operation: %s %s %s (buffers support only == and != with a buffer)", lt, op, rt)
			return nil
		}
		if lt.Size != rt.Size {
			c.setConst(x, Const{Int: b2u(op == syntax.NEQ)})
		}
		return TInt64
	}
	// Pointers take + and - with integers, and compare with anything
	// that is an address.
	if lt.Kind == Ptr || rt.Kind == Ptr {
		switch {
		case isComparison(op) && lt.IsInt() && rt.IsInt():
			return c.boolType()
		case lt.Kind == Ptr && rt.Kind == Int && (op == syntax.ADD || op == syntax.SUB):
			return lt
		case lt.Kind == Ptr && rt.Kind == Ptr && op == syntax.SUB:
			// The distance in elements, as in C.
			if ElemSize(lt) != ElemSize(rt) {
				c.errorf(x, "invalid operation: %s - %s (the pointers' elements differ in size)", lt, rt)
				return nil
			}
			return TInt64
		case rt.Kind == Ptr && lt.Kind == Int && op == syntax.ADD:
			return rt
		case op == syntax.LAND || op == syntax.LOR:
			return c.boolType()
		}
		c.errorf(x, "invalid operation: %s %s %s", lt, op, rt)
		return nil
	}
	if (op == syntax.EQL || op == syntax.NEQ) && lt.Kind != Int && lt.Equal(rt) && lt.InRegister() && !lt.IsAggregation() {
		// Other values of one type compare by value with == and !=,
		// as in bpftrace (0.17 and 0.26.1): username == username, their
		// uids.
		return c.boolType()
	}
	if !lt.IsInt() || !rt.IsInt() {
		c.errorf(x, "invalid operation: %s %s %s (operands must be integers)", lt, op, rt)
		return nil
	}
	signed := lt.Signed && rt.Signed && lt.Kind == Int && rt.Kind == Int
	result := TUint64
	if signed {
		result = TInt64
	}
	if c.conf.Compat != compat.V017 && lt.Kind == Int && rt.Kind == Int {
		result = c.intResult(x.Op, x.X, x.Y, lt, rt)
	}
	if isComparison(op) || op == syntax.LAND || op == syntax.LOR {
		result = c.boolType()
	}
	lv, lok := c.probe.Consts[x.X]
	rv, rok := c.probe.Consts[x.Y]
	if lok && rok {
		switch {
		case isComparison(op) && lt.Kind == Int && rt.Kind == Int:
			signed = ComparesSigned(lt, rt, c.conf.Compat)
		case !isComparison(op) && result.Kind == Int:
			signed = result.Signed
		}
		v, ok := fold(op, lv.Int, rv.Int, signed)
		if !ok {
			c.errorf(x, "division by zero")
			return nil
		}
		c.setConst(x, Const{Int: v})
		if result.Kind == Int && !result.IsBool() && c.conf.Compat != compat.V017 && isLiteral(x) {
			// Folded into one literal, as bpftrace 0.26 does.
			switch {
			case !result.Signed || int64(v) >= 0:
				result = literalType(v)
			default:
				result = negativeType(int64(v))
			}
		}
	} else if rok && (op == syntax.QUO || op == syntax.REM) && rv.Int == 0 {
		c.errorf(x.Y, "division by zero")
		return nil
	}
	return result
}

// literalType is the type bpftrace 0.26 gives an integer literal of
// value v: the smallest signed type that holds it, sign-flexible, or
// uint64 past the int64 range.
func literalType(v uint64) *Type {
	if v > math.MaxInt64 {
		return TUint64
	}
	return tLiteral[literalSize(int64(v))]
}

// negativeType is the type bpftrace 0.26 gives a negative literal: the
// smallest signed type that holds it.
func negativeType(v int64) *Type { return IntType(literalSize(v), true) }

// literalSize is the size of the smallest signed integer holding v.
func literalSize(v int64) int {
	switch {
	case v >= math.MinInt8 && v <= math.MaxInt8:
		return 1
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 2
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 4
	}
	return 8
}

// isLiteral reports whether x is an integer literal, or operators that
// bpftrace 0.26 folds on literals into one.
func isLiteral(x syntax.Expr) bool {
	switch x := syntax.Unparen(x).(type) {
	case *syntax.IntLit, *syntax.ParamExpr:
		return true
	case *syntax.UnaryExpr:
		return (x.Op == syntax.SUB || x.Op == syntax.TILDE) && isLiteral(x.X)
	case *syntax.BinaryExpr:
		return !isComparison(x.Op) && x.Op != syntax.LAND && x.Op != syntax.LOR && isLiteral(x.X) && isLiteral(x.Y)
	}
	return false
}

// intResult types an operator on two integers as bpftrace 0.26 does: a
// literal takes the other side's sign; the result is int64 if a side is
// signed or the operator subtracts, uint64 otherwise. An operand that
// cannot keep its value in the type it is converted to draws a warning.
func (c *checker) intResult(op syntax.Token, x, y syntax.Expr, lt, rt *Type) *Type {
	if lt.IsBool() || rt.IsBool() || op == syntax.LAND || op == syntax.LOR {
		return IntType(8, lt.Signed && rt.Signed)
	}
	var to *Type
	if isComparison(op) {
		to = promoteInt(lt, rt)
	} else {
		ls, rs := lt.Signed, rt.Signed
		switch {
		case lt.Flex && !rt.Flex:
			ls = rs
		case rt.Flex && !lt.Flex:
			rs = ls
		}
		to = IntType(8, ls || rs || op == syntax.SUB)
	}
	c.signChange(x, lt, to)
	c.signChange(y, rt, to)
	return to
}

// signChange warns, as bpftrace 0.26 does, when the integer value x of
// type from is converted implicitly to a type to that cannot hold all
// its values: uint64 to int64, a signed type to an unsigned one.
// Literals are checked for their value instead.
func (c *checker) signChange(x syntax.Expr, from, to *Type) {
	if c.conf.Compat == compat.V017 || from.Kind != Int || to.Kind != Int || from.Flex || from.IsBool() || to.IsBool() || isLiteral(x) {
		return
	}
	if fitsInto(from, to) {
		return
	}
	if m, ok := syntax.Unparen(x).(*syntax.MapExpr); ok {
		if mm := c.prog.mapIndex[m.Name]; mm != nil && mm.Value.IsAggregation() {
			// Nor of reading count(), sum() and the like.
			return
		}
	}
	c.warnf(x, castWarning, from, to)
}

// castWarning is bpftrace 0.26's warning of an implicit integer
// conversion that may change the value.
const castWarning = "Expression of type: %s being cast to type: %s. This may cause unexpected results. Use an explicit cast to suppress this warning."

// fitsInto reports whether every value of integer type t is one of u.
func fitsInto(t, u *Type) bool {
	switch {
	case t.Signed == u.Signed || t.Flex:
		return t.Size <= u.Size
	case !t.Signed:
		return t.Size < u.Size
	}
	return false
}

// promoteInt is the integer type holding values of both a and b, as
// bpftrace 0.26 widens a variable or map assigned both: a literal takes
// the other's sign; otherwise mixed signs need a bigger signed type,
// int64 at most.
func promoteInt(a, b *Type) *Type {
	size := max(a.Size, b.Size)
	switch {
	case a.Flex && b.Flex:
		return tLiteral[size]
	case a.Signed == b.Signed:
		return IntType(size, a.Signed)
	case a.Flex || b.Flex:
		return IntType(size, !a.Flex && a.Signed || !b.Flex && b.Signed)
	case a.Signed && a.Size > b.Size:
		return a
	case b.Signed && b.Size > a.Size:
		return b
	}
	return IntType(min(2*size, 8), true)
}

// ComparesSigned reports whether integers of types a and b compare as
// signed numbers: when both are signed in bpftrace 0.17, and when the
// type both promote to is signed in 0.26, as (uint32)5 < (int32)-1 is
// false there.
func ComparesSigned(a, b *Type, v compat.Version) bool {
	if v == compat.V017 || a.IsBool() || b.IsBool() {
		return a.Signed && b.Signed
	}
	return promoteInt(a, b).Signed
}

// fold evaluates a binary operator on constants, with C's semantics for
// 64-bit integers of the given signedness.
func fold(op syntax.Token, a, b uint64, signed bool) (uint64, bool) {
	sa, sb := int64(a), int64(b)
	switch op {
	case syntax.ADD:
		return a + b, true
	case syntax.SUB:
		return a - b, true
	case syntax.MUL:
		return a * b, true
	case syntax.QUO, syntax.REM:
		if b == 0 {
			return 0, false
		}
		if signed {
			if sb == -1 { // avoid the MinInt64 / -1 trap; wraps as the CPU would
				if op == syntax.QUO {
					return uint64(-sa), true
				}
				return 0, true
			}
			if op == syntax.QUO {
				return uint64(sa / sb), true
			}
			return uint64(sa % sb), true
		}
		if op == syntax.QUO {
			return a / b, true
		}
		return a % b, true
	case syntax.AND:
		return a & b, true
	case syntax.OR:
		return a | b, true
	case syntax.XOR:
		return a ^ b, true
	case syntax.SHL:
		return a << (b & 63), true
	case syntax.SHR:
		if signed {
			return uint64(sa >> (b & 63)), true
		}
		return a >> (b & 63), true
	case syntax.LAND:
		return b2u(a != 0 && b != 0), true
	case syntax.LOR:
		return b2u(a != 0 || b != 0), true
	case syntax.EQL:
		return b2u(a == b), true
	case syntax.NEQ:
		return b2u(a != b), true
	}
	var less, equal bool
	if signed {
		less, equal = sa < sb, sa == sb
	} else {
		less, equal = a < b, a == b
	}
	switch op {
	case syntax.LSS:
		return b2u(less), true
	case syntax.LEQ:
		return b2u(less || equal), true
	case syntax.GTR:
		return b2u(!less && !equal), true
	case syntax.GEQ:
		return b2u(!less), true
	}
	return 0, false
}

func (c *checker) condExpr(x *syntax.CondExpr) *Type {
	if !c.ifValueAllowed(x) {
		return nil
	}
	nerr := len(c.errs)
	ct := c.expr(x.Cond)
	a := ct // c ?: y is c when c is not zero
	if x.X != nil {
		a = c.expr(x.X)
	}
	b := c.expr(x.Y)
	if ct != nil && len(c.errs) == nerr && (a == nil) != (b == nil) && c.pending {
		// One branch reads a map that has no type yet, such as the map
		// being assigned (@fib[$i] = ... ? $i : @fib[$i-1]): the other
		// branch gives the type until a later pass knows both.
		if a == nil {
			return b
		}
		return a
	}
	if ct == nil || a == nil || b == nil {
		return nil
	}
	if !ct.IsInt() {
		c.errorf(x.Cond, "condition must be an integer, not %s", ct)
		return nil
	}
	t, ok := c.unify(a, b)
	if !ok {
		op := "?:"
		if x.If.IsValid() {
			op = "if"
		}
		c.errorf(x, "the branches of %s have different types: %s and %s", op, a, b)
		return nil
	}
	if cv, ok := c.probe.Consts[x.Cond]; ok {
		pick := x.Y
		if cv.Int != 0 {
			pick = x.X
			if pick == nil {
				pick = x.Cond
			}
		}
		if v, ok := c.probe.Consts[pick]; ok {
			c.setConst(x, v)
		}
	}
	return t
}

// ifValueAllowed reports whether x may be checked: an if used as a
// value came with bpftrace 0.26, and in the 0.17 mode it is the syntax
// error 0.17 makes of it.
func (c *checker) ifValueAllowed(x *syntax.CondExpr) bool {
	if !x.If.IsValid() || c.conf.Compat != compat.V017 {
		return true
	}
	c.errs.Add(c.file, x.If, x.If+2, "expected expression, found 'if'")
	return false
}

// unify returns the type that holds values of both a and b: integers
// widen, strings grow, tuples unify element by element.
// Unify returns the type that holds values of both a and b, as a map
// or a variable assigned both holds them, and whether there is one.
func Unify(a, b *Type) (*Type, bool) { return unify(a, b) }

func unify(a, b *Type) (*Type, bool) { return unifyAs(a, b, false) }

// unify is unify for the checked program's bpftrace release.
func (c *checker) unify(a, b *Type) (*Type, bool) {
	return unifyAs(a, b, c.conf.Compat != compat.V017)
}

// unifyAs unifies as bpftrace 0.26 does when current is set: integers
// promote as promoteInt says, and buffers of different sizes grow to
// the larger, recording their length in its last byte.
func unifyAs(a, b *Type, current bool) (*Type, bool) {
	switch {
	case current && a.Kind == Int && b.Kind == Int && !a.IsBool() && !b.IsBool():
		if a.Equal(b) && a.Flex == b.Flex {
			return a, true // an enum stays one
		}
		return promoteInt(a, b), true
	case current && a.Kind == Buffer && b.Kind == Buffer && a.Size != b.Size && max(a.Size, b.Size) <= maxVarBuf+1:
		return &Type{Kind: Buffer, Size: max(a.Size, b.Size), VarLen: true}, true
	case a.Kind == Int && b.Kind == Int:
		if a.Size == b.Size && a.Signed == b.Signed {
			return a, true
		}
		size := max(a.Size, b.Size)
		return IntType(size, a.Signed && b.Signed), true
	case a.Kind == Str && b.Kind == Str:
		if a.Size >= b.Size {
			return a, true
		}
		return b, true
	case a.IsRecord() || b.IsRecord():
		return unifyRecords(a, b)
	case a.Kind == Tuple && b.Kind == Tuple && len(a.Elems) == len(b.Elems):
		elems := make([]*Type, len(a.Elems))
		same := true
		for i := range a.Elems {
			e, ok := unifyAs(a.Elems[i], b.Elems[i], current)
			if !ok {
				return nil, false
			}
			elems[i] = e
			same = same && e == a.Elems[i]
		}
		if same {
			return a, true
		}
		return TupleType(elems), true
	case a.Kind == Ptr && b.Kind == Ptr:
		return a, true
	}
	return a, a.Equal(b)
}

// unifyRecords unifies two records with the same field names, in any
// order, field by field; the result keeps a's order, as bpftrace 0.26.1
// keeps the order a variable or map first had.
func unifyRecords(a, b *Type) (*Type, bool) {
	if !a.IsRecord() || !b.IsRecord() || len(a.Names) != len(b.Names) {
		return nil, false
	}
	elems := make([]*Type, len(a.Elems))
	same := true
	for i, name := range a.Names {
		j := b.ElemIndex(name)
		if j < 0 {
			return nil, false
		}
		e, ok := unify(a.Elems[i], b.Elems[j])
		if !ok {
			return nil, false
		}
		elems[i] = e
		same = same && e == a.Elems[i]
	}
	if same {
		return a, true
	}
	return RecordType(a.Names, elems), true
}

func (c *checker) cast(x *syntax.CastExpr) *Type {
	if t, ok := c.boolCast(x); ok {
		return t
	}
	te := x.Type
	if te.Len < 0 {
		elem := *te
		elem.Len = 0
		te = &elem
	}
	t := c.typeExpr(te)
	xt := c.expr(x.X)
	if t == nil || xt == nil {
		return nil
	}
	if x.Type.Len < 0 {
		// T[]: as many elements as the value's bytes make.
		if t.Size == 0 || xt.Size%t.Size != 0 {
			c.errorf(x, "cannot cast %s to %s[]: its %d bytes are no whole number of elements", xt, t, xt.Size)
			return nil
		}
		t = &Type{Kind: Array, Size: xt.Size, Elem: t, Len: xt.Size / t.Size}
	}
	if t.Kind == Array || xt.Kind == Array {
		return c.arrayCast(x, t, xt)
	}
	if !xt.IsInt() {
		c.errorf(x, "cannot cast %s to %s", xt, t)
		return nil
	}
	switch t.Kind {
	case Int:
		if v, ok := c.probe.Consts[x.X]; ok {
			c.setConst(x, Const{Int: truncate(v.Int, t)})
		}
		return t
	case Ptr:
		if xt.Kind == Ptr {
			// Keep the address space of what is being cast.
			nt := *t
			nt.Space = xt.Space
			return &nt
		}
		return t
	}
	c.errorf(x.Type, "cannot cast to %s: only integer and pointer types are allowed", t)
	return nil
}

// boolCast types (bool)x in the 0.26.1 mode, where it is whether x is
// set: an integer or a pointer other than 0, a string not empty. It
// stands for x != 0 or x != "", which code generation generates in its
// place; ok is false for any other cast.
func (c *checker) boolCast(x *syntax.CastExpr) (t *Type, ok bool) {
	te := x.Type
	if c.conf.Compat == compat.V017 || te.Name != "bool" && te.Name != "_Bool" || te.Ptr != 0 || te.Len != 0 || te.Of != nil {
		return nil, false
	}
	var zero syntax.Expr = &syntax.IntLit{ValuePos: x.Pos(), Value: 0}
	if xt := c.expr(x.X); xt == nil {
		return nil, true
	} else if xt.Kind == Str {
		zero = &syntax.StringLit{ValuePos: x.Pos(), Value: ""}
	} else if !xt.IsInt() && xt.Kind != Ptr {
		c.errorf(x, "cannot cast %s to bool", xt)
		return nil, true
	}
	e := &syntax.BinaryExpr{X: x.X, OpPos: x.Pos(), Op: syntax.NEQ, Y: zero}
	if t = c.expr(e); t == nil {
		return nil, true
	}
	if v, ok := c.probe.Consts[e]; ok {
		c.setConst(x, v)
	}
	c.probe.Expand[x] = e
	return t, true
}

// typeExpr resolves a type name: the integer types, the program's
// declarations, or kernel types by BTF.
func (c *checker) typeExpr(te *syntax.TypeExpr) *Type {
	t := intTypeNames[te.Name]
	if te.Name == "bool" && te.Kind == syntax.IDENT && c.conf.Compat != compat.V017 {
		t = TBool
	}
	switch of := te.Of.(type) {
	case *syntax.TypeExpr:
		t = c.typeExpr(of)
	case syntax.Expr:
		t = c.typeOf(of)
	}
	if t == nil && te.Of != nil {
		return nil
	}
	// bpftrace 0.26 knows void *, the pointer to any type, which a
	// kernel function pointer is too.
	void := te.Of == nil && te.Kind == syntax.IDENT && te.Name == "void" && c.conf.Compat != compat.V017
	if void && te.Ptr == 0 {
		c.errorf(te, "a value cannot have type void; void * points to any type")
		return nil
	}
	if te.Of == nil && !void && (te.Kind != syntax.IDENT || t == nil) {
		if t = c.namedType(te.Kind, te.Name, te); t == nil {
			return nil
		}
	}
	space := KernelSpace
	if c.probe.Provider == "uprobe" || c.probe.Provider == "uretprobe" || c.probe.Provider == "usdt" {
		space = UserSpace
	}
	for i := 0; i < te.Ptr; i++ {
		t = &Type{Kind: Ptr, Size: 8, Elem: t, Space: space}
	}
	switch {
	case te.Len > 0:
		t = &Type{Kind: Array, Size: t.Size * te.Len, Elem: t, Len: te.Len}
	case te.Len < 0:
		c.errorf(te, "only a cast takes an array type without a size, as in (int8[])x")
		return nil
	}
	return t
}

var intTypeNames = map[string]*Type{
	"int8": TInt8, "int16": TInt16, "int32": TInt32, "int64": TInt64,
	"uint8": TUint8, "uint16": TUint16, "uint32": TUint32, "uint64": TUint64,
}

func (c *checker) field(x *syntax.FieldExpr) *Type {
	t := c.expr(x.X)
	if t == nil {
		return nil
	}
	if t.Kind == Tuple {
		i := t.ElemIndex(x.Name)
		switch {
		case i >= 0:
			return t.Elems[i]
		case t.Names == nil:
			c.errorf(x, "tuple %s has no element %s", t, x.Name)
		default:
			c.fieldError(x, "%s has no field %s", t, t.Names)
		}
		return nil
	}
	rec := t
	if t.Kind == Ptr && t.Elem != nil && t.Elem.Kind == Record {
		rec = t.Elem
	}
	if rec.Kind != Record {
		c.errorf(x, "%s has no fields: it is not a struct, a pointer to one or a tuple", t)
		return nil
	}
	f := rec.Field(x.Name)
	if f == nil {
		msg := "%s has no field %s"
		if rec.BTF != nil {
			// Kernel structs change between releases: say whose
			// definition lacks the field.
			msg = "%s in this kernel's BTF has no field %s"
		}
		c.fieldError(x, msg, rec, rec.FieldNames())
		return nil
	}
	if f.Name != x.Name {
		c.warnf(x, "%s has no field %s since Linux %s renamed it: reading %s", rec, x.Name, renamedFields[[2]string{rec.Name, x.Name}].release, f.Name)
	}
	return f.Type
}

// fieldError reports that x names no field of t, suggesting the nearest
// of names.
func (c *checker) fieldError(x *syntax.FieldExpr, msg string, t *Type, names []string) {
	if near := spell.Nearest(x.Name, names); near != "" {
		c.errorf(x, msg+" (did you mean %s?)", t, x.Name, near)
	} else {
		c.errorf(x, msg, t, x.Name)
	}
}

func (c *checker) index(x *syntax.IndexExpr) *Type {
	t := c.expr(x.X)
	it := c.expr(x.Index)
	if t == nil || it == nil {
		return nil
	}
	if it.Kind != Int {
		c.errorf(x.Index, "index must be an integer, not %s", it)
		return nil
	}
	switch t.Kind {
	case Tuple:
		// bpftrace 0.26.1 indexes a tuple as $t[1], with a constant.
		v, ok := c.probe.Consts[x.Index]
		switch {
		case t.Names != nil:
		case !ok:
			c.errorf(x.Index, "a tuple's index must be known when the program is compiled, as in $t[1]")
			return nil
		case v.Int >= uint64(len(t.Elems)):
			c.errorf(x.Index, "tuple %s has no element %d", t, int64(v.Int))
			return nil
		default:
			return t.Elems[v.Int]
		}
	case Array:
		// A flexible array member, T x[0], has no bound to check.
		if v, ok := c.probe.Consts[x.Index]; ok && t.Len > 0 && v.Int >= uint64(t.Len) {
			c.errorf(x, "the index %d is out of bounds for array of size %d", int64(v.Int), t.Len)
			return nil
		}
		return t.Elem
	case Ptr:
		if t.Elem == nil {
			c.errorf(x, "cannot index an untyped pointer: cast it first")
			return nil
		}
		return t.Elem
	case Str:
		v, ok := c.probe.Consts[x.Index]
		if ok && v.Int >= uint64(t.Size) {
			c.errorf(x.Index, "index %d is out of range for %s", int64(v.Int), t)
			return nil
		}
		if s, sok := c.probe.Consts[x.X]; ok && sok && s.IsStr {
			ch := uint64(0)
			if v.Int < uint64(len(s.Str)) {
				ch = uint64(int64(int8(s.Str[v.Int])))
			}
			c.setConst(x, Const{Int: ch})
		}
		return TInt8
	}
	c.errorf(x, "cannot index %s", t)
	return nil
}
