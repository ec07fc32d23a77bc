package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestRecords: bpftrace 0.26.1's records, (a = 1, b = "x"): field
// access, printing, evaluation order, as map keys and values.
func TestRecords(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "access", prog: `begin { $v = 99; $t = (a=0, b=1, c="str", d=(5, 6), e=$v); printf("%d %d %s %d %d %d\n", $t.a, $t.b, $t.c, $t.d.0, $t.d.1, $t.e); exit(); }`,
			want: "0 1 str 5 6 99\n\n\n"},
		{name: "print", prog: `begin { $v = (x=1, y=2); $t = (a=0, b=1, c="str", d=(5, 6), e=$v); print($t); exit(); }`,
			want: "{ .a = 0, .b = 1, .c = str, .d = (5, 6), .e = { .x = 1, .y = 2 } }\n\n\n"},
		// Fields are evaluated as written; the variable keeps the order
		// of its first record.
		{name: "order", prog: `begin { $a = (foo={ printf("hello"); 1 }, bar={ printf("world"); 2 }); $a = (bar={ printf("hello"); 1 }, foo={ printf("world\n"); 2 }); print($a); exit(); }`,
			want: "helloworldhelloworld\n{ .foo = 2, .bar = 1 }\n\n\n"},
		{name: "map keys and values", prog: `begin { @[(a=1, b="x")] = (c=2, d=(e=3)); @[(b="yy", a=2)] = (d=(e=4), c=5); exit(); }`,
			want: "\n\n@[{ .a = 1, .b = x }]: { .c = 2, .d = { .e = 3 } }\n@[{ .a = 2, .b = yy }]: { .c = 5, .d = { .e = 4 } }\n",
			v017: "\n\n@[{.a=1,.b=x}]: { .c = 2, .d = { .e = 3 } }\n@[{.a=2,.b=yy}]: { .c = 5, .d = { .e = 4 } }\n"},
		{name: "json", prog: `begin { $v = (x=1, y=2); @a = (a=0, b=1, c="str", d=(5, 6), e=$v); exit(); }`, args: []string{"-f", "json"},
			want: `{"type": "map", "data": {"@a": {"a": 0, "b": 1, "c": "str", "d": [5,6], "e": {"x": 1, "y": 2}}}}` + "\n", defaultOnly: true},
		{name: "no such field", prog: `begin { $r = (a = 1, bb = 2); print($r.b); }`, code: 1,
			stderr: "-e:1:37: record { .a = int8, .bb = int8 } has no field b\n" +
				"begin { $r = (a = 1, bb = 2); print($r.b); }\n" +
				"                                    ^~~~\n", defaultOnly: true},
		{name: "no such field, a near one", prog: `begin { $r = (size = 1, color = 2); print($r.colour); }`, code: 1,
			stderr: "-e:1:43: record { .size = int8, .color = int8 } has no field colour (did you mean color?)\n" +
				"begin { $r = (size = 1, color = 2); print($r.colour); }\n" +
				"                                          ^~~~~~~~~\n", defaultOnly: true},
		{name: "field named twice", prog: `begin { $r = (a = 1, a = 2); }`, code: 1,
			stderr: "-e:1:22: record field a is named twice\n" +
				"begin { $r = (a = 1, a = 2); }\n" +
				"                     ^\n", defaultOnly: true},
		{name: "different fields", prog: `begin { $r = (a = 1); $r = (b = 1); }`, code: 1,
			stderr: "-e:1:23: $r holds record { .a = int8 } values; cannot assign record { .b = int8 }\n" +
				"begin { $r = (a = 1); $r = (b = 1); }\n" +
				"                      ^~~~~~~~~~~~\n", defaultOnly: true},
	})
}

