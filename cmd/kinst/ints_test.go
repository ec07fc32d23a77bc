package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestIntegers: integer typing as bpftrace 0.26.1 has it (tests/runtime
// basic, map, signed_ints and other), against 0.17's int64 literals and
// unsigned results whenever an operand is unsigned.
func TestIntegers(t *testing.T) {
	testenv.Root(t)
	const warn = "warning: Expression of type: uint64 being cast to type: int64. This may cause unexpected results. Use an explicit cast to suppress this warning.\n"
	runLangCases(t, []langCase{
		{name: "large literal", prog: `begin { $a = 10223372036854775807; print(($a)); print(18446744073709551615); exit(); }`,
			want: "10223372036854775807\n18446744073709551615\n\n\n", v017: "-8223372036854775809\n-1\n\n\n"},
		{name: "bitwise not", prog: `begin { @x = ~10; @y = ~-1; exit(); }`,
			want: "\n\n@x: 18446744073709551605\n@y: 0\n", v017: "\n\n@x: -11\n@y: 0\n"},
		{name: "subtraction", prog: `begin { print((uint32)1 - (uint32)2); @x = (uint8)1 - 2; exit(); }`,
			want: "-1\n\n\n@x: -1\n", v017: "18446744073709551615\n\n\n@x: 18446744073709551615\n"},
		{name: "decrement", prog: `begin { $a = (uint8)0; --$a; print($a); $b = (uint32)1; $b--; $b--; print($b); exit(); }`,
			want: "-1\n-1\n\n\n", v017: "255\n4294967295\n\n\n"},
		{name: "mixed signs", prog: `begin { $a = (uint32)1; $a = (int32)-2; print($a); print((int32)-5 / (uint32)2); $z = 0; print((uint32)(5 + $z) < (int32)(-1 + $z)); exit(); }`,
			want: "-2\n-2\nfalse\n\n\n", v017: "4294967294\n9223372036854775805\n1\n\n\n"},
		{name: "literal takes the sign", prog: `begin { $a = 1; $a = (uint64)18446744073709551615; print($a); print((uint64)18446744073709551615 + 0); exit(); }`,
			want: "18446744073709551615\n18446744073709551615\n\n\n", v017: "18446744073709551615\n18446744073709551615\n\n\n"},
		{name: "uint64 key", prog: `begin { @a[18446744073709551615] = 0; exit(); }`,
			want: "\n\n@a[18446744073709551615]: 0\n", v017: "\n\n@a[-1]: 0\n"},
		{name: "sign change", prog: `begin { $a = (uint64)1; $a = (int64)2; print($a); print((uint64)7 - 9); exit(); }`,
			want: "2\n-2\n\n\n", v017: "2\n18446744073709551614\n\n\n",
			stderr: "-e:1:14: " + warn + "begin { $a = (uint64)1; $a = (int64)2; print($a); print((uint64)7 - 9); exit(); }\n             ^~~~~~~~~\n" +
				"-e:1:57: " + warn + "begin { $a = (uint64)1; $a = (int64)2; print($a); print((uint64)7 - 9); exit(); }\n                                                        ^~~~~~~~~\n"},
		{name: "literal out of range", prog: `begin { let $a: uint8 = 256; exit(); }`, code: 1, defaultOnly: true,
			stderr: "-e:1:13: Type mismatch for $a: a int16 value does not fit its declared type uint8\nbegin { let $a: uint8 = 256; exit(); }\n            ^~~~~~~~~~~~~~~\n"},
		{name: "ternary buffers", prog: `begin { $a = nsecs ? buf("hi", 2) : buf("bye", 3); $b = nsecs ? buf("bye", 3) : buf("hi", 2); print(($a, $b)); exit(); }`,
			want: "(hi, bye)\n\n\n", defaultOnly: true},
	})
	// Named options take the type of their default: a positive one is
	// uint64, a negative one int64.
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", `begin { print((getopt("aa", 20), getopt("bb", -1), getopt("cc", true), getopt("dd"), getopt("ee", "hello"))); exit(); }`,
		"--", "--dd", "--aa=0xffffffffffffffff", "--bb=-10", "--cc=False").want(t, 0, "(18446744073709551615, -10, false, true, hello)\n\n\n", "")
	// 0.17 has no buffers of two sizes in one ?:.
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", `BEGIN { $a = nsecs ? buf("hi", 2) : buf("bye", 3); exit(); }`).want(t, 1, "",
		"-e:1:14: the branches of ?: have different types: buffer and buffer\nBEGIN { $a = nsecs ? buf(\"hi\", 2) : buf(\"bye\", 3); exit(); }\n             ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n")
}

