package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// testDuration is a test's duration as bpftrace 0.26.1 prints it: the
// unit and the unit's size in nanoseconds.
var testDuration = regexp.MustCompile(`\((?:1 ns|1000 μs|1000000 ms|1000000000 s)\)`)

// TestTestMode: --test runs BEGIN, each test probe in source order, then
// END. A test fails when it returns a value other than 0, calls exit()
// with one, or reports an error; what a failed test printed comes
// before its result, and what BEGIN printed goes with the first test's.
// The maps are not printed, and kinst exits with 1 when a test failed.
func TestTestMode(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { @m = 1; printf("setup\n"); } ` +
		`test:failure { printf("%s %s\n", probe, probetype); errorf("bad %d", @m); return 1; } ` +
		`test:okay { print("suppressed"); } ` +
		`test:exits { printf("%d\n", 2); if (@m) { exit(2); } printf("dropped\n"); } ` +
		`test:exits0 { exit(0); } ` +
		`end { printf("end\n"); }`
	at := strings.Index(prog, "errorf(") + 1
	errLine := fmt.Sprintf("stdin:1:%d-%d: ERROR: bad 1", at, at+len(`errorf("bad %d", @m)`))
	const (
		green, red, reset = "\033[32m", "\033[31m", "\033[0m"
		d                 = "(D)"
	)
	r := kinstEnv(t, current, "--test", "-e", prog)
	r.stdout = testDuration.ReplaceAllString(r.stdout, d)
	r.want(t, 1, green+"[==========]"+reset+" Running 4 tests.\n"+
		green+"[ RUN      ]"+reset+" failure\n"+
		"setup\n"+
		"test:failure test\n"+
		errLine+"\n"+
		red+"[  FAILED  ]"+reset+" failure "+d+"\n"+
		green+"[ RUN      ]"+reset+" okay\n"+
		green+"[       OK ]"+reset+" okay "+d+"\n"+
		green+"[ RUN      ]"+reset+" exits\n"+
		"2\n"+
		red+"[  FAILED  ]"+reset+" exits "+d+"\n"+
		green+"[ RUN      ]"+reset+" exits0\n"+
		green+"[       OK ]"+reset+" exits0 "+d+"\n"+
		green+"[==========]"+reset+" 4 tests ran.\n"+
		green+"[  PASSED  ]"+reset+" 2 tests.\n"+
		red+"[  FAILED  ]"+reset+" 2 tests, listed below:\n"+
		red+"[  FAILED  ]"+reset+" failure\n"+
		red+"[  FAILED  ]"+reset+" exits\n"+
		"end\n\n\n", "")

	// JSON: one test_result each, with what the test printed in text.
	r = kinstEnv(t, current, "-f", "json", "--mode", "test", "-e", prog)
	r.stdout = regexp.MustCompile(`"duration": \d+`).ReplaceAllString(r.stdout, `"duration": N`)
	r.want(t, 1, `{"type": "test_result", "data": {"failure": {"duration": N, "passed": false, "output": "setup\ntest:failure test\n`+errLine+`\n"}}}`+"\n"+
		`{"type": "test_result", "data": {"okay": {"duration": N, "passed": true, "output": "suppressed\n"}}}`+"\n"+
		`{"type": "test_result", "data": {"exits": {"duration": N, "passed": false, "output": "2\n"}}}`+"\n"+
		`{"type": "test_result", "data": {"exits0": {"duration": N, "passed": true, "output": ""}}}`+"\n"+
		`{"type": "printf", "data": "end\n"}`+"\n", "")

	// All passed: the status is 0, and one test is one.
	r = kinstEnv(t, current, "--test", "--probe-filter", "okay", "-e", prog)
	r.stdout = testDuration.ReplaceAllString(r.stdout, d)
	r.want(t, 0, green+"[==========]"+reset+" Running 1 tests.\n"+
		green+"[ RUN      ]"+reset+" okay\n"+
		green+"[       OK ]"+reset+" okay "+d+"\n"+
		green+"[==========]"+reset+" 1 test ran.\n"+
		green+"[  PASSED  ]"+reset+" 1 test.\n"+
		"end\n\n\n", "")
}

// benchRow is a row of the benchmark table: the name in 41 bytes, the
// average time in 15, the iterations.
var benchRow = regexp.MustCompile(`(?m)^(\S+ +)(\d+ +)(\d+)$`)

// TestBenchMode: --bench runs each bench probe until it takes a
// millisecond and prints its average time in a table, or as JSON; a
// bench returning a value other than 0 is skipped, one reporting an
// error fails, which is said on standard error. BEGIN's output goes
// with the first bench's, which is dropped.
func TestBenchMode(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { printf("begin\n"); } bench:count { @c = count(); } bench:skipped { return 1; } ` +
		`bench:a_bench_whose_name_is_longer_than_forty_bytes { @i++; } end { printf("%d\n", @i > 0); clear(@c); clear(@i); }`
	const name = "a_bench_whose_name_is_longer_than_forty_bytes"
	r := kinstEnv(t, current, "--bench", "-e", prog)
	var widths []string
	for _, m := range benchRow.FindAllStringSubmatch(r.stdout, -1) {
		widths = append(widths, fmt.Sprintf("%s %d %d", strings.TrimSpace(m[1]), len(m[1]), len(m[2])))
	}
	r.stdout = benchRow.ReplaceAllString(r.stdout, "${1}T I")
	width := len(name) + 1
	r.want(t, 0, fmt.Sprintf("%-*sTime(ns)       Iterations\n%s\n%-*sT I\n%-*sT I\n1\n\n\n",
		width, "Benchmark", strings.Repeat("-", width+15+10), width, "count", width, name), "")
	if want := fmt.Sprintf("[count %d 15 %s %d 15]", width, name, width); fmt.Sprint(widths) != want {
		t.Errorf("columns %v, want %s", widths, want)
	}

	r = kinstEnv(t, current, "-q", "-f", "json", "--test", "--mode", "bench", "-e", prog)
	r.stdout = regexp.MustCompile(`"average": \d+, "iters": \d+`).ReplaceAllString(r.stdout, `"average": A, "iters": I`)
	r.want(t, 0, `{"type": "benchmark_result", "data": {"count": {"average": A, "iters": I}}}`+"\n"+
		`{"type": "benchmark_result", "data": {"`+name+`": {"average": A, "iters": I}}}`+"\n"+
		`{"type": "printf", "data": "1\n"}`+"\n", "")

	// A failed bench has no row; the others go on.
	r = kinstEnv(t, current, "--bench", "-e", `bench:fails { errorf("no"); } bench:exits { exit(1); } bench:ok { }`)
	r.stdout = benchRow.ReplaceAllString(r.stdout, "${1}T I")
	r.want(t, 1, fmt.Sprintf("%-41sT I\n\n\n", "ok"),
		"kinst: benchmark 'fails' failed\nkinst: benchmark 'exits' failed\n")
}

