package syntax

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ResolveGetopt replaces every getopt("name"[, default[, "description"]])
// of prog (bpftrace 0.26) with the value of the program option --name
// among opts, which are the program's arguments that start with "--",
// or with the default. The default's type is the option's: a boolean
// (true, false, or none: getopt("name") is false unless --name is
// given), an integer or a string. The returned error is an ErrorList
// for a getopt written wrongly, and a plain error for options that do
// not fit the program's.
func ResolveGetopt(prog *Program, opts []string) error {
	given := map[string]string{}
	var order []string
	for _, o := range opts {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		if !hasValue {
			value = "true"
		}
		if _, dup := given[name]; !dup {
			order = append(order, name)
		}
		given[name] = value
	}
	type option struct{ desc string }
	known := map[string]option{}
	var errs ErrorList
	var optErr error
	RewriteExprs(prog, func(x Expr) Expr {
		call, ok := x.(*CallExpr)
		if !ok || call.Fun.Name != "getopt" {
			return x
		}
		lit, err := getopt(call, given)
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.File = prog.File
				errs = append(errs, e)
			} else if optErr == nil {
				optErr = err
			}
			return x
		}
		name := call.Args[0].(*StringLit).Value
		if len(call.Args) == 3 {
			known[name] = option{desc: call.Args[2].(*StringLit).Value}
		} else if _, ok := known[name]; !ok {
			known[name] = option{}
		}
		return lit
	})
	if len(errs) > 0 {
		return errs
	}
	if optErr != nil {
		return optErr
	}
	var unknown []string
	for _, name := range order {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, "--"+name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	var expected []string
	for _, name := range names {
		s := "--" + name
		if d := known[name].desc; d != "" {
			s += ": " + d
		}
		expected = append(expected, s)
	}
	msg := fmt.Sprintf("unexpected program command line options: %s", strings.Join(unknown, " "))
	if len(expected) == 0 {
		return fmt.Errorf("%s; the program takes none", msg)
	}
	return fmt.Errorf("%s; the program takes: %s", msg, strings.Join(expected, ", "))
}

// getopt gives the literal a call of getopt stands for.
func getopt(call *CallExpr, given map[string]string) (Expr, error) {
	located := func(n Node, format string, args ...any) error {
		return &Error{Pos: n.Pos(), End: n.End(), Msg: fmt.Sprintf(format, args...)}
	}
	args := call.Args
	if len(args) < 1 || len(args) > 3 {
		return nil, located(call, "getopt takes an option's name, a default and a description: getopt(\"name\"[, default[, \"description\"]])")
	}
	name, ok := args[0].(*StringLit)
	if !ok {
		return nil, located(args[0], "getopt's first argument is the option's name, a string literal")
	}
	if len(args) == 3 {
		if _, ok := args[2].(*StringLit); !ok {
			return nil, located(args[2], "getopt's description is a string literal")
		}
	}
	def := Expr(&Ident{NamePos: call.Pos(), Name: "false"})
	if len(args) > 1 {
		def = args[1]
	}
	value, set := given[name.Value]
	pos, end := call.Pos(), call.End()
	switch d := Unparen(def).(type) {
	case *Ident:
		if d.Name != "true" && d.Name != "false" {
			break
		}
		if !set {
			return &Ident{NamePos: pos, Name: d.Name}, nil
		}
		switch strings.ToLower(value) {
		case "true", "1":
			return &Ident{NamePos: pos, Name: "true"}, nil
		case "false", "0":
			return &Ident{NamePos: pos, Name: "false"}, nil
		}
		return nil, fmt.Errorf("program command line option --%s invalid boolean (value: %s): give true, false, 1 or 0", name.Value, value)
	case *StringLit:
		if !set {
			value = d.Value
		}
		return &StringLit{ValuePos: pos, EndPos: end, Value: value}, nil
	case *IntLit, *UnaryExpr:
		if u, ok := d.(*UnaryExpr); ok {
			if _, lit := u.X.(*IntLit); !lit || u.Op != SUB {
				break
			}
		}
		if !set {
			// The default as written, at the call's place.
			value = String(d)
		}
		neg := strings.HasPrefix(value, "-")
		n, err := strconv.ParseUint(strings.TrimPrefix(value, "-"), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("program command line option --%s invalid integer (value: %s)", name.Value, value)
		}
		lit := &IntLit{ValuePos: pos, Raw: strconv.FormatUint(n, 10), Value: n}
		if neg {
			return &UnaryExpr{OpPos: pos, Op: SUB, X: lit}, nil
		}
		return lit, nil
	}
	return nil, located(def, "getopt's default is a boolean, integer or string literal: it gives the option's type")
}
