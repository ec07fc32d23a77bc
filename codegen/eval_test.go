package codegen_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"kinst.dev/kinst"
	"kinst.dev/kinst/internal/testenv"
)

// eval runs src, a BEGIN probe, through BPF_PROG_TEST_RUN and returns
// the final contents of its maps.
func eval(t *testing.T, src string, maps ...string) map[string]*kinst.Map {
	t.Helper()
	prog, err := kinst.Compile("eval.bt", []byte(src), nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	run, err := prog.Start(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	got := map[string]*kinst.Map{}
	for _, name := range maps {
		if got[name], err = run.Map(name); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// TestExpressions computes expressions in the kernel and compares their
// values, Go types included, with the table's. Operands are variables,
// so that the checker cannot fold them and the instructions run.
func TestExpressions(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		vars, expr string
		want       any
	}{
		{"$a = 7; $b = 2", "$a / $b", int64(3)},
		{"$a = -7; $b = 2", "$a / $b", int64(-3)},
		{"$a = -7; $b = 3", "$a % $b", int64(-1)},
		{"$a = 7; $b = -3", "$a % $b", int64(1)},
		{"$a = (uint64)7; $b = 2", "$a / $b", uint64(3)},
		// bpftrace 0.26.1 makes division and remainder by zero 1, with
		// a warning, where BPF's would be 0 and the dividend.
		{"$a = 100; $b = 0", "$a / $b", int64(1)},
		{"$a = 100; $b = 0", "$a % $b", int64(1)},
		{"$a = -100; $b = 0", "$a % $b", int64(1)},
		{"$a = (uint64)0; $b = 1", "$a - $b", int64(-1)},
		// Operands are widened to 64 bits before the operation.
		{"$a = (uint32)0; $b = (uint32)1", "$a - $b", int64(-1)},
		{"$a = (uint8)255; $b = (uint8)1", "$a + $b", uint64(256)},
		{"$a = (int8)127; $b = (int8)1", "$a + $b", int64(128)},
		{"$a = (int8)-128; $b = (int8)-1", "$a / $b", int64(128)},
		{"$a = 9223372036854775807; $b = 1", "$a + $b", int64(-1 << 63)},
		{"$a = 1000000; $b = 1000000", "$a * $b", int64(1000000000000)},
		{"$a = (int16)-2; $b = (uint16)3", "$a * $b", int64(-6)},
		{"$a = (int32)-5; $b = (uint32)2", "$a / $b", int64(-2)},
		{"$a = 1; $b = 63", "$a << $b", int64(-1 << 63)},
		{"$a = -16; $b = 2", "$a >> $b", int64(-4)},
		{"$a = (uint64)-16; $b = 2", "$a >> $b", uint64(1<<64-16) >> 2},
		{"$a = (int32)-16; $b = 2", "$a >> $b", int64(-4)},
		{"$a = 0xff; $b = 0x0f", "$a & $b", int64(0x0f)},
		{"$a = 0xf0; $b = 0x0f", "$a | $b", int64(0xff)},
		{"$a = 0xff; $b = 0x0f", "$a ^ $b", int64(0xf0)},
		{"$a = 0", "~$a", int64(-1)},
		{"$a = (uint32)0", "~$a", uint64(1<<32 - 1)},
		{"$a = (uint8)0", "~$a", uint64(0xff)},
		// Comparisons and logical operators give bools.
		{"$a = 5", "!$a", false},
		{"$a = 0", "!$a", true},
		{"$a = 3", "-$a", int64(-3)},
		{"$a = -1; $b = 1", "$a < $b", true},
		{"$a = (uint64)-1; $b = 1", "$a < $b", false},
		{"$a = 3; $b = 3", "$a <= $b", true},
		{"$a = 3; $b = 4", "$a >= $b", false},
		{"$a = 3; $b = 3", "$a != $b", false},
		{"$a = 1; $b = 0", "$a && $b", false},
		{"$a = 1; $b = 2", "$a && $b", true},
		{"$a = 0; $b = 3", "$a || $b", true},
		{"$a = 0; $b = 0", "$a || $b", false},
		{"$a = 1", "$a ? 10 : 20", int64(10)},
		{"$a = 0", "$a ? 10 : 20", int64(20)},
		{"$a = 5; $b = 3", `$a > $b ? "yes" : "no"`, "yes"},
		{"$a = 200", "(int8)$a", int64(-56)},
		{"$a = 300", "(uint8)$a", uint64(44)},
		{"$a = -1", "(uint16)$a", uint64(0xffff)},
		{"$a = 4294967295", "(int32)$a", int64(-1)},
		{"$a = (int8)-1", "(uint64)$a", uint64(1<<64 - 1)},
		{"$a = (uint8)255", "(int64)$a", int64(255)},
		{`$a = "abc"; $b = "abc"`, "$a == $b", true},
		{`$a = "abc"; $b = "abd"`, "$a == $b", false},
		{`$a = "abc"; $b = "ab"`, "$a != $b", true},
		{"$a = 10; $b = 3", "$a / $b * $b + $a % $b", int64(10)},
		{"$a = 2; $b = 3", "($a + $b) * ($a - $b)", int64(-5)},
		{"$a = 7; $b = 9", "($a, $b, $a + $b)", []any{int64(7), int64(9), int64(16)}},
		{`$a = (1, "two")`, "$a", []any{int64(1), "two"}},
		{`$a = "hello"`, "$a", "hello"},
	}
	for _, tt := range tests {
		src := fmt.Sprintf("BEGIN { %s; @ = %s; exit() }", tt.vars, tt.expr)
		m := eval(t, src, "@")["@"]
		if len(m.Entries) != 1 {
			t.Errorf("%s: %d entries", src, len(m.Entries))
			continue
		}
		if got := m.Entries[0].Value; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", src, got, tt.want)
		}
	}
}

// intType is one of the language's integer types.
type intType struct {
	name   string
	bits   uint
	signed bool
}

// value is v converted to t and widened to 64 bits, as an operand is.
func (t intType) value(v int64) uint64 {
	shift := 64 - t.bits
	if t.signed {
		return uint64(v << shift >> shift)
	}
	return uint64(v) << shift >> shift
}

// binaryOp is what a binary operator computes on 64-bit operands, as C
// does, except that BPF divides by zero to 0 and leaves the dividend as
// the remainder.
func binaryOp(op string, a, b uint64, signed bool) uint64 {
	bool01 := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "&":
		return a & b
	case "|":
		return a | b
	case "^":
		return a ^ b
	case "<<":
		return a << b
	case ">>":
		if signed {
			return uint64(int64(a) >> b)
		}
		return a >> b
	case "/", "%":
		switch {
		case b == 0:
			// bpftrace 0.26.1's result, where BPF's would be 0 or a.
			return 1
		case signed && op == "/":
			return uint64(int64(a) / int64(b))
		case signed:
			return uint64(int64(a) % int64(b))
		case op == "/":
			return a / b
		}
		return a % b
	case "==":
		return bool01(a == b)
	case "!=":
		return bool01(a != b)
	case "<":
		return bool01(signed && int64(a) < int64(b) || !signed && a < b)
	case "<=":
		return bool01(signed && int64(a) <= int64(b) || !signed && a <= b)
	case ">":
		return bool01(signed && int64(a) > int64(b) || !signed && a > b)
	case ">=":
		return bool01(signed && int64(a) >= int64(b) || !signed && a >= b)
	}
	panic("unknown operator " + op)
}

// TestArithmeticMatrix is a differential test of integer arithmetic:
// every binary operator over every pair of integer types and a set of
// operands that wrap, truncate and change sign, computed in the kernel
// and by binaryOp. One program per operator runs every case; $z, zero
// at run time, keeps the checker from folding the operands and makes
// the casts run.
func TestArithmeticMatrix(t *testing.T) {
	testenv.Root(t)
	types := []intType{
		{"int8", 8, true}, {"uint8", 8, false}, {"int16", 16, true}, {"uint16", 16, false},
		{"int32", 32, true}, {"uint32", 32, false}, {"int64", 64, true}, {"uint64", 64, false},
	}
	operands := [][2]int64{{7, 2}, {-7, 2}, {-7, -3}, {100, 0}, {200, 3}, {1 << 31, -1}, {-129, 65}, {1<<40 + 5, 1<<32 + 7}}
	ops := []string{"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">="}
	for _, op := range ops {
		t.Run(op, func(t *testing.T) {
			type result struct {
				expr string
				want any
			}
			want := map[string]map[int64]result{}
			var src strings.Builder
			src.WriteString("BEGIN {\n$z = 0;\n")
			i := int64(0)
			for _, ta := range types {
				for _, tb := range types {
					for _, v := range operands {
						a, b := ta.value(v[0]), tb.value(v[1])
						if (op == "<<" || op == ">>") && b >= 64 {
							continue // C leaves such shifts undefined
						}
						// bpftrace 0.26 computes in the result's type,
						// int64 when an operand is signed or the operator
						// subtracts, and compares in the type both
						// promote to, signed when either is.
						signed := ta.signed || tb.signed || op == "-"
						got := binaryOp(op, a, b, signed)
						name, w := "@u", any(got)
						switch {
						case strings.ContainsAny(op, "=<>") && op != "<<" && op != ">>":
							name, w = "@c", got != 0
						case signed:
							name, w = "@s", int64(got)
						}
						expr := fmt.Sprintf("(%s)(%d + $z) %s (%s)(%d + $z)", ta.name, v[0], op, tb.name, v[1])
						fmt.Fprintf(&src, "%s[%d] = %s;\n", name, i, expr)
						if want[name] == nil {
							want[name] = map[int64]result{}
						}
						want[name][i] = result{expr, w}
						i++
					}
				}
			}
			src.WriteString("exit()\n}\n")
			var names []string
			for name := range want {
				names = append(names, name)
			}
			got := eval(t, src.String(), names...)
			for _, name := range names {
				m := got[name]
				if len(m.Entries) != len(want[name]) {
					t.Errorf("%s has %d entries, want %d", name, len(m.Entries), len(want[name]))
				}
				for _, e := range m.Entries {
					r := want[name][e.Key[0].(int64)]
					if !reflect.DeepEqual(e.Value, r.want) {
						t.Errorf("%s = %#v, want %#v", r.expr, e.Value, r.want)
					}
				}
			}
		})
	}
}
