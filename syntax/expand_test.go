package syntax

import (
	"strings"
	"testing"
)

// TestExpand expands programs written after the examples of bpftrace
// 0.26's language guide and tests/runtime/macro, and prints the result.
func TestExpand(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"zero arguments, called and bare",
			"macro one() { 1 } begin { print(one()); print(one); }",
			"begin\n{\n\tprint(1);\n\tprint(1);\n}\n"},
		{"expression parameter",
			"macro add_one(x) { x + 1 } begin { $a = 10; print(add_one($a + 1)); }",
			"begin\n{\n\t$a = 10;\n\tprint($a + 1 + 1);\n}\n"},
		{"variable and map parameters are the caller's",
			"macro inc_each($a, @b) { $a += 1; @b[1] += 1; } begin { $v = 1; inc_each($v, @m); }",
			"begin\n{\n\t$v = 1;\n\t$v += 1;\n\t@m[1] += 1;\n}\n"},
		{"statements run before the statement that uses the value",
			"macro inc($x) { $x += 1; $x } begin { $a = 1; $b = inc($a); }",
			"begin\n{\n\t$a = 1;\n\t$a += 1;\n\t$b = $a;\n}\n"},
		{"the macro's own variables are renamed for each call",
			"macro add(x) { $y = x + 1; $y } begin { $y = 2; $z = add(5); $w = add(6); }",
			"begin\n{\n\t$y = 2;\n\t$y'1 = 5 + 1;\n\t$z = $y'1;\n\t$y'2 = 6 + 1;\n\t$w = $y'2;\n}\n"},
		{"a variable the macro declares with let is its own",
			"macro add(x) { let $y: uint8 = x; $y + 1 } begin { let $y = 2; $z = add(f(add(5))); }",
			"begin\n{\n\tlet $y = 2;\n\tlet $y'1: uint8 = 5;\n\tlet $y'2: uint8 = f($y'1 + 1);\n\t$z = $y'2 + 1;\n}\n"},
		{"macros calling macros, defined in any order",
			"macro add2(y) { y + add1(y) } macro add1(x) { x + 1 } begin { print(add2(1)); }",
			"begin\n{\n\tprint(1 + (1 + 1));\n}\n"},
		{"overloading by arity",
			"macro f() { 0 } macro f(x) { x } macro f(x, y) { x * y } begin { print((f, f(1), f(2, 3))); }",
			"begin\n{\n\tprint((0, 1, 2 * 3));\n}\n"},
		{"a parameter hides a macro of the same name",
			"macro add() { 2 } macro ident(add) { add } begin { print(ident(1)); }",
			"begin\n{\n\tprint(1);\n}\n"},
		{"a statement call without a value",
			"macro twice(x) { x; x; } begin { twice(printf(\"hi\")); }",
			"begin\n{\n\tprintf(\"hi\");\n\tprintf(\"hi\");\n}\n"},
		{"a value a statement call does not use is dropped",
			"macro inc($x) { $x += 1; $x } macro say() { printf(\"x\") } begin { $a = 0; inc($a); say; }",
			"begin\n{\n\t$a = 0;\n\t$a += 1;\n\tprintf(\"x\");\n}\n"},
		{"a call no definition takes is the builtin's",
			"macro cpu(x) { x } begin { print(cpu(\"hi\")); print(cpu()); }",
			"begin\n{\n\tprint(\"hi\");\n\tprint(cpu());\n}\n"},
		{"else if keeps its hoisted statements in its branch",
			"macro g($x) { $x++; $x } begin { $a = 0; if ($a) { } else if (g($a)) { } }",
			"begin\n{\n\t$a = 0;\n\tif ($a) {\n\t} else {\n\t\t$a++;\n\t\tif ($a) {\n\t\t}\n\t}\n}\n"},
		{"in a predicate",
			"macro big(x) { x > 10 } t:a:b / big(pid) / { }",
			"t:a:b /pid > 10/\n{\n}\n"},
	}
	for _, tt := range tests {
		prog, err := Parse("t.bt", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		// cpu stands for the builtins.
		if err := Expand(prog, func(name string) bool { return name == "cpu" }); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := String(prog); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

// TestExpandErrors checks each misuse's message, line and caret, and
// the notes that name the calls an error inside a macro comes from.
func TestExpandErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"recursion gives the chain",
			"macro a() { b() }\nmacro b() { a() }\nbegin { print(a()); }",
			`t.bt:2:13: macro a calls itself without end: a > b > a
macro b() { a() }
            ^~~
t.bt:1:13: note: in the expansion of macro b called here
macro a() { b() }
            ^~~
t.bt:3:15: note: in the expansion of macro a called here
begin { print(a()); }
              ^~~`},
		{"wrong number of arguments",
			"macro f(x) { x }\nbegin { f(1, 2); }",
			"t.bt:2:9: macro f takes 1 argument, not 2\nbegin { f(1, 2); }\n        ^~~~~~~"},
		{"an expression for a variable parameter",
			"macro f($x) { $x++ }\nbegin { f(1 + 1); }",
			"t.bt:2:11: macro f takes a variable for $x, as in f($x)\nbegin { f(1 + 1); }\n          ^~~~~"},
		{"a map element for a map parameter",
			"macro f(@m) { @m++ }\nbegin { f(@a[1]); }",
			"t.bt:2:11: macro f takes a map for @m, as in f(@m), without keys\nbegin { f(@a[1]); }\n          ^~~~~"},
		{"a map not passed in",
			"macro f() { @x++; }\nbegin { f(); }",
			`t.bt:1:13: macro f uses @x, which is not one of its parameters: a macro reaches only the maps passed to it
macro f() { @x++; }
            ^~
t.bt:2:9: note: in the expansion of macro f called here
begin { f(); }
        ^~~`},
		{"no value",
			"macro f() { exit(); }\nbegin { print(f()); }",
			"t.bt:2:15: macro f has no value: its body does not end in an expression without ';'\nbegin { print(f()); }\n              ^~~"},
		{"statements where they cannot be hoisted",
			"macro f() { $a = 1; $a }\nbegin { while (f()) { } }",
			"t.bt:2:16: macro f runs statements, which cannot run in a while condition; call it in a statement of its own\nbegin { while (f()) { } }\n               ^~~"},
		{"defined twice",
			"macro f(x) { 1 }\nmacro f(y) { 2 }\nbegin { }",
			"t.bt:2:7: macro f with 1 parameter is defined twice; the first definition is at t.bt:1:7\nmacro f(y) { 2 }\n      ^"},
		{"a parameter named twice",
			"macro f(x, x) { 1 }\nbegin { }",
			"t.bt:1:12: macro f has two parameters x\nmacro f(x, x) { 1 }\n           ^"},
	}
	for _, tt := range tests {
		prog, err := Parse("t.bt", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err = Expand(prog, nil)
		list, ok := err.(ErrorList)
		if !ok {
			t.Errorf("%s: got %v, want an ErrorList", tt.name, err)
			continue
		}
		if got := list.Detail(); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

func TestParseMacroErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"macro f(1) { }\nbegin { }", "t.bt:1:9: expected a macro parameter: $variable, @map or name, found '1'"},
		{"macro f() 1\nbegin { }", "t.bt:1:11: expected '{' to begin the macro's body, found '1'"},
	}
	for _, tt := range tests {
		_, err := Parse("t.bt", []byte(tt.src))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %s", tt.src, err, tt.want)
		}
	}
}
