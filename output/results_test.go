package output

import (
	"testing"
	"time"

	"kinst.dev/kinst/compat"
)

// TestTestResult prints the results of --test as bpftrace 0.26.1 does:
// the header with the first, a failed test's output, the duration's unit
// with its size in nanoseconds, and the summary with the last.
func TestTestResult(t *testing.T) {
	tests := []string{"okay", "failure", "slow"}
	text, json := bothIn(t, compat.Current, func(w *Writer) error {
		if err := w.TestResult(tests, 0, 999*time.Nanosecond, []bool{true}, "quiet\n"); err != nil {
			return err
		}
		if err := w.TestResult(tests, 1, 2500*time.Nanosecond, []bool{true, false}, "shown\n\nstdin:1:2-3: ERROR: x\n"); err != nil {
			return err
		}
		return w.TestResult(tests, 2, 3*time.Second, []bool{true, false, false}, "")
	})
	const wantText = "\033[32m[==========]\033[0m Running 3 tests.\n" +
		"\033[32m[ RUN      ]\033[0m okay\n" +
		"\033[32m[       OK ]\033[0m okay (1 ns)\n" +
		"\033[32m[ RUN      ]\033[0m failure\n" +
		"shown\n" +
		"stdin:1:2-3: ERROR: x\n" +
		"\033[31m[  FAILED  ]\033[0m failure (1000 μs)\n" +
		"\033[32m[ RUN      ]\033[0m slow\n" +
		"\033[31m[  FAILED  ]\033[0m slow (1000000000 s)\n" +
		"\033[32m[==========]\033[0m 3 tests ran.\n" +
		"\033[32m[  PASSED  ]\033[0m 1 test.\n" +
		"\033[31m[  FAILED  ]\033[0m 2 tests, listed below:\n" +
		"\033[31m[  FAILED  ]\033[0m failure\n" +
		"\033[31m[  FAILED  ]\033[0m slow\n"
	const wantJSON = `{"type": "test_result", "data": {"okay": {"duration": 999, "passed": true, "output": "quiet\n"}}}` + "\n" +
		`{"type": "test_result", "data": {"failure": {"duration": 2500, "passed": false, "output": "shown\n\nstdin:1:2-3: ERROR: x\n"}}}` + "\n" +
		`{"type": "test_result", "data": {"slow": {"duration": 3000000000, "passed": false, "output": ""}}}` + "\n"
	if text != wantText {
		t.Errorf("text:\n%q\nwant:\n%q", text, wantText)
	}
	if json != wantJSON {
		t.Errorf("JSON:\n%s\nwant:\n%s", json, wantJSON)
	}

	// One test, passed: singular counts, no list of failures.
	text, _ = bothIn(t, compat.Current, func(w *Writer) error {
		return w.TestResult([]string{"noop"}, 0, 5*time.Millisecond, []bool{true}, "")
	})
	const wantOne = "\033[32m[==========]\033[0m Running 1 tests.\n" +
		"\033[32m[ RUN      ]\033[0m noop\n" +
		"\033[32m[       OK ]\033[0m noop (1000000 ms)\n" +
		"\033[32m[==========]\033[0m 1 test ran.\n" +
		"\033[32m[  PASSED  ]\033[0m 1 test.\n"
	if text != wantOne {
		t.Errorf("one test:\n%q\nwant:\n%q", text, wantOne)
	}
}

// TestBenchmarkResult prints the table of --bench, its name column as
// wide as the longest name and at least 40 bytes, and its JSON lines.
func TestBenchmarkResult(t *testing.T) {
	for _, tc := range []struct {
		name    string
		benches []string
		text    string
	}{
		{"short names", []string{"a", "count"},
			"Benchmark                                Time(ns)       Iterations\n" +
				"------------------------------------------------------------------\n" +
				"a                                        59             20000\n" +
				"count                                    7              1000000\n"},
		{"long name", []string{"a", "a_benchmark_with_a_name_longer_than_forty_bytes"},
			"Benchmark                                       Time(ns)       Iterations\n" +
				"-------------------------------------------------------------------------\n" +
				"a                                               59             20000\n" +
				"a_benchmark_with_a_name_longer_than_forty_bytes 7              1000000\n"},
	} {
		text, json := bothIn(t, compat.Current, func(w *Writer) error {
			if err := w.BenchmarkResult(tc.benches, 0, 59, 20000); err != nil {
				return err
			}
			return w.BenchmarkResult(tc.benches, 1, 7, 1000000)
		})
		wantJSON := `{"type": "benchmark_result", "data": {"a": {"average": 59, "iters": 20000}}}` + "\n" +
			`{"type": "benchmark_result", "data": {"` + tc.benches[1] + `": {"average": 7, "iters": 1000000}}}` + "\n"
		if text != tc.text {
			t.Errorf("%s: text:\n%s\nwant:\n%s", tc.name, text, tc.text)
		}
		if json != wantJSON {
			t.Errorf("%s: JSON:\n%s\nwant:\n%s", tc.name, json, wantJSON)
		}
	}
}
