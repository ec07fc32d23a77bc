package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/output"
)

// Mode says what a run runs.
type Mode int

// The modes. In RunTests and RunBenchmarks, as in bpftrace 0.26.1's
// --test and --bench, BEGIN runs, then each test or bench probe in
// source order, then END; no other probe is attached, and the maps are
// not printed at the end. In RunProbes, the default, test and bench
// probes are left alone.
const (
	RunProbes Mode = iota
	RunTests
	RunBenchmarks
)

// A FailedError says that tests failed (RunTests), or that benchmarks
// failed by calling exit() with a code other than 0 or by reporting an
// error (RunBenchmarks). The output says which and why; the kinst
// command exits with status 1.
type FailedError struct {
	Mode  Mode
	Names []string // the tests or benchmarks that failed
}

func (e *FailedError) Error() string {
	what := "test"
	if e.Mode == RunBenchmarks {
		what = "benchmark"
	}
	if len(e.Names) > 1 {
		what += "s"
	}
	return fmt.Sprintf("%d %s failed: %s", len(e.Names), what, strings.Join(e.Names, ", "))
}

// testData is the packet BPF_PROG_TEST_RUN hands a test or bench
// probe's XDP program: the kernel refuses one shorter than an Ethernet
// header.
var testData = make([]byte, 14)

// nothingToAttach says, as bpftrace 0.26.1 does, that a program whose
// only probes are test or bench probes runs nothing outside their mode.
func (s *Session) nothingToAttach() error {
	kind := ""
	for _, p := range s.loaded {
		switch p.Probe.Provider {
		case "test", "bench":
			if kind == "" {
				kind = p.Probe.Provider
			}
		default:
			return nil
		}
	}
	switch kind {
	case "test":
		return errors.New("no probes attached; use --test to run test probes")
	case "bench":
		return errors.New("no probes attached; use --bench to run benchmark probes")
	}
	return nil
}

// runMode runs the program in the test or bench mode, once loaded. What
// BEGIN prints is printed with the first test's or bench's output, as
// bpftrace reads it only then.
func (s *Session) runMode(ctx context.Context) error {
	kind := "test"
	if s.opts.Mode == RunBenchmarks {
		kind = "bench"
	}
	var progs []*codegen.Program
	var names []string
	special := 0
	for _, p := range s.loaded {
		switch p.Probe.Provider {
		case kind:
			progs = append(progs, p)
			names = append(names, p.Targets[0].Name)
		case "BEGIN", "END":
			special++
		}
	}
	if len(progs)+special == 0 {
		return fmt.Errorf("no %s probes to run", kind)
	}
	if err := s.runSpecial("BEGIN"); err != nil {
		return err
	}
	var failed []string
	var err error
	if kind == "test" {
		failed, err = s.runTests(progs, names)
	} else {
		failed, err = s.runBenchmarks(progs, names)
	}
	if err != nil {
		return err
	}
	if s.opts.NotifyAttached {
		// bpftrace prints it once the tests have run.
		fmt.Fprintln(s.opts.Stdout, "__BPFTRACE_NOTIFY_PROBES_ATTACHED")
	}
	// What BEGIN printed when no test or bench took it is read before
	// END runs, and what it sent after an exit() dropped.
	s.drain()
	if s.exited {
		s.discard()
		s.exited = false
	}
	if err := s.runSpecial("END"); err != nil {
		return err
	}
	s.drain()
	s.reportLost()
	s.reportFull()
	s.reportStacks()
	endErr := errors.Join(s.w.End(), s.buf.Flush())
	switch {
	case s.outw.err != nil:
		return fmt.Errorf("write output: %w", s.outw.err)
	case endErr != nil:
		return endErr
	case s.readErr != nil:
		return s.readErr
	case len(failed) > 0:
		return &FailedError{Mode: s.opts.Mode, Names: failed}
	}
	return s.endErr(ctx)
}

