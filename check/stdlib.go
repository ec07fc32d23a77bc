package check

import (
	"fmt"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

// This file checks the functions bpftrace 0.26.1's standard library
// defines in its own language (strings.bt, meta.bt, base.bt). kinst has
// them built in, so that a program pays nothing for the library it does
// not call: nothing is parsed at start-up.

// stringLike checks that the one argument of x is a string or an array
// of characters, which the string functions search in place.
func (c *checker) stringLike(x syntax.Expr, fn string) *Type {
	t := c.expr(x)
	if t == nil {
		return nil
	}
	switch {
	case t.Kind == Str:
	case t.Kind == Array && t.Elem != nil && t.Elem.Kind == Int && t.Elem.Size == 1:
	case t.Kind == Ptr:
		c.errorf(x, "%s() takes a string or a char array, not %s: read the string first, as in %s(str(p))", fn, t, fn)
		return nil
	default:
		c.errorf(x, "%s() takes a string or a char array, not %s", fn, t)
		return nil
	}
	return t
}

// checkStrlen checks strlen(s): the bytes before the first NUL.
func (c *checker) checkStrlen(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) || c.stringLike(x.Args[0], "strlen") == nil {
		return nil
	}
	if v, ok := c.probe.Consts[x.Args[0]]; ok && v.IsStr {
		c.setConst(x, Const{Int: uint64(len(v.Str))})
	}
	return TUint64
}

// checkStrcap checks strcap(s): the bytes s can hold, a constant.
func (c *checker) checkStrcap(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.stringLike(x.Args[0], "strcap")
	if t == nil {
		return nil
	}
	c.setConst(x, Const{Int: uint64(t.Size)})
	return TInt64
}

// checkStrstr checks strstr(haystack, needle): where the needle first
// starts in the haystack, or -1.
func (c *checker) checkStrstr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	a, b := c.stringLike(x.Args[0], "strstr"), c.stringLike(x.Args[1], "strstr")
	if a == nil || b == nil {
		return nil
	}
	return TInt64
}

// checkDefaultStrLen checks default_str_length(): the size of str()'s
// strings.
func (c *checker) checkDefaultStrLen(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 0) {
		return nil
	}
	c.setConst(x, Const{Int: uint64(c.conf.StrLen)})
	return TInt64
}

// baseTypes are the names bpftrace's typeinfo() gives the kinds of
// value, which is_str, is_ptr, is_array and is_integer test.
var baseTypes = map[string]Kind{"is_str": Str, "is_ptr": Ptr, "is_array": Array, "is_integer": Int, "is_unsigned_integer": Int}

// checkIsKind checks is_str, is_ptr, is_array, is_integer and
// is_unsigned_integer, answered at compile time from the argument's type.
func (c *checker) checkIsKind(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	yes := t.Kind == baseTypes[x.Fun.Name] && t != TBool && t.Name != "bool"
	if x.Fun.Name == "is_unsigned_integer" {
		yes = yes && !t.Signed
	}
	c.setConst(x, Const{Int: b2u(yes)})
	return c.boolType()
}

// checkIsLiteral checks is_literal(e): whether e is written as a
// literal, an integer, a string or a truth value.
func (c *checker) checkIsLiteral(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) || c.expr(x.Args[0]) == nil {
		return nil
	}
	yes := false
	switch e := syntax.Unparen(x.Args[0]).(type) {
	case *syntax.IntLit, *syntax.StringLit:
		yes = true
	case *syntax.Ident:
		yes = e.Name == "true" || e.Name == "false"
	case *syntax.UnaryExpr:
		_, yes = syntax.Unparen(e.X).(*syntax.IntLit)
		yes = yes && e.Op == syntax.SUB
	}
	c.setConst(x, Const{Int: b2u(yes)})
	return c.boolType()
}

// failText formats fail()'s and static_assert()'s message: a constant
// format with constant arguments.
func (c *checker) failText(x *syntax.CallExpr, args []syntax.Expr) (string, bool) {
	text, ok := c.constString(args[0], x.Fun.Name+"() message")
	if !ok {
		return "", false
	}
	vals := make([]output.Value, 0, len(args)-1)
	for _, a := range args[1:] {
		if c.expr(a) == nil {
			return "", false
		}
		v, ok := c.probe.Consts[a]
		switch {
		case !ok:
			c.errorf(a, "%s() takes constant arguments: it is evaluated when the program is compiled", x.Fun.Name)
			return "", false
		case v.IsStr:
			vals = append(vals, output.String(v.Str))
		default:
			vals = append(vals, output.IntN(v.Int, c.probe.Types[a].Size, c.probe.Types[a].Signed))
		}
	}
	msg, err := output.ParseFormat(text).Sprint(vals)
	if err != nil {
		c.errorf(args[0], "%s(): %v", x.Fun.Name, err)
		return "", false
	}
	return msg, true
}

