package main

import (
	"strings"
	"testing"
)

// for ($i : A..B) counts from A up to B, excluded, with bounds evaluated
// once, break and continue, nesting and outer variables, printing what
// bpftrace's own runtime tests of range loops expect.
func TestForRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
		maps             string // printed at the end
	}{
		{"basic", `for ($i : 0..5) { print($i); }`, "0\n1\n2\n3\n4\n", ""},
		{"variables", `$start = 2; $end = 7; for ($i : $start..$end) { print($i); }`, "2\n3\n4\n5\n6\n", ""},
		{"expressions", `for ($i : (1+1)..(2*4)) { print($i); }`, "2\n3\n4\n5\n6\n7\n", ""},
		{"no iterations", `for ($i : 1..0) { print("here"); } for ($i : 5..5) { print("here"); } print("none");`, "none\n", ""},
		{"negative start", `for ($i : (-3)..3) { print($i); }`, "-3\n-2\n-1\n0\n1\n2\n", ""},
		{"outer variable", `$sum = 0; for ($i : 1..5) { $sum += $i; } print($sum);`, "10\n", ""},
		{"break", `for ($i : 1..4) { if ($i == 2) { break; } print($i); } print("5");`, "1\n5\n", ""},
		{"continue", `for ($i : 1..4) { if ($i == 2) { continue; } print($i); }`, "1\n3\n", ""},
		{"nested", `for ($a : 0..3) { for ($b : 0..3) { if ($b == $a) { continue; } if ($b > $a) { break; } printf("%d%d ", $a, $b); } } printf("\n");`, "10 20 21 \n", ""},
		{"bound evaluated once", `$n = 3; for ($i : 0..$n) { $n = 10; printf("%d ", $i); } printf("%d\n", $n);`, "0 1 2 10\n", ""},
		{"unsigned", `for ($i : (uint8)250..(uint8)253) { printf("%d ", $i); } printf("\n");`, "250 251 252 \n", ""},
		{"maps", `for ($i : 0..3) { @c[$i] = count(); @s = sum($i); }`, "", "@c[0]: 1\n@c[1]: 1\n@c[2]: 1\n@s: 3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// exit() prints two newlines, then the maps.
			kinst(t, "-q", "-e", "BEGIN { "+tt.body+" exit(); }").want(t, 0, tt.want+"\n\n"+tt.maps, "")
		})
	}
}

// A loop whose bound the verifier cannot know (one read from a map) is
// refused, as by bpftrace 0.17: kinst points at the loop, says what to
// do, exits 1, and with -v shows the verifier's log.
func TestLoopWithoutBound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, prog, pos, caret string }{
		{"while", "BEGIN { @a = 100000; $i = 0; while ($i < @a) { $i++; } }", "-e:1:30:", "                             ^~~~~"},
		{"range", "BEGIN { @a[1] = 100000; for ($i : 0..@a[1]) { } }", "-e:1:25:", "                        ^~~"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stderr := tt.pos + " the kernel verifier rejected probe BEGIN: the verifier cannot prove this loop ends: bound it by a constant, or unroll it (The sequence of 8193 jumps is too complex.)\n" +
				tt.prog + "\n" + tt.caret + "\n"
			kinst(t, "-e", tt.prog).want(t, 1, "", stderr)
			r := kinst(t, "-v", "-e", tt.prog)
			if want := strings.TrimSuffix(stderr, "\n") + "\nverifier log (last lines):\n"; r.code != 1 || !strings.HasPrefix(r.stderr, want) ||
				!strings.Contains(r.stderr, "\n  The sequence of 8193 jumps is too complex.\n") {
				t.Errorf("-v: exit status %d, stderr:\n%s\nwant it to start with\n%s\nand show the log's reason", r.code, r.stderr, want)
			}
		})
	}
}
