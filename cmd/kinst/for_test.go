package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
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

// for ($kv : @map) walks a map's elements in the kernel, $kv being the
// tuple (key, value). A hash map's order is the kernel's, so the bodies
// compute what does not depend on it, or copy elements into maps that
// are printed sorted.
func TestForMap(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.ForEachMapElem, testenv.MapLookupPercpuElem)
	const three = `@m[1] = 10; @m[2] = 20; @m[3] = 30; `
	tests := []struct {
		name, body, want string
		maps             string // printed at the end, after @m when set
	}{
		{"sum", three + `$s = 0; for ($kv : @m) { $s += $kv.1; } print($s);`, "60\n", ""},
		{"keys", three + `for ($kv : @m) { @n[$kv.0] = $kv.0 * 100 + $kv.1; }`, "", "@n[1]: 110\n@n[2]: 220\n@n[3]: 330\n"},
		{"break", three + `$n = 0; for ($kv : @m) { $n++; if ($n == 2) { break; } } print($n);`, "2\n", ""},
		{"continue", three + `$s = 0; for ($kv : @m) { if ($kv.0 == 2) { continue; } $s += $kv.1; } print($s);`, "40\n", ""},
		{"outer variables", three + `$min = 100; $str = "none"; for ($kv : @m) { if ($kv.1 < $min) { $min = $kv.1; $str = "set"; } } printf("%d %s\n", $min, $str);`, "10 set\n", ""},
		{"tuple keys", `@t["a", 1] = 5; @t["b", 2] = 6; for ($kv : @t) { @k[$kv.0.1] = $kv.0; @v[$kv.0.0] = $kv.1; }`, "",
			"@k[1]: (a, 1)\n@k[2]: (b, 2)\n@t[a, 1]: 5\n@t[b, 2]: 6\n@v[a]: 5\n@v[b]: 6\n"},
		{"whole tuple", `@one[7] = -3; for ($kv : @one) { print($kv); }`, "(7, -3)\n", "@one[7]: -3\n"},
		{"nested", `@a[1] = 1; @a[2] = 2; @b[10] = 10; @b[20] = 20; for ($x : @a) { for ($y : @b) { @p[$x.0, $y.0] = $x.1 * $y.1 + $x.0; } }`, "",
			"@a[1]: 1\n@a[2]: 2\n@b[10]: 10\n@b[20]: 20\n@p[1, 10]: 11\n@p[1, 20]: 21\n@p[2, 10]: 22\n@p[2, 20]: 42\n"},
		{"exit inside", three + `$n = 0; for ($kv : @m) { $n++; exit(); } print("not reached");`, "", ""},
		{"count and sum", `@c[1] = count(); @c[1] = count(); @c[1] = count(); @s = sum(-5); @s = sum(2); for ($kv : @c) { print($kv); } for ($e : @s) { print($e.1); }`,
			"(1, 3)\n-3\n", "@c[1]: 3\n@s: -3\n"},
		{"min and max", `@a = min(5); @a = min(-2); @a = min(3); @b[1] = max(5); @b[1] = max(9); @u = min((uint64)7); @u = min((uint64)8); for ($kv : @a) { print($kv.1); } for ($x : @b) { print($x); } for ($y : @u) { print($y.1); }`,
			"-2\n(1, 9)\n7\n", "@a: -2\n@b[1]: 9\n@u: 7\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			maps := tt.maps
			if strings.HasPrefix(tt.body, three) {
				maps = "@m[1]: 10\n@m[2]: 20\n@m[3]: 30\n" + maps
			}
			// exit() prints two newlines, then the maps.
			kinst(t, "-q", "-e", "BEGIN { "+tt.body+" exit(); }").want(t, 0, tt.want+"\n\n"+maps, "")
		})
	}
	t.Run("return inside", func(t *testing.T) {
		t.Parallel()
		prog := `BEGIN { @m[1] = 1; for ($kv : @m) { if ($kv.1 == 1) { return; } } print("not reached"); } BEGIN { print("second"); exit(); }`
		kinst(t, "-q", "-e", prog).want(t, 0, "second\n\n\n@m[1]: 1\n", "")
	})
}