// checkFail checks fail(fmt, args…), which stops the compilation
// wherever the checker meets it: only an if comptime not taken skips it.
func (c *checker) checkFail(x *syntax.CallExpr, call *Call) *Type {
	if len(x.Args) == 0 {
		c.errorf(x, "fail() needs a message")
		return nil
	}
	if msg, ok := c.failText(x, x.Args); ok {
		c.errorf(x, "%s", msg)
	}
	return nil
}

// checkStaticAssert checks static_assert(cond, msg): cond is a constant
// that must hold, else msg is the compilation's error.
func (c *checker) checkStaticAssert(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	cond, ok := c.constInt(x.Args[0], "static_assert() condition")
	if !ok {
		return nil
	}
	msg, ok := c.failText(x, x.Args[1:])
	if !ok {
		return nil
	}
	if cond == 0 {
		c.errorf(x, "%s", msg)
		return nil
	}
	return TVoid
}

// assertOrigin is where bpftrace 0.26.1's errorf reports a failed
// assert(): the line of its standard library's assert macro.
var assertOrigin = Origin{File: "stdlib/base.bt", Line: 6, Col: 5, EndCol: 37}

// checkAssert checks assert(cond, msg): when cond is false at run time
// the program reports "assert failed: msg" as errorf does and exits
// with status 1. The two calls it makes are checked here, as the
// program could have written them.
func (c *checker) checkAssert(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	if t := c.expr(x.Args[0]); t == nil {
		return nil
	} else if t.Kind != Int && t.Kind != Ptr {
		c.errorf(x.Args[0], "assert() takes a condition, not %s", t)
		return nil
	}
	if t := c.expr(x.Args[1]); t == nil {
		return nil
	} else if t.Kind != Str {
		c.errorf(x.Args[1], "assert() takes a string message, not %s", t)
		return nil
	}
	pos := x.Pos()
	report := &syntax.CallExpr{
		Fun:    &syntax.Ident{NamePos: pos, Name: "errorf"},
		Args:   []syntax.Expr{&syntax.StringLit{ValuePos: pos, EndPos: pos, Value: "assert failed: %s"}, x.Args[1]},
		Rparen: x.End() - 1,
	}
	exit := &syntax.CallExpr{
		Fun:    &syntax.Ident{NamePos: pos, Name: "exit"},
		Args:   []syntax.Expr{&syntax.IntLit{ValuePos: pos, Raw: "1", Value: 1}},
		Rparen: x.End() - 1,
	}
	for _, s := range []*syntax.CallExpr{report, exit} {
		if c.call(s, true) == nil {
			return nil
		}
	}
	c.probe.Calls[report].Origin = &assertOrigin
	call.Then = []*syntax.CallExpr{report, exit}
	return TVoid
}

// checkHasCpid checks has_cpid(): whether kinst runs a command (-c).
func (c *checker) checkHasCpid(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 0) {
		return nil
	}
	c.setConst(x, Const{Int: b2u(c.conf.Cpid)})
	return c.boolType()
}

// checkMemcmp checks memcmp(left, right, count): the first count bytes of
// two values compared as signed chars, as the standard library's
// __memcmp does, which returns the difference of the first bytes that
// differ, or 0. A constant count must lie within both values; a variable
// one compares no further than the smaller.
func (c *checker) checkMemcmp(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 3, 3) {
		return nil
	}
	var sizes [2]int
	for i, a := range x.Args[:2] {
		t := c.expr(a)
		if t == nil {
			return nil
		}
		if !storable(t) {
			c.errorf(a, "memcmp() compares values a variable can hold, not %s", t)
			return nil
		}
		sizes[i] = t.Size
	}
	nt := c.expr(x.Args[2])
	if nt == nil {
		return nil
	}
	if nt.Kind != Int {
		c.errorf(x.Args[2], "memcmp() takes a byte count, not %s", nt)
		return nil
	}
	if v, ok := c.probe.Consts[x.Args[2]]; ok {
		if most := min(sizes[0], sizes[1]); v.Int > uint64(most) {
			c.errorf(x.Args[2], "memcmp() cannot compare %d bytes: the smaller value holds %d", int64(v.Int), most)
			return nil
		}
	}
	return TInt32
}

