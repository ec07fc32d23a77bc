package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestStdlib: the functions bpftrace 0.26.1's standard library defines
// in its own language, which kinst has built in, and the __builtin_
// names they are written with.
func TestStdlib(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "strings", defaultOnly: true,
			prog: `begin { $a = "hello"; print(strlen($a)); print(strlen("hi")); print(strstr("hello", "ll")); print(strstr($a, "x")); print(strstr($a, "")); print(strstr($a, "lo")); print(strcap($a)); print(default_str_length()); exit(); }`,
			want: "5\n2\n2\n-1\n0\n3\n6\n1024\n\n\n"},
		{name: "type predicates", defaultOnly: true,
			prog: `begin { $a = "x"; print((is_str($a), is_ptr(curtask), is_integer(1), is_unsigned_integer(-1), is_literal(1), is_literal($a), has_cpid())); exit(); }`,
			want: "(true, true, true, false, true, false, false)\n\n\n"},
		{name: "builtin names", defaultOnly: true,
			prog: `begin { print((__builtin_comm == comm, probetype, usermode, __builtin_probetype)); exit(); }`,
			want: "(true, special, 1, special)\n\n\n"},
		{name: "assert holds", defaultOnly: true,
			prog: `begin { static_assert(1, "no"); assert(1 == 1, "x"); printf("ok\n"); exit(); }`,
			want: "ok\n\n\n"},
		{name: "assert fails", defaultOnly: true, code: 1,
			prog:   `begin { assert(1 == 2, "broken"); printf("not here\n"); }`,
			want:   "\n\n",
			stderr: "stdlib/base.bt:6:5-37: ERROR: assert failed: broken\n"},
		{name: "fail skipped by comptime", defaultOnly: true,
			prog: `begin { if comptime (1 == 2) { fail("never %d", 1); } printf("ok\n"); exit(); }`,
			want: "ok\n\n\n"},
		{name: "static_assert fails", defaultOnly: true, code: 1,
			prog: `begin { static_assert(1 == 2, "sizes differ"); }`,
			stderr: "-e:1:9: sizes differ\n" +
				"begin { static_assert(1 == 2, \"sizes differ\"); }\n" +
				"        ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
	})
}