// A loop's variable lives in its loop in bpftrace 0.26.1's mode: loops
// over maps of other types may use one name, as may a variable after
// them, and a message about it names it as written. The 0.17 mode keeps
// one variable of a name in the probe.
func TestForLoopScope(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.ForEachMapElem)
	prog := `begin { @a[16] = 32; @b[64] = "aa"; for ($kv : @a) { print($kv); } for ($kv : @b) { print($kv); } if (1) { $kv = 5; print($kv); } exit(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog).want(t, 0, "(16, 32)\n(64, aa)\n5\n\n\n@a[16]: 32\n@b[64]: aa\n", "")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", prog).want(t, 1, "",
		"-e:1:73: $kv holds (int64, int64) values; a loop over @b makes it (int64, string[3])\n"+
			prog+"\n"+strings.Repeat(" ", 72)+"^~~\n"+
			"-e:1:108: $kv holds (int64, int64) values; cannot assign int64\n"+
			prog+"\n"+strings.Repeat(" ", 107)+"^~~~~~~\n")
	prog = `begin { @a[1] = 1; for ($kv : @a) { $kv = 1; } }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog).want(t, 1, "",
		"-e:1:37: $kv holds (int64, int8) values; cannot assign int8\n"+
			prog+"\n"+strings.Repeat(" ", 36)+"^~~~~~~\n")
}

// Aggregation maps keep a copy of each element per CPU: a loop over one
// combines them, whichever CPU the loop runs on. Execs pinned to two
// CPUs count 4 and 3; END sees 7, and the min, max and sum of both.
func TestForMapPerCPU(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.ForEachMapElem, testenv.MapLookupPercpuElem)
	if runtime.NumCPU() < 2 {
		t.Skipf("needs 2 CPUs, has %d", runtime.NumCPU())
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skipf("needs taskset: %v", err)
	}
	// A script, whose exec gives the process its name, one no other
	// process on the machine execs (the guests' /bin/true is busybox,
	// which a copy under another name would not run).
	bin := filepath.Join(t.TempDir(), "kfm_cpu")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("for i in 1 2 3 4; do %[1]s -c 0 %[2]s; done; for i in 1 2 3; do %[1]s -c 1 %[2]s; done", taskset, bin)
	prog := `tracepoint:sched:sched_process_exec /comm == "kfm_cpu"/ { @n = count(); @c[cpu] = count(); @lo = min(cpu); @hi = max(cpu); @s = sum(cpu + 1); }
END { for ($kv : @n) { printf("total %d\n", $kv.1); } for ($kv : @c) { @p[$kv.0] = $kv.1; }
	for ($l : @lo) { for ($h : @hi) { for ($s : @s) { printf("min %d max %d sum %d\n", $l.1, $h.1, $s.1); } } } }`
	kinst(t, "-q", "-c", "/bin/sh -c '"+cmd+"'", "-e", prog).want(t, 0,
		"total 7\nmin 0 max 1 sum 10\n\n\n@c[1]: 3\n@c[0]: 4\n@hi: 1\n@lo: 0\n@n: 7\n@p[1]: 3\n@p[0]: 4\n@s: 10\n", "")
}

