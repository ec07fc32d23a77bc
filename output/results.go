package output

import (
	"strconv"
	"strings"
	"time"
)

// The colours of bpftrace 0.26.1's test report, written whatever the
// output is.
const (
	green = "\033[32m"
	red   = "\033[31m"
	reset = "\033[0m"
)

// TestResult writes the result of tests[index], run by --test, as
// bpftrace 0.26.1 does once each test has run; passed holds the results
// so far, passed[index] this test's. In text, the first test's result is
// preceded by "[==========] Running N tests.", a failed test's result by
// the non-empty lines of out, what it printed; the last is followed by
// the summary. In JSON each is one test_result line holding out whole.
func (w *Writer) TestResult(tests []string, index int, d time.Duration, passed []bool, out string) error {
	name := tests[index]
	if w.st.json {
		b := append(w.buf[:0], `{"type": "test_result", "data": {`...)
		b = appendJSONString(b, name)
		b = append(b, `: {"duration": `...)
		b = strconv.AppendInt(b, d.Nanoseconds(), 10)
		b = append(b, `, "passed": `...)
		b = strconv.AppendBool(b, passed[index])
		b = append(b, `, "output": `...)
		b = appendJSONString(b, out)
		w.buf = append(b, "}}}\n"...)
		return w.flush()
	}
	b := w.buf[:0]
	if index == 0 {
		b = append(b, green+"[==========]"+reset+" Running "...)
		b = strconv.AppendInt(b, int64(len(tests)), 10)
		b = append(b, " tests.\n"...)
	}
	b = append(b, green+"[ RUN      ]"+reset+" "...)
	b = append(b, name...)
	b = append(b, '\n')
	if passed[index] {
		b = append(b, green+"[       OK ]"+reset+" "...)
	} else {
		for _, line := range strings.Split(out, "\n") {
			if line != "" {
				b = append(b, line...)
				b = append(b, '\n')
			}
		}
		b = append(b, red+"[  FAILED  ]"+reset+" "...)
	}
	b = append(b, name...)
	unit, scale := durationUnit(d)
	b = append(b, " ("...)
	// bpftrace 0.26.1 prints the unit's size in nanoseconds where the
	// duration in that unit was meant: "(1 ns)" for any test under a
	// microsecond, "(1000 μs)" up to a millisecond.
	b = strconv.AppendInt(b, scale, 10)
	b = append(b, ' ')
	b = append(b, unit...)
	b = append(b, ")\n"...)
	if index == len(tests)-1 {
		failed := 0
		for _, ok := range passed {
			if !ok {
				failed++
			}
		}
		b = append(b, green+"[==========]"+reset+" "...)
		b = appendTests(b, len(tests))
		b = append(b, " ran.\n"+green+"[  PASSED  ]"+reset+" "...)
		b = appendTests(b, len(passed)-failed)
		b = append(b, ".\n"...)
		if failed > 0 {
			b = append(b, red+"[  FAILED  ]"+reset+" "...)
			b = appendTests(b, failed)
			b = append(b, ", listed below:\n"...)
			for i, ok := range passed {
				if !ok {
					b = append(b, red+"[  FAILED  ]"+reset+" "...)
					b = append(b, tests[i]...)
					b = append(b, '\n')
				}
			}
		}
	}
	w.buf = b
	return w.flush()
}

// appendTests appends "N test" or "N tests".
func appendTests(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " test"...)
	}
	return append(b, " tests"...)
}

// durationUnit picks the unit bpftrace 0.26.1 shows a duration in, and
// the unit's size in nanoseconds.
func durationUnit(d time.Duration) (string, int64) {
	switch {
	case d >= time.Second:
		return "s", int64(time.Second)
	case d >= time.Millisecond:
		return "ms", int64(time.Millisecond)
	case d >= time.Microsecond:
		return "μs", int64(time.Microsecond)
	}
	return "ns", 1
}

// Widths of the columns of the benchmark table: the name column is as
// wide as the longest name, at least, and one space more.
const (
	benchNameWidth = 40
	benchTimeWidth = 15
)

// BenchmarkResult writes the result of benches[index], run by --bench,
// as bpftrace 0.26.1 does: in text, a row of the table of names, average
// times in nanoseconds and iterations, whose header comes with the first
// bench's row; in JSON a benchmark_result line.
func (w *Writer) BenchmarkResult(benches []string, index int, avg time.Duration, iters uint64) error {
	name := benches[index]
	if w.st.json {
		b := append(w.buf[:0], `{"type": "benchmark_result", "data": {`...)
		b = appendJSONString(b, name)
		b = append(b, `: {"average": `...)
		b = strconv.AppendInt(b, avg.Nanoseconds(), 10)
		b = append(b, `, "iters": `...)
		b = strconv.AppendUint(b, iters, 10)
		w.buf = append(b, "}}}\n"...)
		return w.flush()
	}
	width := benchNameWidth
	for _, n := range benches {
		width = max(width, len(n))
	}
	b := w.buf[:0]
	if index == 0 {
		b = appendPadRight(b, "Benchmark", width+1)
		b = appendPadRight(b, "Time(ns)", benchTimeWidth)
		b = append(b, "Iterations\n"...)
		b = append(b, strings.Repeat("-", width+1+benchTimeWidth+len("Iterations"))...)
		b = append(b, '\n')
	}
	b = appendPadRight(b, name, width+1)
	b = appendPadRight(b, strconv.FormatInt(avg.Nanoseconds(), 10), benchTimeWidth)
	b = strconv.AppendUint(b, iters, 10)
	w.buf = append(b, '\n')
	return w.flush()
}
