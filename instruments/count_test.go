package instruments_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// countTable is one table of count's JSON output.
type countTable struct {
	Time   string `json:"time"`
	Counts []struct {
		Function string `json:"function"`
		Probe    string `json:"probe"`
		Calls    uint64 `json:"calls"`
	} `json:"counts"`
}

func parseCounts(t *testing.T, out string) []countTable {
	t.Helper()
	var tables []countTable
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var tab countTable
		if err := dec.Decode(&tab); err != nil {
			t.Fatalf("count output does not parse: %v\n%s", err, line)
		}
		tables = append(tables, tab)
	}
	return tables
}

// timeLine is the first line of a text table.
var timeLine = regexp.MustCompile(`^\d\d:\d\d:\d\d\n`)

// TestCountSyscall counts a workload's getppid calls exactly, into a
// file.
func TestCountSyscall(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 1000
	file := filepath.Join(t.TempDir(), "counts")
	stdout, stderr, code := kinst(t, "count", "-o", file, "-c", fmt.Sprintf("%s getppid %d", testenv.Workload(t), n), "syscall:getppid")
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	want := "FUNCTION        CALLS\ngetppid          1000\n\n"
	if !timeLine.MatchString(out) || timeLine.ReplaceAllString(out, "") != want {
		t.Errorf("output:\n%s\nwant a time, then:\n%s", out, want)
	}
}

// TestCountSortedTop counts two system calls, the one the workload
// makes n times first; --top 1 keeps only it.
func TestCountSortedTop(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 2000
	cmd := fmt.Sprintf("%s getppid %d", testenv.Workload(t), n)
	out, _, _ := runKinst(t, "count", "-f", "json", "-c", cmd, "syscall:rt_sigaction", "syscall:getppid")
	tables := parseCounts(t, out)
	// The Go runtime sets up its signal handlers, a hundred or so.
	if len(tables) != 1 || len(tables[0].Counts) != 2 {
		t.Fatalf("want one table of two rows:\n%s", out)
	}
	rows := tables[0].Counts
	if rows[0].Function != "getppid" || rows[0].Probe != "tracepoint:syscalls:sys_enter_getppid" || rows[0].Calls != n ||
		rows[1].Function != "rt_sigaction" || rows[1].Calls == 0 || rows[1].Calls >= n {
		t.Errorf("rows %+v, want getppid %d, then rt_sigaction fewer", rows, n)
	}
	if _, err := time.Parse(time.RFC3339Nano, tables[0].Time); err != nil {
		t.Error(err)
	}
	out, _, _ = runKinst(t, "count", "--top", "1", "-c", cmd, "syscall:rt_sigaction", "syscall:getppid")
	if got, want := timeLine.ReplaceAllString(out, ""), "FUNCTION        CALLS\ngetppid          2000\n\n"; got != want {
		t.Errorf("with --top 1:\n%s\nwant:\n%s", got, want)
	}
}

// TestCountInterval prints a table every interval, of the calls made
// in it: they add up to the calls made.
func TestCountInterval(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 20000
	// At most 40,000 calls a second: at least half a second of calls.
	cmd := fmt.Sprintf("%s paced %d 40000", testenv.Workload(t), n)
	out, _, _ := runKinst(t, "count", "--interval", "50ms", "-f", "json", "-c", cmd, "syscall:getppid")
	tables := parseCounts(t, out)
	if len(tables) < 4 {
		t.Fatalf("%d tables, want one every 50ms for at least half a second:\n%s", len(tables), out)
	}
	var sum uint64
	var last time.Time
	for i, tab := range tables {
		when, err := time.Parse(time.RFC3339Nano, tab.Time)
		if err != nil || !when.After(last) {
			t.Fatalf("table %d at %s, not after %v (%v)", i, tab.Time, last, err)
		}
		last = when
		for _, r := range tab.Counts {
			if r.Function != "getppid" || r.Calls == 0 {
				t.Fatalf("table %d has row %+v", i, r)
			}
			sum += r.Calls
		}
	}
	if sum != n {
		t.Errorf("the tables count %d calls, want %d:\n%s", sum, n, out)
	}
}

// TestCountUprobe counts the calls of a Go function.
func TestCountUprobe(t *testing.T) {
	testenv.Require(t, testenv.Uprobe)
	workload := testenv.Workload(t)
	// Named twice, it is counted once.
	out, _, _ := runKinst(t, "count", "-c", workload+" call 5000", "uprobe:"+workload+":main.callee", "uprobe:"+workload+":main.callee")
	if got, want := timeLine.ReplaceAllString(out, ""), "FUNCTION           CALLS\nmain.callee         5000\n\n"; got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

// TestCountKernelFunctions counts kernel functions by name and by
// pattern: each write goes through ksys_write and vfs_write once.
func TestCountKernelFunctions(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	cmd := fmt.Sprintf("%s write 300 1", testenv.Workload(t))
	out, _, _ := runKinst(t, "count", "-c", cmd, "vfs_writ*", "ksys_write")
	want := "FUNCTION          CALLS\nksys_write          300\nvfs_write           300\n\n"
	if got := timeLine.ReplaceAllString(out, ""); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

// TestCountShow checks the program count runs.
func TestCountShow(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	stdout, stderr, code := kinst(t, "count", "--show", "--comm", "cat", "--interval", "2s", "syscall:openat", "tracepoint:sched:sched_process_*")
	want := `tracepoint:syscalls:sys_enter_openat,
tracepoint:sched:sched_process_* /comm == "cat"/ {
	@calls[probe] = count();
}

interval:ms:2000 {
	print(@calls);
}
`
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
}

// TestCountPrometheus serves count's map to a scrape while it runs: a
// copy of the workload, picked out by its name, calls getppid n times.
func TestCountPrometheus(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n, name = 1500, "kinst-cnt-prom"
	data, err := os.ReadFile(testenv.Workload(t))
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(w, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd, stdout, stop := startAttached(t, 1, "count", "--prometheus", addr, "--comm", name, "syscall:getppid")
	if out, err := exec.Command(w, "getppid", fmt.Sprint(n)).CombinedOutput(); err != nil {
		stop()
		t.Fatalf("workload: %v\n%s", err, out)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP kinst_calls_total count map @calls of the kinst program.
# TYPE kinst_calls_total counter
kinst_calls_total{probe="tracepoint:syscalls:sys_enter_getppid"} 1500
# HELP kinst_lost_events_total Records probes sent that the ring buffer refused because it was full.
# TYPE kinst_lost_events_total counter
kinst_lost_events_total 0
# HELP kinst_map_full_total Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).
# TYPE kinst_map_full_total counter
kinst_map_full_total{map="@calls"} 0
`
	if string(body) != want {
		t.Errorf("/metrics:\n%s\nwant:\n%s", body, want)
	}
	// The table at exit is count's own output, which stays.
	out := stdout.String()
	table := "FUNCTION        CALLS\ngetppid          1500\n\n"
	if cmd.ProcessState.ExitCode() != 0 || !timeLine.MatchString(out) || timeLine.ReplaceAllString(out, "") != table {
		t.Errorf("exit %d, stdout:\n%s\nwant a time, then:\n%s", cmd.ProcessState.ExitCode(), out, table)
	}
}