// A loop whose bound the verifier cannot know (one read from a map) is
// refused, as by bpftrace 0.17: kinst points at the loop, says what to
// do, exits 1, and with -v shows the verifier's log. A range loop of such
// bounds runs through bpf_loop (TestForRangeByLoop) on every kernel
// these tests run on; codegen's TestRangeLoopHelper checks it stays a
// plain loop, refused the same way, where the kernel lacks bpf_loop.
func TestLoopWithoutBound(t *testing.T) {
	t.Parallel()
	// The verifier spends 1.5 s of kernel time on this loop here, over
	// the minute a run may take on an emulated CPU; runtime's
	// TestVerifierComplexity checks the same rejection there in-process.
	if why := emulatedCPU(); why != "" {
		t.Skip("the verifier's work takes minutes on QEMU's emulated CPU")
	}
	for _, tt := range []struct{ name, prog, pos, caret string }{
		{"while", "BEGIN { @a = 100000; $i = 0; while ($i < @a) { $i++; } }", "-e:1:30:", "                             ^~~~~"},
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

// for ($i : A..B) whose bounds the verifier cannot know runs through
// bpf_loop, as in bpftrace 0.24: the body is a subprogram called B-A
// times, which sees the probe's variables and maps.
func TestForRangeByLoop(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Loop, testenv.ForEachMapElem)
	for _, tt := range []struct{ name, body, want, maps string }{
		{"sum to a map value", `@n = 1000; $s = 0; for ($i : 0..@n) { $s += $i; } print($s);`, "499500\n", "@n: 1000\n"},
		{"keyed map bound", `@a[1] = 4; for ($i : 0..@a[1]) { printf("%d ", $i); } printf("\n");`, "0 1 2 3 \n", "@a[1]: 4\n"},
		{"variable bounds", `@x = 3; @y = 6; $x = @x; $y = @y; for ($i : $x..$y) { printf("%d ", $i); } printf("\n");`, "3 4 5 \n", "@x: 3\n@y: 6\n"},
		{"negative start", `@a = -2; for ($i : @a..2) { printf("%d ", $i); } printf("\n");`, "-2 -1 0 1 \n", "@a: -2\n"},
		{"no iterations", `@a = 5; for ($i : @a..5) { print("here"); } for ($i : @a..(-1)) { print("here"); } print("none");`, "none\n", "@a: 5\n"},
		{"break and continue", `@n = 10; for ($i : 1..@n) { if ($i == 2) { continue; } if ($i == 5) { break; } printf("%d ", $i); } printf("\n");`, "1 3 4 \n", "@n: 10\n"},
		{"outer variables", `@n = 4; $s = "x"; $c = 0; for ($i : 0..@n) { $c += 10; $s = "y"; } printf("%d %s\n", $c, $s);`, "40 y\n", "@n: 4\n"},
		{"nested in a map loop", `@m[1] = 3; @m[2] = 5; for ($kv : @m) { for ($i : 0..$kv.1) { @c[$kv.0] = count(); } }`, "", "@c[1]: 3\n@c[2]: 5\n@m[1]: 3\n@m[2]: 5\n"},
		{"nested ranges", `@n = 3; for ($a : 0..@n) { for ($b : $a..@n) { printf("%d%d ", $a, $b); } } printf("\n");`, "00 01 02 11 12 22 \n", "@n: 3\n"},
		{"exit inside", `@n = 5; for ($i : 0..@n) { if ($i == 2) { exit(); } printf("%d ", $i); } printf("never\n");`, "0 1 ", "@n: 5\n"},
		// bpf_loop runs at most 1<<23 rounds; kinst cuts a longer loop to that.
		{"cut at 1<<23 rounds", `@n = 10000000; $c = 0; for ($i : 0..@n) { $c++; } print($c);`, "8388608\n", "@n: 10000000\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kinst(t, "-q", "-e", "BEGIN { "+tt.body+" exit(); }").want(t, 0, tt.want+"\n\n"+tt.maps, "")
		})
	}
	// A loop of constant bounds around one through bpf_loop runs through
	// bpf_loop too (codegen's TestRangeLoopHelper), and return in the
	// inner one leaves the probe.
	t.Run("return from nested loops", func(t *testing.T) {
		t.Parallel()
		prog := `BEGIN { for ($i : 1..4) { for ($j : 1..$i) { print($j); if ($j == 2) { return; } } } print("end"); } BEGIN { exit(); }`
		kinst(t, "-q", "-e", prog).want(t, 0, "1\n1\n2\n\n\n", "")
	})
	// In a probe the kernel fires: each of 3 execs of a script sums 0..@n.
	t.Run("tracepoint", func(t *testing.T) {
		t.Parallel()
		bin := filepath.Join(t.TempDir(), "kbl_run")
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		prog := `BEGIN { @n = 1000 } tracepoint:sched:sched_process_exec /comm == "kbl_run"/ { for ($i : 0..@n) { if ($i == 500) { continue; } @s = sum($i); } @runs = count(); }`
		kinst(t, "-q", "-c", "/bin/sh -c '"+bin+"; "+bin+"; "+bin+"'", "-e", prog).want(t, 0,
			"\n\n@n: 1000\n@runs: 3\n@s: 1497000\n", "")
	})
}
