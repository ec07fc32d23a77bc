package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestDeclarations runs bpftrace 0.26.1's config blocks, let
// statements, map declarations and conditions without parentheses.
func TestDeclarations(t *testing.T) {
	testenv.Root(t)
	const nonsense = `tracepoint:syscalls:sys_enter_getppid,tracepoint:syscalls:nonsense { } BEGIN { printf("ran\n"); exit(); }`
	tests := []struct {
		name   string
		env    []string
		prog   string
		code   int
		stdout string
		stderr string
	}{
		{
			name:   "config sets the string size",
			prog:   `config = { max_strlen = 8 } BEGIN { printf("%s\n", str("abcdefghijkl")); exit(); }`,
			stdout: "abcdefg\n\n\n",
		},
		{
			name:   "the environment overrides the config block",
			env:    []string{"BPFTRACE_MAX_STRLEN=5"},
			prog:   `config = { BPFTRACE_MAX_STRLEN = 8 } BEGIN { printf("%s\n", str("abcdefghijkl")); exit(); }`,
			stdout: "abcd\n\n\n",
		},
		{
			name:   "print_maps_on_exit",
			prog:   `config = { PRINT_MAPS_ON_EXIT = false } BEGIN { @a = 1; printf("x\n"); exit(); }`,
			stdout: "x\n\n\n",
		},
		{
			name:   "max_map_keys",
			prog:   `config = { max_map_keys = 2 } BEGIN { @[1] = 1; @[2] = 2; @[3] = 3; exit(); }`,
			stdout: "\n\n@[1]: 1\n@[2]: 2\n",
			stderr: "kinst: warning: map @ was full: 1 update dropped; it holds at most 2 (set KINST_MAP_KEYS_MAX for more)\n",
		},
		{
			name: "unknown key",
			prog: `config = { bad_config = 1 } BEGIN { exit(); }`,
			code: 1,
			stderr: "-e:1:12: bad_config: not a known configuration option\n" +
				"config = { bad_config = 1 } BEGIN { exit(); }\n" +
				"           ^~~~~~~~~~~~~~\n",
		},
		{
			name: "a missing attach point fails in the default mode",
			prog: nonsense,
			code: 1,
			stderr: "-e:1:39: no matches for tracepoint syscalls:nonsense; kinst -l 'tracepoint:syscalls:*' lists the syscalls tracepoints; if this is expected, set the 'missing_probes' config variable to 'warn'\n" +
				nonsense + "\n" +
				"                                      ^~~~~~~~~~~~~~~~~~~~~~~~~~~~\n",
		},
		{
			name: "and is left out in 0.17's",
			env:  []string{"KINST_COMPAT=0.17"},
			prog: nonsense, stdout: "ran\n\n\n",
			stderr: "-e:1:39: warning: no matches for tracepoint syscalls:nonsense; kinst -l 'tracepoint:syscalls:*' lists the syscalls tracepoints; left out of the probe\n" +
				nonsense + "\n" +
				"                                      ^~~~~~~~~~~~~~~~~~~~~~~~~~~~\n",
		},
		{
			name:   "or as missing_probes says",
			prog:   `config = { missing_probes = "ignore" } ` + nonsense,
			stdout: "ran\n\n\n",
		},
		{
			name:   "or as BPFTRACE_MISSING_PROBES says",
			env:    []string{"BPFTRACE_MISSING_PROBES=ignore"},
			prog:   nonsense,
			stdout: "ran\n\n\n",
		},
		{
			name:   "let",
			prog:   `BEGIN { let $x; let $s: string[4] = "abc"; let $u: uint16 = 65535; if 1 { $x = 5; } printf("%d %s %d\n", $x, $s, $u); exit(); }`,
			stdout: "5 abc 65535\n\n\n",
		},
		{
			name:   "a bare let starts at zero each time",
			prog:   `BEGIN { for $i : 0..3 { let $n; $n += $i; @[$i] = $n; } exit(); }`,
			stdout: "\n\n@[0]: 0\n@[1]: 1\n@[2]: 2\n",
		},
		{
			name: "a variable does not escape its block",
			prog: `BEGIN { if (0) { $x = "hello"; } print(($x)); exit(); }`,
			code: 1,
			stderr: "-e:1:41: Undefined or undeclared variable: $x\n" +
				`BEGIN { if (0) { $x = "hello"; } print(($x)); exit(); }` + "\n" +
				"                                        ^~\n",
		},
		{
			name:   "but does in 0.17's mode",
			env:    []string{"KINST_COMPAT=0.17"},
			prog:   `BEGIN { if (0) { $x = "hello"; } print(($x)); exit(); }`,
			stdout: "\n\n\n",
		},
		{
			name: "a let annotation must hold its value",
			prog: `BEGIN { let $a: uint16 = -1; }`,
			code: 1,
			stderr: "-e:1:13: Type mismatch for $a: a int8 value does not fit its declared type uint16\n" +
				"BEGIN { let $a: uint16 = -1; }\n" +
				"            ^~~~~~~~~~~~~~~\n",
		},
		{
			// Which older keys the kernel's LRU lists evict depends on
			// the CPU and the kernel (6.1 evicts more than one): at most
			// two stay, the newest among them.
			name:   "an LRU map of two keeps the newest",
			prog:   `let @m = lruhash(2); BEGIN { @m[1] = 1; @m[2] = 2; @m[3] = 3; printf("%d %d\n", len(@m) <= 2, has_key(@m, 3)); clear(@m); exit(); }`,
			stdout: "1 1\n\n\n",
		},
		{
			name:   "a declared map's size",
			prog:   `let @m = hash(2); BEGIN { @m[1] = 1; @m[2] = 2; @m[3] = 3; exit(); }`,
			stdout: "\n\n@m[1]: 1\n@m[2]: 2\n",
			stderr: "kinst: warning: map @m was full: 1 update dropped; it holds at most 2 (set KINST_MAP_KEYS_MAX for more)\n",
		},
		{
			name:   "per-CPU counts",
			prog:   `let @c = percpulruhash(10); BEGIN { @c[1] = count(); @c[1] = count(); exit(); }`,
			stdout: "\n\n@c[1]: 2\n",
		},
		{
			name:   "an unused map",
			prog:   `let @m = hash(2); BEGIN { exit(); }`,
			stdout: "\n\n",
			stderr: "-e:1:1: warning: Unused map: @m\nlet @m = hash(2); BEGIN { exit(); }\n^~~~~~~~~~~~~~~~\n",
		},
		{
			name:   "conditions without parentheses",
			prog:   `BEGIN { $x = 0; if !$x { printf("a"); } while $x < 1 { $x++; } }`,
			code:   1,
			stderr: "-e:1:47: a condition without parentheses must be a single term such as $x, !$x or @m[1]: put the whole condition in ( )\nBEGIN { $x = 0; if !$x { printf(\"a\"); } while $x < 1 { $x++; } }\n                                              ^~~~\n",
		},
		{
			name:   "duration literals",
			prog:   `BEGIN { printf("%d %d %d\n", 1ms, 2s, 1_000us); exit(); }`,
			stdout: "1000000 2000000000 1000000\n\n\n",
		},
		{
			name:   "interval with a duration",
			prog:   `interval:10ms { @n++; if (@n == 3) { printf("%s\n", probe); exit(); } }`,
			stdout: "interval:us:10000\n\n\n@n: 3\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{"KINST_COMPAT="}, tt.env...)
			kinstEnv(t, env, "-q", "-e", tt.prog).want(t, tt.code, tt.stdout, tt.stderr)
		})
	}
}