// checkAssertStr checks assert_str(e), which compiles only if e is
// string-like: a string, or an array of or a pointer to int8. It leaves
// no code.
func (c *checker) checkAssertStr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	char := t.Elem != nil && t.Elem.Kind == Int && t.Elem.Size == 1 && t.Elem.Signed
	switch {
	case t.Kind == Str:
	case t.Kind == Array && !char:
		c.errorf(x, "string-like arrays must contain a char-like type")
		return nil
	case t.Kind == Ptr && !char:
		c.errorf(x, "string-like pointers must point to a char-like type")
		return nil
	case t.Kind != Array && t.Kind != Ptr:
		c.errorf(x, "string-like values must be either strings, arrays or pointers")
		return nil
	}
	return TVoid
}

// checkFind checks find(@m, key, $v): whether @m holds key, and if so
// its value copied to $v, which must be able to hold it as an
// assignment $v = @m[key] would. Call.Elems holds @m[key].
func (c *checker) checkFind(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 3, 3) {
		return nil
	}
	m, ok := x.Args[0].(*syntax.MapExpr)
	if !ok || m.Keys != nil {
		c.errorf(x.Args[0], "find() takes a map, a key and a variable, as in find(@name, key, $v)")
		return nil
	}
	v, ok := x.Args[2].(*syntax.VarExpr)
	if !ok {
		c.errorf(x.Args[2], "find() takes a map, a key and a variable, as in find(@name, key, $v)")
		return nil
	}
	if c.keyless(x, m.Name, "find") {
		return nil
	}
	e := &syntax.MapExpr{NamePos: m.NamePos, Name: m.Name, Keys: []syntax.Expr{x.Args[1]}, Rbrack: x.Args[1].End()}
	mm := c.useMap(e, nil, false)
	if mm == nil {
		return nil
	}
	if !storable(mm.Value) {
		c.errorf(e, "find() cannot read the elements of a %s() map", mm.Value)
		return nil
	}
	c.probe.Types[m] = mm.Value
	c.probe.Types[e] = mm.Value
	mm.Read = true
	c.assign(&syntax.AssignStmt{Lhs: v, OpPos: v.Pos(), Op: syntax.ASSIGN, Rhs: e})
	if c.probe.Types[v] == nil {
		return nil
	}
	call.Map = mm
	call.Elems = []*syntax.MapExpr{e}
	return c.boolType()
}

// checkKfunc checks kfunc_exist(name) and kfunc_allowed(name), answered
// when the program is compiled: whether the kernel's BTF describes the
// function, and whether programs of this probe's type may call it.
func (c *checker) checkKfunc(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) || c.expr(x.Args[0]) == nil {
		return nil
	}
	v, ok := c.probe.Consts[x.Args[0]]
	if _, lit := syntax.Unparen(x.Args[0]).(*syntax.StringLit); !ok || !v.IsStr || !lit {
		c.errorf(x, "%s() accepts a string literal only", x.Fun.Name)
		return nil
	}
	yes := false
	if k := c.conf.Kernel; k != nil {
		if x.Fun.Name == "kfunc_exist" {
			yes = k.Kfunc(v.Str)
		} else {
			yes = k.KfuncAllowed(v.Str, c.probe.Provider)
		}
	}
	c.setConst(x, Const{Int: b2u(yes)})
	return c.boolType()
}

// checkWriteUser checks write_user(dst, src, len): len bytes of src, a
// value the program holds, written to the user address dst. A constant
// len must lie within src; a variable one is bounded by it.
func (c *checker) checkWriteUser(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 3, 3) {
		return nil
	}
	dt := c.expr(x.Args[0])
	if dt == nil {
		return nil
	}
	if dt.Kind != Ptr && dt.Kind != Int {
		c.errorf(x.Args[0], "write_user() writes to a user address, not %s", dt)
		return nil
	}
	st := c.expr(x.Args[1])
	if st == nil {
		return nil
	}
	switch st.Kind {
	case Str, Array, Tuple, Record, Buffer:
	default:
		c.errorf(x.Args[1], "write_user() writes from a value the program holds, a string, an array or a tuple, not %s", st)
		return nil
	}
	nt := c.expr(x.Args[2])
	if nt == nil {
		return nil
	}
	if nt.Kind != Int {
		c.errorf(x.Args[2], "write_user() takes a byte count, not %s", nt)
		return nil
	}
	if v, ok := c.probe.Consts[x.Args[2]]; ok && (v.Int == 0 || v.Int > uint64(st.Size)) {
		c.errorf(x.Args[2], "write_user() cannot write %d bytes of a %s: it holds %d", int64(v.Int), st, st.Size)
		return nil
	}
	return c.boolType()
}