// runTests runs each test once and prints its result. A test passes when
// it returns 0, does not call exit() with another code and reports no
// error (errorf() or a failed helper). It returns the tests that failed.
func (s *Session) runTests(progs []*codegen.Program, names []string) ([]string, error) {
	var failed []string
	passed := make([]bool, 0, len(progs))
	var out bytes.Buffer
	for i, p := range progs {
		if s.ctx.Err() != nil {
			break // a signal: END runs all the same
		}
		end := s.startCapture(&out)
		ret, d, err := s.coll.Programs[p.Name].Benchmark(testData, 1, nil)
		end()
		if err != nil {
			return failed, fmt.Errorf("run test %s: %w", names[i], err)
		}
		ok := ret == 0 && s.exitCode == 0 && s.errCount == 0
		passed = append(passed, ok)
		if !ok {
			failed = append(failed, names[i])
		}
		if err := s.w.TestResult(names, i, d, passed, out.String()); err != nil {
			return failed, err
		}
		s.buf.Flush()
		out.Reset()
		s.exitCode = 0
	}
	return failed, nil
}

// Run times of a benchmark below which its iterations are multiplied by
// the factor, until the run takes a millisecond, as in bpftrace 0.26.1.
var benchGrowth = []struct {
	below  time.Duration
	factor uint64
}{
	{time.Microsecond, 1000},
	{10 * time.Microsecond, 100},
	{100 * time.Microsecond, 10},
	{time.Millisecond, 2},
}

// runBenchmarks times each bench probe and prints its average run time:
// the kernel runs it repeatedly, as many times as make a millisecond or
// more, with what it prints dropped. A bench that returns a value other
// than 0 is skipped; one that calls exit() with a code other than 0 or
// reports an error fails, which is said on standard error. It returns
// the benchmarks that failed.
func (s *Session) runBenchmarks(progs []*codegen.Program, names []string) ([]string, error) {
	var failed []string
	var out bytes.Buffer
	for i, p := range progs {
		for iters := uint64(1); s.ctx.Err() == nil; {
			end := s.startCapture(&out)
			ret, avg, err := s.coll.Programs[p.Name].Benchmark(testData, int(iters), nil)
			end()
			out.Reset()
			if err != nil {
				return failed, fmt.Errorf("run benchmark %s: %w", names[i], err)
			}
			if s.exitCode == 0 && ret != 0 {
				break // skipped
			}
			// The kernel takes at most 1<<32-1 iterations: a bench
			// that fast reports what it has.
			if factor := growth(avg * time.Duration(iters)); factor > 0 && iters*factor <= math.MaxUint32 {
				iters *= factor
				continue
			}
			if s.exitCode != 0 || s.errCount != 0 {
				failed = append(failed, names[i])
				s.buf.Flush()
				fmt.Fprintf(s.opts.Stderr, "kinst: benchmark '%s' failed\n", names[i])
				break
			}
			if err := s.w.BenchmarkResult(names, i, avg, iters); err != nil {
				return failed, err
			}
			s.buf.Flush()
			break
		}
		s.exitCode = 0
	}
	return failed, nil
}

// growth is what a benchmark's iterations are multiplied by after a run
// of total length d, or 0 once it ran long enough.
func growth(d time.Duration) uint64 {
	for _, g := range benchGrowth {
		if d < g.below {
			return g.factor
		}
	}
	return 0
}

// startCapture sends what the program prints to buf, in text, and counts
// the errors it reports. It returns the function that ends the capture:
// it reads what the probe that ran printed, and sends the output where
// it went before. What a probe sends after exit() is dropped, and the
// run goes on with the next probe.
func (s *Session) startCapture(buf *bytes.Buffer) (end func()) {
	s.buf.Flush()
	buffered, w, errw := s.buf, s.w, s.errw
	s.captured, s.errCount = buf, 0
	s.buf = bufio.NewWriter(buf)
	s.w = output.NewText(s.buf, s.out.Compat)
	s.errw = s.w
	return func() {
		s.drain()
		if s.exited {
			s.discard()
			s.exited = false
			if s.ctx.Err() == nil {
				s.stopping.Store(false)
			}
		}
		s.reportLost()
		s.buf.Flush()
		s.captured, s.buf, s.w, s.errw = nil, buffered, w, errw
	}
}
