package instruments_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// stats is one function's entry in a JSON stats line.
type stats struct {
	Count, Average, Total int64
}

// latencyStats runs kinst latency with -f json and returns the wall and
// on-CPU stats of each function.
func latencyStats(t *testing.T, args ...string) (wall, oncpu map[string]stats) {
	t.Helper()
	stdout, stderr, code := kinst(t, append([]string{"latency", "-f", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	wall, oncpu = map[string]stats{}, map[string]stats{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var rec struct {
			Type string
			Data map[string]json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if rec.Type != "stats" {
			continue
		}
		for name, raw := range rec.Data {
			var per map[string]stats
			if err := json.Unmarshal(raw, &per); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch name {
			case "@wall":
				wall = per
			case "@oncpu":
				oncpu = per
			}
		}
	}
	return wall, oncpu
}

// checkSleeps asserts that n calls each sleeping sleepNs were seen, with
// wall time at least the sleep and on-CPU time far below it.
func checkSleeps(t *testing.T, name string, wall, oncpu map[string]stats, n, sleepNs int64) {
	t.Helper()
	w, c := wall[name], oncpu[name]
	if w.Count != n || c.Count != n {
		t.Fatalf("%s: %d wall and %d on-CPU samples, want %d (wall %v, on-CPU %v)", name, w.Count, c.Count, n, wall, oncpu)
	}
	if w.Average < sleepNs {
		t.Errorf("%s: wall average %dns is below the %dns sleep", name, w.Average, sleepNs)
	}
	if c.Average > sleepNs/10 {
		t.Errorf("%s: on-CPU average %dns is not far below the %dns sleep", name, c.Average, sleepNs)
	}
	if c.Total > w.Total {
		t.Errorf("%s: on-CPU total %d exceeds wall total %d", name, c.Total, w.Total)
	}
}

// TestLatencySyscall times a system call that sleeps, through its
// tracepoints: this runs on every kernel.
func TestLatencySyscall(t *testing.T) {
	testenv.Root(t)
	const n, sleepUs = 20, 10000
	wall, oncpu := latencyStats(t, "syscall:clock_nanosleep", "-c", fmt.Sprintf("%s clocksleep %d %d", testenv.Workload(t), n, sleepUs))
	checkSleeps(t, "syscall:clock_nanosleep", wall, oncpu, n, sleepUs*1000)
}

// TestLatencyKernelFunction times the kernel's clock_nanosleep entry
// point and, nested inside it, the posix-timers function that sleeps
// (common_nsleep, or common_nsleep_timens with time namespaces), which
// the Go runtime's own sleeps never reach.
func TestLatencyKernelFunction(t *testing.T) {
	testenv.Require(t, testenv.Kprobe, testenv.Kretprobe)
	const n, sleepUs = 10, 20000
	wall, oncpu := latencyStats(t, "__x64_sys_clock_nanosleep", "common_nsleep*", "-c", fmt.Sprintf("%s clocksleep %d %d", testenv.Workload(t), n, sleepUs))
	checkSleeps(t, "__x64_sys_clock_nanosleep", wall, oncpu, n, sleepUs*1000)
	inner := ""
	for name := range wall {
		if strings.HasPrefix(name, "common_nsleep") {
			inner = name
		}
	}
	if inner == "" {
		t.Fatalf("no common_nsleep function timed: %v", wall)
	}
	checkSleeps(t, inner, wall, oncpu, n, sleepUs*1000)
	// The outer call contains the inner one.
	if o, i := wall["__x64_sys_clock_nanosleep"], wall[inner]; o.Total < i.Total {
		t.Errorf("outer wall total %d is below the nested call's %d", o.Total, i.Total)
	}
}

// TestLatencyShow prints the program latency runs.
func TestLatencyShow(t *testing.T) {
	stdout, stderr, code := kinst(t, "latency", "--show", "--pid", "42", "syscall:read")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"tracepoint:syscalls:sys_enter_read /pid == 42/ {",
		"tracepoint:syscalls:sys_exit_read /@__depth[tid] > 0/ {",
		`@oncpu_0 = stats($oncpu);`,
		"tracepoint:sched:sched_switch {",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--show lacks %q:\n%s", want, stdout)
		}
	}
}