// checkTypeinfo checks typeinfo(e) of bpftrace 0.26: the record
// (btf_id = 0, base_type = "int", full_type = "uint64") that names e's
// type as 0.26.1 does. e may be a type name; it is typed, never run.
func (c *checker) checkTypeinfo(x *syntax.CallExpr, call *Call) *Type {
	if c.conf.Compat == compat.V017 {
		c.errorf(x.Fun, "unknown function typeinfo")
		return nil
	}
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if !c.conf.Typeinfo {
		c.errorf(x, "typeinfo feature is not enabled by default. To enable this unstable feature, set the config flag to enable. unstable_typeinfo=enable")
		return nil
	}
	var t *Type
	if id, ok := syntax.Unparen(x.Args[0]).(*syntax.Ident); ok && (intTypeNames[id.Name] != nil || id.Name == "bool") {
		t = intTypeNames[id.Name]
		if id.Name == "bool" {
			t = TBool
		}
	} else if t = c.expr(x.Args[0]); t == nil {
		return nil
	}
	base, full := typeinfoNames(t)
	pos := x.Pos()
	rec := &syntax.TupleExpr{
		Lparen: pos,
		Names:  []*syntax.Ident{{NamePos: pos, Name: "btf_id"}, {NamePos: pos, Name: "base_type"}, {NamePos: pos, Name: "full_type"}},
		Elems: []syntax.Expr{
			&syntax.CastExpr{Lparen: pos, Type: &syntax.TypeExpr{NamePos: pos, Kind: syntax.IDENT, Name: "uint64"}, X: &syntax.IntLit{ValuePos: pos}},
			&syntax.StringLit{ValuePos: pos, Value: base},
			&syntax.StringLit{ValuePos: pos, Value: full},
		},
		Rparen: x.End(),
	}
	c.probe.Expand[x] = rec
	return c.expr(rec)
}

// typeinfoNames names t as bpftrace 0.26.1's typeinfo() does: the kind
// of type (its base_type) and the whole type (its full_type).
func typeinfoNames(t *Type) (base, full string) {
	switch t.Kind {
	case Int:
		switch {
		case t.IsBool():
			return "bool", "bool"
		case t.Enum != nil:
			return "int", t.Enum.Tag
		case t.Signed:
			return "int", fmt.Sprintf("int%d", 8*t.Size)
		}
		return "int", fmt.Sprintf("uint%d", 8*t.Size)
	case Str, ProbeName, FuncName, Named:
		return "string", fmt.Sprintf("string[%d]", t.Size)
	case Ptr:
		if t.Elem == nil {
			return "pointer", "void *"
		}
		_, elem := typeinfoNames(t.Elem)
		return "pointer", elem + " *"
	case Array:
		_, elem := typeinfoNames(t.Elem)
		return "array", fmt.Sprintf("%s[%d]", elem, t.Len)
	case Record:
		return "c_type", t.Name
	case Tuple:
		elems := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			_, elems[i] = typeinfoNames(e)
		}
		if t.Names == nil {
			return "tuple", "(" + strings.Join(elems, ",") + ")"
		}
		for i, n := range t.Names {
			elems[i] = "." + n + " = " + elems[i]
		}
		return "record", "record { " + strings.Join(elems, ", ") + " }"
	case Buffer:
		return "buffer", fmt.Sprintf("buffer[%d]", t.Size)
	case Inet:
		return "inet", fmt.Sprintf("inet[%d]", t.Size)
	case Stack:
		base = "kstack"
		if t.User {
			base = "ustack"
		}
		mode := t.StackMode
		if mode == "" {
			mode = "bpftrace"
		}
		return base, fmt.Sprintf("%s_%s_%d", base, mode, t.Frames)
	case Ksym:
		return "ksym_t", "ksym_t"
	case Usym:
		return "usym_t", "usym_t"
	case Username:
		return "username", "username"
	case Timestamp:
		return "timestamp", "timestamp"
	case MacAddr:
		return "mac_address", "mac_address"
	case CgroupPath:
		return "cgroup_path_t", "cgroup_path_t"
	case Float:
		return "none", "none"
	}
	return "void", "void"
}