// TestTestProbesOutsideModes: outside --test and --bench, test and
// bench probes are left alone; a program of nothing else says which
// option runs them. In a mode, a program with nothing to run fails.
func TestTestProbesOutsideModes(t *testing.T) {
	testenv.Root(t)
	kinstEnv(t, current, "-e", `test:a { }`).want(t, 1, "", "kinst: no probes attached; use --test to run test probes\n")
	kinstEnv(t, current, "-e", `bench:a { } test:b { }`).want(t, 1, "", "kinst: no probes attached; use --bench to run benchmark probes\n")
	kinstEnv(t, current, "-e", `begin { printf("hi\n"); } test:a { exit(1); } bench:b { exit(1); }`).
		want(t, 0, "hi\n\n\n", "Attached 1 probe\n")
	kinstEnv(t, current, "--test", "-e", `bench:a { }`).want(t, 1, "", "kinst: no test probes to run\n")
	kinstEnv(t, current, "--bench", "-e", `test:a { }`).want(t, 1, "", "kinst: no bench probes to run\n")
	// With BEGIN or END there is something to run, as in bpftrace; what
	// follows BEGIN's exit() is dropped, and its code is the status.
	kinstEnv(t, current, "--test", "-e", `end { printf("end\n"); } bench:a { }`).want(t, 0, "end\n\n\n", "")
	kinstEnv(t, current, "--test", "-e", `begin { printf("a\n"); if (1) { exit(3); } printf("b\n"); } end { printf("end\n"); }`).
		want(t, 3, "a\nend\n\n\n", "")
}

