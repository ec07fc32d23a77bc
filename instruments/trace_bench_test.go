package instruments_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// startAttached runs kinst -v in the background until it has attached
// n programs, and returns it, its standard output (to read only after
// cmd.Wait, until when kinst writes to it) and a function that stops it.
func startAttached(b testing.TB, n int, args ...string) (*exec.Cmd, *syncBuffer, func()) {
	b.Helper()
	// Last, where both kinst's options and an instrument's take it.
	cmd := exec.Command(testenv.Kinst(b), append(args, "-v")...)
	stdout := new(syncBuffer)
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	attached := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for seen := 0; sc.Scan(); {
			all.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "kinst: attached ") {
				if seen++; seen == n {
					attached <- ""
					io.Copy(io.Discard, stderr)
					return
				}
			}
		}
		attached <- all.String()
	}()
	select {
	case msg := <-attached:
		if msg != "" {
			cmd.Wait()
			b.Fatalf("kinst %q stopped before attaching:\n%s", args, msg)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		b.Fatalf("kinst %q did not attach", args)
	}
	return cmd, stdout, func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}

// syncBuffer is a bytes.Buffer a test may read while kinst writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits up to a minute for the buffer to hold n copies of sub,
// and returns what it holds then.
func (s *syncBuffer) waitFor(sub string, n int) string {
	deadline := time.Now().Add(time.Minute)
	for {
		out := s.String()
		if strings.Count(out, sub) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workloadCPU runs the getppid workload and returns the CPU time it
// used, in which the kernel's probe programs run.
func workloadCPU(b *testing.B, calls int) time.Duration {
	cmd := exec.Command(testenv.Workload(b), "getppid", strconv.Itoa(calls))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("workload: %v\n%s", err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// perCall is the CPU time of one getppid call, the workload's start-up
// taken out. Under emulation, load on the host stretches the guest's
// time at random, so of b.N+2 runs the fastest counts.
func perCall(b *testing.B, calls int) float64 {
	best, startup := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range b.N + 2 {
		best = min(best, workloadCPU(b, calls))
		startup = min(startup, workloadCPU(b, 0))
	}
	return float64(best-startup) / float64(calls)
}

// programRuns sums the run time and runs of the BPF programs process
// pid holds, found through its file descriptors.
func programRuns(b *testing.B, pid int) (time.Duration, uint64) {
	infos, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil || len(infos) == 0 {
		b.Fatalf("no file descriptors of process %d: %v", pid, err)
	}
	var total time.Duration
	var runs uint64
	for _, info := range infos {
		data, err := os.ReadFile(info)
		if err != nil {
			continue
		}
		m := regexp.MustCompile(`(?m)^prog_id:\s+(\d+)$`).FindSubmatch(data)
		if m == nil {
			continue
		}
		id, _ := strconv.ParseUint(string(m[1]), 10, 32)
		p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err != nil {
			continue
		}
		st, err := p.Stats()
		p.Close()
		if err != nil {
			b.Fatal(err)
		}
		total += st.Runtime
		runs += st.RunCount
	}
	return total, runs
}

// BenchmarkTraceCost measures what one trace log entry costs in the
// kernel (a call makes two: entry and exit) against an empty program on
// the same function: fentry on __task_pid_nr_ns, which getppid calls
// once, where the kernel has trampolines (the guests); getppid's
// tracepoints where it has not (this host).
//
// The workload's CPU time gives what the empty program adds to a call,
// the trampoline or tracepoint dispatch included. The kernel's own
// timing of each program run (BPF_STATS_RUN_TIME) gives trace's
// programs' cost, so a log entry costs its share of the dispatch plus
// its program's run. Under emulation the guest's CPUs share one host
// thread, so time the emulator spends on kinst's reader is charged to
// whatever the other CPU runs, programs included: the guests' figures
// are upper bounds, and the ratio is what compares.
func BenchmarkTraceCost(b *testing.B) {
	b.Run("fentry", func(b *testing.B) {
		testenv.Require(b, testenv.Fentry, testenv.Fexit)
		const fn = "__task_pid_nr_ns"
		traceCost(b, "fentry:"+fn+" {}", "fexit:"+fn+" {}", fn)
	})
	b.Run("tracepoint", func(b *testing.B) {
		testenv.Require(b, testenv.Tracepoint)
		traceCost(b, "tracepoint:syscalls:sys_enter_getppid {}", "tracepoint:syscalls:sys_exit_getppid {}", "syscall:getppid")
	})
}

// traceCost compares trace on target with the empty probes entry and
// exit on the same function.
func traceCost(b *testing.B, entry, exit, target string) {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF run time statistics: %v", err)
	}
	defer stats.Close()
	const calls = 500_000
	comm := workloadComm(b)
	bare := perCall(b, calls)
	// cost returns what a call costs more with kinst running, and the
	// mean run time of its programs.
	cost := func(n int, args ...string) (added, run float64) {
		cmd, _, stop := startAttached(b, n, args...)
		defer stop()
		added = perCall(b, calls) - bare
		total, runs := programRuns(b, cmd.Process.Pid)
		if runs < uint64(n*calls) {
			b.Fatalf("kinst %q: %d program runs, want at least %d", args, runs, n*calls)
		}
		return added, float64(total) / float64(runs)
	}
	one, oneRun := cost(1, "-e", entry)
	pair, pairRun := cost(2, "-e", entry+" "+exit)
	charged, traceRun := cost(2, "trace", "-o", "/dev/null", "--comm", comm, target)
	// The dispatch's share of each of trace's two programs: what the
	// empty pair adds to a call, less their programs' runs.
	dispatch := (pair - 2*pairRun) / 2
	logEntry := dispatch + traceRun
	b.ReportMetric(bare, "ns/call")
	b.ReportMetric(one, "empty-ns")
	b.ReportMetric(logEntry, "trace-ns/entry")
	b.ReportMetric(logEntry/one, "entry/empty")
	b.Logf("getppid %.0f ns; an empty program adds %.0f ns (it runs %.0f ns), the empty pair %.0f ns; "+
		"a trace program runs %.0f ns, so a log entry costs %.0f ns in the kernel: %.1f times an empty program "+
		"(the workload's CPU time grows by %.0f ns a call)",
		bare, one, oneRun, pair, traceRun, logEntry, logEntry/one, charged)
}

// logRate is the rate of the events in a log file, from the times of
// its first and last.
func logRate(b *testing.B, file, format string) float64 {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if format == "text" {
		lines = lines[1:] // the header
	}
	if len(lines) < 2 {
		b.Fatalf("%d events in the log", len(lines))
	}
	at := func(line string) time.Time {
		var when time.Time
		var err error
		if format == "text" {
			when, err = time.Parse("15:04:05.000000000", line[:18])
		} else {
			var e struct{ Time time.Time }
			err = json.Unmarshal([]byte(line), &e)
			when = e.Time
		}
		if err != nil {
			b.Fatalf("log line %q: %v", line, err)
		}
		return when
	}
	span := at(lines[len(lines)-1]).Sub(at(lines[0]))
	if span < 0 {
		span += 24 * time.Hour // midnight passed
	}
	return float64(len(lines)-1) / span.Seconds()
}

// BenchmarkTraceSustained finds the highest steady rate of events that
// trace writes to a file without losing one: the workload calls getppid
// at a fixed rate for two seconds, each call two events, and the rate
// rises until events are lost or the workload, slowed by the probes,
// cannot keep to it. The rate reported is the one the log shows.
func BenchmarkTraceSustained(b *testing.B) {
	testenv.Require(b, testenv.Tracepoint)
	summary := regexp.MustCompile(`kinst trace: (\d+) events logged, (\d+) lost\n$`)
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			best := 0.0
			for _, calls := range []int{50_000, 100_000, 200_000, 300_000, 400_000, 600_000, 800_000, 1_000_000} {
				file := filepath.Join(b.TempDir(), "log")
				cmd := fmt.Sprintf("%s paced %d %d", testenv.Workload(b), 2*calls, calls)
				_, stderr, _ := runKinst(b, "trace", "-f", format, "-o", file, "-c", cmd, "syscall:getppid")
				m := summary.FindStringSubmatch(stderr)
				if m == nil {
					b.Fatalf("no summary:\n%s", stderr)
				}
				rate := logRate(b, file, format)
				b.Logf("%d calls/s asked: %.0f events/s logged, %s events, %s lost", calls, rate, m[1], m[2])
				if m[2] != "0" {
					break
				}
				best = max(best, rate)
				if rate < 1.8*float64(calls) {
					break // the workload could not keep to the rate
				}
			}
			b.ReportMetric(best, "events/s")
		})
	}
}
