package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

// TestCheckExpandedMacros checks programs after macro expansion: what
// the checker finds in a macro's body points into the body, with a note
// at the call, and each call's variables are its own.
func TestCheckExpandedMacros(t *testing.T) {
	tests := []struct {
		name, src, want string // want: the errors' detail, "" for none
	}{
		{"a variable of the caller's is not the macro's",
			"macro f(x) { $a + x }\nBEGIN { $a = 1; @r = f(2); }",
			"t:1:14: Undefined or undeclared variable: $a\nmacro f(x) { $a + x }\n             ^~\nt:2:22: note: in the expansion of macro f called here\nBEGIN { $a = 1; @r = f(2); }\n                     ^~~~"},
		{"a type error in the substituted argument points at the caller",
			"macro twice(x) { x * 2 }\nBEGIN { @r = twice(\"s\"); }",
			"t:2:20: invalid operation: string[2] * int8 (strings support only == and !=)\nBEGIN { @r = twice(\"s\"); }\n                   ^~~~~~~"},
		{"the same variable name in two calls",
			"macro tmp(x) { $t = x; $t }\nBEGIN { @a = tmp(1); @b = tmp(\"s\"); }", ""},
	}
	for _, tt := range tests {
		prog, err := syntax.Parse("t", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := syntax.Expand(prog, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_, err = Check(prog, &Config{Resolver: fakeResolver{}})
		got := ""
		if err != nil {
			got = err.(syntax.ErrorList).Detail()
		}
		if got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
