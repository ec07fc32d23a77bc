package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

// TestValueTypes: the types of bpftrace 0.26.1's value syntax.
func TestValueTypes(t *testing.T) {
	tests := []struct {
		src  string
		want string // @x's value type
	}{
		{`BEGIN { @x = (a = 1, b = "x") }`, "record { .a = int8, .b = string[2] }"},
		{`BEGIN { @x = (a = 1, b = (c = "x", d = (1, 2))) }`, "record { .a = int8, .b = record { .c = string[2], .d = (int8, int8) } }"},
		// The first order stays; the fields widen by name.
		{`BEGIN { $r = (a = (uint8)1, b = "x"); $r = (b = "long", a = (uint16)2); @x = $r }`, "record { .a = uint16, .b = string[5] }"},
		{`BEGIN { $r = (a = 1, b = "x"); @x = $r.b }`, "string[2]"},
		{`BEGIN { @x = (1, "a", 3)[1] }`, "string[2]"},
		{`BEGIN { $y = (uint16)1; @x = $y ?: 5 }`, "uint16"},
		{`BEGIN { @x = { $a = (uint8)1; $a } }`, "uint8"},
		{`BEGIN { $a = 1; @x = &$a }`, "int8 *"},
		{`BEGIN { $a = (1, "b"); @x = *&$a }`, "(int8, string[2])"},
		{`BEGIN { @m = 1; @x = &@m }`, "void *"},
		{`BEGIN { $a = (uint16)1; @x = (typeof($a))70000 }`, "uint16"},
		{`BEGIN { @x = sizeof(typeof((1, (uint8)2))) }`, "uint64"},
		{`BEGIN { @x = (int8[])"abc" }`, "int8[4]"},
		{`BEGIN { @x = (uint32)pton("1.2.3.4") }`, "uint32"},
		{`BEGIN { let $w: uint16[3]; @x = $w }`, "uint16[3]"},
		{`BEGIN { @x = comptime (1 + 2) }`, "int8"},
		{`BEGIN { if comptime 1 { @x = "s" } else { @x = 1 } }`, "string[2]"},
		{`BEGIN { let $a; @x = $a; $a = (uint8)1 }`, "uint8"},
		// A flexible array member takes any index.
		{`struct D { int x; int y[0]; } BEGIN { @x = ((struct D *)0)->y[3] }`, "int32"},
	}
	for _, tt := range tests {
		wantValueOfX(t, tt.src, nil, tt.want)
	}
}

// TestValueConstants: what 0.26.1's value syntax folds.
func TestValueConstants(t *testing.T) {
	tests := []struct {
		src  string
		want int64
	}{
		{"BEGIN { @x = 0 ?: 7 }", 7},
		{"BEGIN { @x = 3 ?: 7 }", 3},
		{"BEGIN { @x = comptime (2 * 3) }", 6},
		{"struct s { char c; struct t { int a; int b; } t; } BEGIN { @x = offsetof(struct s, t.b) }", 8},
		{"struct s { int a; char b; int c; } __attribute__((packed)) __attribute__((aligned(2))) BEGIN { @x = sizeof(struct s) }", 10},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, tt.src, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		p := prog.Probes[0]
		stmts := p.Syntax.Body.Stmts
		v, ok := p.Consts[stmts[len(stmts)-1].(*syntax.AssignStmt).Rhs]
		if !ok {
			t.Errorf("%s: not constant", tt.src)
			continue
		}
		if int64(v.Int) != tt.want {
			t.Errorf("%s = %d, want %d", tt.src, int64(v.Int), tt.want)
		}
	}
}
