package check

import (
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