// TestAggregationReads: bpftrace 0.26.1 reads count(), sum(), min(),
// max() and avg() maps as integers, their values over all CPUs; 0.17
// only prints them.
func TestAggregationReads(t *testing.T) {
	testenv.Root(t)
	testenv.Require(t, testenv.MapLookupPercpuElem)
	runLangCases(t, []langCase{
		{name: "values", prog: `begin { @a = avg(5); @a = avg(8); @c = count(); @s = sum(5); @mn = min(1); @mx = max(-1); print((@a, @c, @s, @mn, @mx)); clear(@a); clear(@c); clear(@s); clear(@mn); clear(@mx); exit(); }`,
			want: "(6, 1, 5, 1, -1)\n\n\n", defaultOnly: true},
		{name: "avg of negatives", prog: `begin { @ = avg(-1); @ = avg(-1); @ = avg(-10); if (@ == -4) { printf("done\n"); } clear(@); exit(); }`,
			want: "done\n\n\n", defaultOnly: true},
		{name: "arithmetic and keys", prog: `begin { @a = sum(10); @b = count(); $c = @a + @b; @k[@a, @b, (int64)@b] = $c; @m = max(3); print(@m * 2); exit(); }`,
			want: "6\n\n\n@a: 10\n@b: 1\n@k[10, 1, 1]: 11\n@m: 3\n", defaultOnly: true},
	})
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", `BEGIN { @c = count(); if (@c > 0) { exit(); } }`).want(t, 1, "",
		"-e:1:27: @c holds count() values, which can only be printed, not read\nBEGIN { @c = count(); if (@c > 0) { exit(); } }\n                          ^~\n")
}

// TestEnums: bpftrace 0.26.1 takes enums without a tag, and prints an
// enum's values as their names in text (maps, tuples, print, printf's
// %s) but as numbers in JSON and once arithmetic made them integers.
func TestEnums(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "symbolized", prog: `enum { ONE = 1, TWO = 2 }; begin { @[ONE] = 11; @[TWO] = 22; @v = ONE; @t = (ONE, TWO); @k[ONE, TWO] = -1; $f = TWO; print($f); print(($f, ONE)); exit(); }`,
			want: "TWO\n(TWO, ONE)\n\n\n@[ONE]: 11\n@[TWO]: 22\n@k[ONE, TWO]: -1\n@t: (ONE, TWO)\n@v: ONE\n", defaultOnly: true},
		{name: "after arithmetic", prog: `enum { ONE = 1, TWO = 2 }; begin { @[ONE + 1] = TWO + 1; @[ONE] = ONE; exit(); }`,
			want: "\n\n@[1]: 1\n@[2]: 3\n", defaultOnly: true},
		{name: "printf", prog: `enum Foo { ONE = 1, TWO = 2, OTHER = 99999 }; begin { $x = 100; printf("%d %s %s %-5s|%5s\n", ONE, OTHER, (enum Foo)2, (enum Foo)$x, ONE); print((enum Foo)1); exit(); }`,
			want: "1 OTHER TWO 100  |  ONE\nONE\n\n\n", defaultOnly: true},
		{name: "tagged, as integers", prog: `enum Foo { ONE = 1, TWO = 2 }; begin { @v = TWO; $x = ONE; print($x); exit(); }`,
			want: "ONE\n\n\n@v: TWO\n", v017: "1\n\n\n@v: 2\n"},
	})
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-f", "json", "-e", `enum { FOO = 333 }; begin { $f = FOO; print($f); printf("%s\n", $f); @m[FOO] = FOO; exit(); }`).want(t, 0,
		`{"type": "value", "data": 333}`+"\n"+`{"type": "printf", "data": "FOO\n"}`+"\n"+`{"type": "map", "data": {"@m": {"FOO": 333}}}`+"\n", "")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", `enum { FOO = 333 }; BEGIN { print(FOO); exit(); }`).want(t, 1, "",
		"-e:1:1: a enum declared outside a typedef needs a name\nenum { FOO = 333 }; BEGIN { print(FOO); exit(); }\n^~~~\n")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", `enum Foo { FOO = 333 }; BEGIN { printf("%s\n", FOO); exit(); }`).want(t, 1, "",
		"-e:1:41: printf(): %s specifier expects a value of type string (integer supplied)\nenum Foo { FOO = 333 }; BEGIN { printf(\"%s\\n\", FOO); exit(); }\n                                        ^\n")
}