// TestModeFlags: --mode takes bpftrace 0.26.1's modes, refusing in one
// sentence those kinst does not have; --test, --bench and --fmt
// conflict with a mode given before them. The 0.17 mode refuses them
// all, and the probe types.
func TestModeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--test", "--bench"}, "kinst: --bench conflicts with existing --mode\n"},
		{[]string{"--mode", "bench", "--test"}, "kinst: --test conflicts with existing --mode\n"},
		{[]string{"--test", "--test"}, "kinst: --test conflicts with existing --mode\n"},
		{[]string{"--bench", "--fmt"}, "kinst: --fmt conflicts with existing --mode\n"},
		{[]string{"--fmt"}, "kinst: --fmt: kinst has no formatter for bpftrace programs\n"},
		{[]string{"--mode", "format"}, "kinst: --mode format: kinst has no formatter for bpftrace programs\n"},
		{[]string{"--mode", "codegen"}, "kinst: --mode codegen: kinst compiles to BPF without LLVM, so there is no LLVM IR to generate; --dry-run compiles and loads the program without running it\n"},
		{[]string{"--mode=compiler-bench"}, "kinst: --mode compiler-bench: kinst does not time the passes of its compiler; --dump prints what each produces\n"},
		{[]string{"--mode", "tests"}, "kinst: --mode can only be 'codegen', 'compiler-bench', 'bench', 'test' or 'format'\n"},
		{[]string{"--test", "-f", "pprof", "-o", "/dev/null"}, "kinst: -f pprof writes the maps at exit, which --test and --bench do not print\n"},
	} {
		kinstEnv(t, current, append(tc.args, "-e", "test:a { }")...).want(t, 2, "", tc.want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--test"}, "kinst: --test: bpftrace 0.17 has no test mode; kinst runs test: probes in the default mode (--compat 0.26)\n"},
		{[]string{"--bench"}, "kinst: --bench: bpftrace 0.17 has no bench mode; kinst runs bench: probes in the default mode (--compat 0.26)\n"},
		{[]string{"--mode", "test"}, "kinst: --mode: bpftrace 0.17 has no --mode; kinst runs test: and bench: probes in the default mode (--compat 0.26)\n"},
		{[]string{"--fmt"}, "kinst: --fmt: kinst has no formatter for bpftrace programs\n"},
	} {
		kinstEnv(t, v017, append(tc.args, "-e", "BEGIN { }")...).want(t, 2, "", tc.want)
	}
	kinstEnv(t, v017, "-e", "BEGIN { } bench:a { }").want(t, 1, "", "-e:1:11: unknown probe type \"bench\"\nBEGIN { } bench:a { }\n          ^~~~~\n")
}

// TestTestProbeHelpers: test and bench probes are XDP programs, which
// may call fewer helpers than BEGIN's; one they may not call is refused
// where the program calls it.
func TestTestProbeHelpers(t *testing.T) {
	testenv.Root(t)
	const prog = `test:a { $p = (uint8 *)1234; print(*$p); }`
	r := kinstEnv(t, current, "--test", "-e", prog)
	// The kernel's own words come last: 6.1 says "unknown func", later
	// kernels that the program's type cannot use the helper.
	kernelWords := regexp.MustCompile(`\((unknown func|program of this type cannot use helper) bpf_probe_read#4\)\n`)
	r.stderr = kernelWords.ReplaceAllString(r.stderr, "(KERNEL)\n")
	r.want(t, 1, "",
		"-e:1:36: the kernel verifier rejected probe test:a: test and bench probes run as XDP programs, which may not call bpf_probe_read (KERNEL)\n"+
			prog+"\n"+strings.Repeat(" ", 35)+"^\n")
}