// TestValueExpressions: ?: with an empty middle, block expressions, the
// discard statement and return with a value, as bpftrace 0.26.1 has them.
func TestValueExpressions(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "elvis", prog: `begin { $x = 1; $a = $x ?: 10; $b = 0 ?: 20; $n = 0; $c = $n++ ?: 30; print(($a, $b, $c, $n)); exit(); }`,
			want: "(1, 20, 30, 1)\n\n\n"},
		{name: "block", prog: `begin { let $a = { let $b = 1; $b }; print($a); $x = { $y = { $z = 10; $z + 5 }; $y * 2 }; print($x); exit(); }`,
			want: "1\n30\n\n\n"},
		{name: "block statements run", prog: `begin { print({ $x = 1; print("bob"); $x > 1 }); if ({ let $a = 2; $a == 2 }) { print("yes"); } exit(); }`,
			want: "bob\nfalse\nyes\n\n\n", v017: "bob\n0\nyes\n\n\n"},
		{name: "block string", prog: `begin { $s = { $t = "ab"; $t }; @m[{ "k" }] = { (1, "v") }; print($s); exit(); }`,
			want: "ab\n\n\n@m[k]: (1, v)\n"},
		{name: "block aggregating", prog: `begin { @ = { let $a = 100; avg($a) }; @c[1] = { $x = 2; count() }; exit(); }`,
			want: "\n\n@: 100\n@c[1]: 1\n", v017: "\n\n@: 100\n\n@c[1]: 1\n"},
		{name: "discard", prog: `begin { _ = { print(1); 1 }; @m[1] = 1; _ = delete(@m, 1); exit(); }`,
			want: "1\n\n\n", v017: "1\n\n\n\n"},
		{name: "return", prog: `begin { $a = 1; print($a); if ($a) { return $a + 1; } print(2); } begin { exit(); }`,
			want: "1\n\n\n"},
		{name: "block without value", prog: `begin { $a = { $b = 1; }; }`, code: 1,
			stderr: "-e:1:14: a block used as a value must end in an expression without ';'\n" +
				"begin { $a = { $b = 1; }; }\n" +
				"             ^~~~~~~~~~~\n"},
		{name: "break out of a block", prog: `begin { while (1) { $a = { break; 1 }; } }`, code: 1,
			stderr: "-e:1:28: break is only allowed inside a loop\n" +
				"begin { while (1) { $a = { break; 1 }; } }\n" +
				"                           ^~~~~\n"},
		{name: "if value", prog: `begin { $x = 1; $y = 0; print(if ($x) { if ($y) { 1 } else { 2 } } else { 3 }); $s = if ($y) { "a" } else if ($x) { "bc" } else { "def" }; print($s); @m = { if ($y) { 5 } else { 6 } } + 1; exit(); }`,
			want: "2\nbc\n\n\n@m: 7\n", defaultOnly: true},
		{name: "if value without else", prog: `begin { $a = if (1) { 1 }; }`, code: 1,
			stderr: "-e:1:14: an if used as a value must have an else\n" +
				"begin { $a = if (1) { 1 }; }\n" +
				"             ^~~~~~~~~~~~\n", defaultOnly: true},
	})
	// bpftrace 0.17 has no if used as a value.
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-e", `BEGIN { print(if (1) { 1 } else { 2 }); }`).want(t, 1, "",
		"-e:1:15: expected expression, found 'if'\n"+
			"BEGIN { print(if (1) { 1 } else { 2 }); }\n"+
			"              ^~\n")
}

// TestComptime: an if whose condition is comptime compiles only the
// branch it takes; a comptime value must be known when compiling.
func TestComptime(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "taken", prog: `begin { if comptime (1 + 1 == 2) { print("yes"); } else { print(nosuch); } if (comptime 0) { $x = "a" + 1; } else if comptime "s" { print("str"); } $c = comptime (2 * 3); print($c); exit(); }`,
			want: "yes\nstr\n6\n\n\n"},
		{name: "not constant", prog: `begin { $x = 1; if comptime ($x > 0) { } }`, code: 1,
			stderr: "-e:1:29: comptime needs a value known when the program is compiled\n" +
				"begin { $x = 1; if comptime ($x > 0) { } }\n" +
				"                            ^~~~~~~~\n"},
	})
}

