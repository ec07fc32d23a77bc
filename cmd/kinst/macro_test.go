package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestMacros runs programs of bpftrace 0.26.1's tests/runtime/macro
// in the default mode, with their expected output.
func TestMacros(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct{ name, prog, want string }{
		{"it mutates the passed variable",
			`macro inc($x) { $x += 1; } begin { $a = 1; inc($a); print($a); exit(); }`, "2\n\n\n"},
		{"it assigns to the last expression",
			`macro inc($x) { $x += 1; $x } begin { $a = 1; $b = inc($a); print(($a, $b)); exit(); }`, "(2, 2)\n\n\n"},
		{"it mutates the passed map",
			`macro set(@x) { @x[1] = 2; } begin { @a[1] = 1; set(@a); exit(); }`, "\n\n@a[1]: 2\n"},
		{"it re-names variables to prevent collision",
			`macro inc(x) { $y = x + 1; $y } begin { $y = 2; $z = inc(5); print(($y, $z)); exit(); }`, "(2, 6)\n\n\n"},
		{"it can call other macros as statements",
			`macro add1($x) { $x += 1; } macro add2($y) { add1($y); $y += 1; } macro add3($z) { add2($z); $z += 1; } begin { $a = 1; add3($a); print($a); exit(); }`, "4\n\n\n"},
		{"definition order does not matter",
			`macro add2(x) { x + add1(x) } macro add3(x) { x + add2(x) } macro add1(x) { x + 1 } begin { print(add3(1)); exit(); }`, "4\n\n\n"},
		{"it expands idents if there is a matching macro",
			`macro one() { $x = 1; $x } begin { $a = one; print($a); exit(); }`, "1\n\n\n"},
		{"for loops can be in macros",
			`macro loop_map(@a) { $x = 1; for ($kv : @a) { $x += $kv.1; } $x } begin { @x[1] = 5; @x[2] = 10; print(loop_map(@x)); clear(@x); exit(); }`, "16\n\n\n"},
		{"it can exit early",
			`macro early() { exit(); } begin { early(); print(1); }`, "\n\n"},
		{"macro arg idents take precedence over macros with no arguments",
			`macro add() { 2 } macro ident(add) { add } begin { print(ident(1)); exit(); }`, "1\n\n\n"},
		{"it replaces the passed in expression in multiple expression statement locations",
			`macro side_effects(x) { x; x; x; } begin { side_effects({ printf("hi") }); exit(); }`, "hihihi\n\n"},
		{"builtin wrapper username",
			`begin { if (__builtin_username == username() && __builtin_username == username && !(username != username)) { printf("SUCCESS\n"); } exit(); }`, "SUCCESS\n\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", tc.prog)
			if r.code != 0 || r.stdout != tc.want {
				t.Errorf("exit %d, stdout %q, want %q\nstderr:\n%s", r.code, r.stdout, tc.want, r.stderr)
			}
		})
	}
}

// TestMacroErrors: an error the checker finds in a macro's body points
// into the body and names the call that expanded it.
func TestMacroErrors(t *testing.T) {
	testenv.Root(t)
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", "macro f(x) { $q + x }\nbegin { print(f(1)); }").want(t, 1, "",
		`-e:1:14: Undefined or undeclared variable: $q
macro f(x) { $q + x }
             ^~
-e:2:15: note: in the expansion of macro f called here
begin { print(f(1)); }
              ^~~~
`)
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", "macro a() { a() }\nbegin { a(); }").want(t, 1, "",
		`-e:1:13: macro a calls itself without end: a > a
macro a() { a() }
            ^~~
-e:2:9: note: in the expansion of macro a called here
begin { a(); }
        ^~~
`)
}