// TestAddressOf: &$x is where the variable lives; 0.26.1 prints
// pointers in hex in text, as numbers in JSON.
func TestAddressOf(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "int", prog: `begin { $a = 1; $b = &$a; print(*$b); *$b; $a = 5; printf("%d\n", *$b); exit(); }`,
			want: "1\n5\n\n\n"},
		{name: "tuple", prog: `begin { $a = (1, "hello", 2); print(*(&$a)); exit(); }`,
			want: "(1, hello, 2)\n\n\n"},
		{name: "string bytes", prog: `begin { $a = "hello"; $b = (int8 *)&$a; printf("%c %c\n", *$b, *++$b); exit(); }`,
			want: "h e\n\n\n"},
		{name: "bitfields", prog: `struct foo { unsigned long long x_0:1; unsigned long long x_1:1; unsigned long long x_2:2; } begin { $val = (uint64)0x1e; $f = *(struct foo *)(&$val); print($f); exit(); }`,
			want: "{ .x_0 = 0, .x_1 = 1, .x_2 = 3 }\n\n\n"},
		{name: "maps", prog: `begin { @a = 1; @b[1] = 2; $x = &@a; $y = &@b; print($x != 0 && $y != 0 && $x != $y); exit(); }`,
			want: "true\n\n\n@a: 1\n@b[1]: 2\n", v017: "1\n\n\n@a: 1\n@b[1]: 2\n"},
		{name: "map never assigned", prog: `begin { $x = &@a; }`, code: 1,
			stderr: "-e:1:15: map @a is read but never assigned\n" +
				"begin { $x = &@a; }\n" +
				"              ^~\n"},
		{name: "not a variable", prog: `begin { $b = &1; }`, code: 1,
			stderr: "-e:1:14: & takes the address of a variable or a map, as in &$x or &@m\n" +
				"begin { $b = &1; }\n" +
				"             ^~\n"},
		{name: "pointer values", prog: `begin { @ = (int8 *)0x32; @ += 1; print(((uint16 *)0x34, 1)); exit(); }`,
			want: "(0x34, 1)\n\n\n@: 0x33\n", v017: "(52, 1)\n\n\n@: 51\n"},
		{name: "pointer values in json", prog: `begin { @ = (int8 *)0x32; @ += 1; exit(); }`, args: []string{"-f", "json"},
			want: `{"type": "map", "data": {"@": 51}}` + "\n", defaultOnly: true},
	})
}

// TestTypeIntrospection: typeof where a type goes, and offsetof of a
// member's member.
func TestTypeIntrospection(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "typeof", prog: `begin { $x = (uint16)5; let $y: typeof($x) = 7; $z = (typeof($x))70000; print(($y, $z, sizeof(typeof($x)), sizeof(typeof(uint8 *)))); exit(); }`,
			want: "(7, 4464, 2, 8)\n\n\n"},
		// Bare names are the kernel's types, unless builtins have them.
		{name: "kernel types", prog: `begin { let $a: typeof(size_t) = 1; let $b: typeof(size_t *) = &$a; $c = (uint64_t)1; $d = (char)2; $e = (char *)&$d; print((*$b, sizeof(uint64_t), sizeof(typeof(size_t)), sizeof(comm), $c, *$e)); exit(); }`,
			want: "(1, 8, 8, 16, 1, 2)\n\n\n"},
		{name: "offsetof", prog: `struct Foo { int x; struct Bar { char c; int x; } bar; } begin { printf("%d %d %d\n", offsetof(struct Foo, x), offsetof(struct Foo, bar), offsetof(struct Foo, bar.x)); exit(); }`,
			want: "0 4 8\n\n\n"},
		{name: "struct attributes", prog: `struct foo { int x; char y; int z; } struct bar { int x; char y; int z; } __attribute__((packed)) struct bar2 { int x; char y; int z; } __attribute__((packed)) /**/ __attribute__ /**/ ((aligned(1))) begin { print((sizeof(struct foo), sizeof(struct bar), sizeof(struct bar2))); exit(); }`,
			want: "(12, 9, 9)\n\n\n"},
		{name: "offsetof no member", prog: `struct Foo { int x; struct Bar { int x; } bar; } begin { print(offsetof(struct Foo, bar.y)); }`, code: 1,
			stderr: "-e:1:64: struct Bar has no field y\n" +
				"struct Foo { int x; struct Bar { int x; } bar; } begin { print(offsetof(struct Foo, bar.y)); }\n" +
				"                                                               ^~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
	})
}

// TestNestedTupleKeys: bpftrace 0.26.1 takes a tuple among a map's keys
// and inside a tuple key; 0.17 refuses both.
func TestNestedTupleKeys(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "widened", prog: `begin { $a = (1, (123, (uint64)1234)); $b = (4, (1234, (uint8)123)); @a[$a] = 1; @a[$b] = 2; exit(); }`,
			want: "\n\n@a[1, (123, 1234)]: 1\n@a[4, (1234, 123)]: 2\n", defaultOnly: true},
		{name: "among keys", prog: `begin { @["hi", ("hellolongstr", 2)] = 1; @["hellolongstr", ("hi", 5)] = 2; print(has_key(@, ("hi", ("hellolongstr", 2)))); exit(); }`,
			want: "true\n\n\n@[hi, (hellolongstr, 2)]: 1\n@[hellolongstr, (hi, 5)]: 2\n", defaultOnly: true},
		{name: "json", prog: `begin { @a[-1, (-2, "x")] = 10; exit(); }`, args: []string{"-f", "json"},
			want: `{"type": "map", "data": {"@a": {"-1,(-2,x)": 10}}}` + "\n", defaultOnly: true},
	})
	const prog = `begin { @a[1, (2, 3)] = 1; exit(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog).want(t, 0, "\n\n@a[1, (2, 3)]: 1\n", "")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", prog).want(t, 1, "",
		"-e:1:15: a tuple cannot be one of several keys: give its elements as keys, as in @m[a, b]\n"+
			prog+"\n"+
			"              ^~~~~~\n")
}

// TestTupleIndex: $t[N] with a constant N reads a tuple's element, as
// $t.N does.
func TestTupleIndex(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "constant", prog: `begin { $a = (1, "two", 3); print(($a[1 + 1], $a[1])); @t = (4, 5); print((@t)[1]); exit(); }`,
			want: "(3, two)\n5\n\n\n@t: (4, 5)\n"},
		{name: "variable", prog: `begin { $a = (1, 2); $i = 1; print($a[$i]); }`, code: 1,
			stderr: "-e:1:39: a tuple's index must be known when the program is compiled, as in $t[1]\n" +
				"begin { $a = (1, 2); $i = 1; print($a[$i]); }\n" +
				"                                      ^~\n"},
		// Literals are int64 in the 0.17 mode, which the message shows.
		{name: "out of range", prog: `begin { $a = (1, 2); print($a[2]); }`, code: 1, defaultOnly: true,
			stderr: "-e:1:31: tuple (int8, int8) has no element 2\n" +
				"begin { $a = (1, 2); print($a[2]); }\n" +
				"                              ^\n"},
	})
}

// TestArrayCasts: integers and integer arrays of one size cast to each
// other, T[] takes its length from the value, and let takes an array
// type.
func TestArrayCasts(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "to array", prog: `begin { $a = (int8[8])12345; printf("%x %x %x\n", $a[0], $a[1], ((int8[])12345)[0]); print(((uint8[2])(uint16)0x0102, (int8[])"hi")); exit(); }`,
			want: "39 30 39\n([2,1], [104,105,0])\n\n\n"},
		{name: "to integer", prog: `begin { $a = (int8[8])12345; printf("%d %x\n", (uint64)$a, (uint32)pton("127.0.0.1")); exit(); }`,
			want: "12345 100007f\n\n\n"},
		{name: "let", prog: `begin { let $w: uint16[3]; $w = (uint16[3])(int8[6])"abcde"; print(($w[0], $w[2])); exit(); }`,
			want: "(25185, 101)\n\n\n"},
		{name: "sizes differ", prog: `begin { $b = (uint64)pton("127.0.0.1"); }`, code: 1,
			stderr: "-e:1:14: cannot cast uint8[4] to uint64: their sizes differ (4 and 8 bytes)\n" +
				"begin { $b = (uint64)pton(\"127.0.0.1\"); }\n" +
				"             ^~~~~~~~~~~~~~~~~~~~~~~~~\n"},
	})
}

// TestBareLet: a variable declared by let $x; reads as zero of the type
// a later assignment gives it.
func TestBareLet(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "int", prog: `begin { let $a; if ($a) { $a = 1; } @b = $a; let $n; print($n); exit(); }`,
			want: "0\n\n\n@b: 0\n"},
		{name: "string", prog: `begin { let $s; printf("[%s]\n", $s); $s = "abc"; print($s); exit(); }`,
			want: "[]\nabc\n\n\n"},
	})
}
