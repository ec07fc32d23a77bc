package instruments_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// traceEvent is one line of trace's JSON log. Decoding refuses fields
// it does not know, so the field names are checked too.
type traceEvent struct {
	Time     string                     `json:"time"`
	Nsecs    uint64                     `json:"nsecs"`
	CPU      int                        `json:"cpu"`
	Pid      int                        `json:"pid"`
	Tid      int                        `json:"tid"`
	Comm     string                     `json:"comm"`
	Event    string                     `json:"event"`
	Function string                     `json:"function"`
	Symbol   string                     `json:"symbol"`
	Address  string                     `json:"address"`
	Probe    string                     `json:"probe"`
	Depth    int                        `json:"depth"`
	Args     map[string]json.RawMessage `json:"args"`
	Stack    []string                   `json:"stack"`
	Retval   *int64                     `json:"retval"`
	Duration *uint64                    `json:"duration_ns"`
}

// parseLog decodes a JSON log, one event per line.
func parseLog(t *testing.T, log string) []traceEvent {
	t.Helper()
	var events []traceEvent
	for i, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		if line == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var e traceEvent
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("log line %d does not parse: %v\n%s", i+1, err, line)
		}
		events = append(events, e)
	}
	return events
}

// runKinst runs kinst to the end and returns its output and its pid,
// which is the parent a -c command sees.
func runKinst(t testing.TB, args ...string) (stdout, stderr string, pid int) {
	t.Helper()
	cmd := exec.Command(testenv.Kinst(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kinst %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), cmd.Process.Pid
}

// kallsymsAddr is the address of a kernel symbol, in the hex the log
// shows.
func kallsymsAddr(t *testing.T, name string) string {
	t.Helper()
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := ks.Address(name)
	if !ok {
		t.Fatalf("%s is not in kallsyms", name)
	}
	return fmt.Sprintf("0x%x", addr)
}

// workloadComm is the workload's command name as the kernel keeps it.
func workloadComm(t testing.TB) string {
	name := filepath.Base(testenv.Workload(t))
	return name[:min(len(name), 15)]
}

// checkCalls checks that events are n calls of fn by one thread, each
// entry followed by its exit, in time order, with exact durations, and
// returns the exits.
func checkCalls(t *testing.T, events []traceEvent, n int, fn string) []traceEvent {
	t.Helper()
	if len(events) != 2*n {
		t.Fatalf("%d events, want %d entries and %d exits", len(events), n, n)
	}
	var exits []traceEvent
	start, err := time.Parse(time.RFC3339Nano, events[0].Time)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		want := "entry"
		if i%2 == 1 {
			want = "exit"
		}
		if e.Event != want || e.Function != fn || e.Depth != 0 || e.Pid != events[0].Pid || e.Tid != events[0].Tid {
			t.Fatalf("event %d is %s %s depth %d in %d/%d, want %s %s depth 0 in %d/%d",
				i, e.Event, e.Function, e.Depth, e.Pid, e.Tid, want, fn, events[0].Pid, events[0].Tid)
		}
		if i > 0 && e.Nsecs <= events[i-1].Nsecs {
			t.Fatalf("event %d at %d ns is not after event %d at %d ns", i, e.Nsecs, i-1, events[i-1].Nsecs)
		}
		// The wall time is the monotonic time moved by one offset.
		wall, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := wall.Sub(start), time.Duration(e.Nsecs-events[0].Nsecs); got != want {
			t.Fatalf("event %d is %v after the first in wall time and %v in nsecs", i, got, want)
		}
		if want == "exit" {
			if e.Duration == nil || *e.Duration != e.Nsecs-events[i-1].Nsecs {
				t.Fatalf("exit %d has duration %v, want %d ns since its entry", i, e.Duration, e.Nsecs-events[i-1].Nsecs)
			}
			exits = append(exits, e)
		} else if e.Retval != nil || e.Duration != nil {
			t.Fatalf("entry %d has a return value or duration", i)
		}
	}
	if since := time.Since(start); since < 0 || since > 10*time.Minute {
		t.Errorf("the first event's wall time %s is %v from now", events[0].Time, since)
	}
	return exits
}

// TestTraceSyscallJSON logs the getppid calls of a workload: exactly N
// entries and N exits, in order, with the parent's pid returned.
func TestTraceSyscallJSON(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 500
	out, stderr, pid := runKinst(t, "trace", "-f", "json", "-c", fmt.Sprintf("%s getppid %d", testenv.Workload(t), n), "syscall:getppid")
	events := parseLog(t, out)
	exits := checkCalls(t, events, n, "getppid")
	addr := kallsymsAddr(t, "__x64_sys_getppid")
	comm := workloadComm(t)
	for i, e := range events {
		probe := "tracepoint:syscalls:sys_enter_getppid"
		if e.Event == "exit" {
			probe = "tracepoint:syscalls:sys_exit_getppid"
		}
		if e.Probe != probe || e.Symbol != "__x64_sys_getppid" || e.Address != addr || e.Comm != comm || e.Pid != e.Tid || e.CPU < 0 || e.CPU >= runtime.NumCPU() {
			t.Fatalf("event %d: %+v, want probe %s, symbol __x64_sys_getppid at %s, comm %s", i, e, probe, addr, comm)
		}
	}
	for i, e := range exits {
		if *e.Retval != int64(pid) {
			t.Fatalf("exit %d returned %d, want kinst's pid %d", i, *e.Retval, pid)
		}
	}
	if want := fmt.Sprintf("kinst trace: %d events logged, 0 lost\n", 2*n); stderr != want {
		t.Errorf("stderr is %q, want %q", stderr, want)
	}
}

// TestTraceSyscallText checks the text log line by line.
func TestTraceSyscallText(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 100
	out, _, pid := runKinst(t, "trace", "-q", "-c", fmt.Sprintf("%s getppid %d", testenv.Workload(t), n), "syscall:getppid")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := "TIME               CPU     PID     TID COMM             CALL"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	if len(lines) != 1+2*n {
		t.Fatalf("%d lines, want the header and %d events:\n%s", len(lines), 2*n, out)
	}
	addr := kallsymsAddr(t, "__x64_sys_getppid")
	comm := fmt.Sprintf("%-16s", workloadComm(t))
	entry := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{9} +\d+ +(\d+) +(\d+) ` + comm + ` -> getppid \((0x[0-9a-f]+)\)$`)
	exit := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{9} +\d+ +(\d+) +(\d+) ` + comm + ` <- getppid \((0x[0-9a-f]+)\) = (\d+) \(\d+(\.\d{3}(us|ms|s)|ns)\)$`)
	for i, line := range lines[1:] {
		re := entry
		if i%2 == 1 {
			re = exit
		}
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d does not read as %s:\n%s", i+2, re, line)
		}
		if m[1] != m[2] || m[3] != addr {
			t.Fatalf("line %d: pid %s tid %s address %s, want one thread and %s:\n%s", i+2, m[1], m[2], m[3], addr, line)
		}
		if re == exit && m[4] != strconv.Itoa(pid) {
			t.Fatalf("line %d returns %s, want kinst's pid %d:\n%s", i+2, m[4], pid, line)
		}
	}
}

// TestTraceArgs logs typed tracepoint arguments: the path a workload
// opens, its flags, and the error each open returns.
func TestTraceArgs(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 20
	path := filepath.Join(t.TempDir(), "absent")
	out, _, _ := runKinst(t, "trace", "--args", "-f", "json", "-c", fmt.Sprintf("%s openat %d %s", testenv.Workload(t), n, path), "syscall:openat")
	events := parseLog(t, out)
	// The Go runtime opens files of its own at start: keep the calls on
	// path, each entry with the exit that follows it in the thread.
	var mine []traceEvent
	for i, e := range events {
		if e.Event == "entry" && string(e.Args["filename"]) == strconv.Quote(path) && i+1 < len(events) {
			mine = append(mine, e, events[i+1])
		}
	}
	for i, e := range checkCalls(t, mine, n, "openat") {
		if *e.Retval != -int64(syscall.ENOENT) {
			t.Fatalf("open %d returned %d, want -ENOENT", i, *e.Retval)
		}
	}
	wantArgs := map[string]string{"dfd": "-100", "filename": strconv.Quote(path), "flags": "0", "mode": "0"}
	for i := 0; i < len(mine); i += 2 {
		if len(mine[i].Args) != len(wantArgs) {
			t.Fatalf("entry %d has arguments %s, want %v", i, mine[i].Args, wantArgs)
		}
		for name, want := range wantArgs {
			if got := string(mine[i].Args[name]); got != want {
				t.Fatalf("entry %d: %s=%s, want %s", i, name, got, want)
			}
		}
	}
}

// TestTraceUprobe logs the calls of a Go function in the workload: the
// address is the ELF symbol's, the i-th call returns 2i+1, and --args
// and --stack add the argument registers and the user stack.
func TestTraceUprobe(t *testing.T) {
	testenv.Require(t, testenv.Uprobe)
	const n = 200
	workload := testenv.Workload(t)
	out, _, _ := runKinst(t, "trace", "--args", "--stack", "-f", "json", "-c", fmt.Sprintf("%s call %d", workload, n), "uprobe:"+workload+":main.callee")
	events := parseLog(t, out)
	exits := checkCalls(t, events, n, "main.callee")
	for i, e := range exits {
		if *e.Retval != int64(2*i+1) {
			t.Fatalf("call %d returned %d, want %d", i, *e.Retval, 2*i+1)
		}
	}
	addr := symbolAddr(t, workload, "main.callee")
	for i, e := range events {
		if e.Address != addr {
			t.Fatalf("event %d is at %s, want the symbol's address %s", i, e.Address, addr)
		}
		if e.Event != "entry" {
			continue
		}
		if len(e.Args) != 6 || len(e.Args["arg0"]) < 4 || !strings.HasPrefix(string(e.Args["arg5"]), `"0x`) {
			t.Fatalf("entry %d has arguments %s, want arg0..arg5 in hex", i, e.Args)
		}
		// Stacks are symbolized through /proc/PID/maps when kinst reads
		// them, which may be after the workload has ended: then the
		// innermost frame shows as the function's address.
		if len(e.Stack) < 2 || e.Stack[0] != "main.callee+0" && e.Stack[0] != addr {
			t.Fatalf("entry %d has stack %q, want main.callee+0 (or %s) innermost", i, e.Stack, addr)
		}
	}
}

// symbolAddr reads a function symbol's value from an ELF file.
func symbolAddr(t *testing.T, path, name string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return fmt.Sprintf("0x%x", s.Value)
		}
	}
	t.Fatalf("%s has no symbol %s", path, name)
	return ""
}

// startFIFO makes a named pipe and starts kinst writing its log there.
func startFIFO(t *testing.T, args ...string) (fifo string, cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	fifo = filepath.Join(t.TempDir(), "log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(testenv.Kinst(t), append([]string{"trace", "-o", fifo}, args...)...)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return fifo, cmd, stderr
}

// TestTraceFIFO reads the log from a named pipe as it is written: the
// reader gets every event. (They fit in the ring buffer, so none can be
// lost however slow the machine.)
func TestTraceFIFO(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const n = 5000
	fifo, cmd, stderr := startFIFO(t, "-f", "json", "-c", fmt.Sprintf("%s getppid %d", testenv.Workload(t), n), "syscall:getppid")
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	_, err = log.ReadFrom(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kinst: %v\n%s", err, stderr)
	}
	checkCalls(t, parseLog(t, log.String()), n, "getppid")
	if want := fmt.Sprintf("kinst trace: %d events logged, 0 lost\n", 2*n); stderr.String() != want {
		t.Errorf("stderr is %q, want %q", stderr, want)
	}
}

// TestTraceLost stalls the reader of the log until the workload has
// ended: the ring buffer overflows, and every event is either in the
// log or in the lost count.
func TestTraceLost(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	// Far more records than the 2 MiB ring buffer holds.
	const n = 200_003
	fifo, cmd, stderr := startFIFO(t, "-q", "-c", fmt.Sprintf("%s getppid %d", testenv.Workload(t), n), "syscall:getppid")
	f, err := os.Open(fifo) // kinst's open returns with this one
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The workload starts once the pipe is open; the reader waits until
	// it has ended (a reaped process has no command line to find).
	marker := fmt.Sprintf("getppid\x00%d\x00", n)
	for deadline := time.Now().Add(time.Minute); len(testenv.ProcessesMentioning(marker)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the workload did not start within a minute")
		}
	}
	for deadline := time.Now().Add(5 * time.Minute); len(testenv.ProcessesMentioning(marker)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the workload did not end within five minutes")
		}
	}
	delivered := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " getppid ") {
			delivered++
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kinst: %v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`kinst trace: (\d+) events logged, (\d+) lost\n$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no summary in stderr:\n%s", stderr)
	}
	logged, _ := strconv.Atoi(m[1])
	lost, _ := strconv.Atoi(m[2])
	if logged != delivered || delivered+lost != 2*n || lost == 0 {
		t.Errorf("%d events read, %d logged and %d lost, want all %d read or lost, and some lost", delivered, logged, lost, 2*n)
	}
	// Each loss was reported as it was found, and the reports add up.
	reported := 0
	for _, r := range regexp.MustCompile(`kinst trace: (\d+) events lost: the log's reader fell behind\n`).FindAllStringSubmatch(stderr.String(), -1) {
		k, _ := strconv.Atoi(r[1])
		reported += k
	}
	if reported != lost {
		t.Errorf("losses reported add up to %d, the summary says %d:\n%s", reported, lost, stderr)
	}
}

// TestTraceShow checks the program trace runs, which --show prints.
func TestTraceShow(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	stdout, stderr, code := kinst(t, "trace", "--show", "--pid", "42", "--duration", "2s", "syscall:getppid", "tracepoint:sched:sched_process_*")
	want := `BEGIN {
	printf("TIME               CPU     PID     TID COMM             CALL\n");
}

// syscall:getppid
tracepoint:syscalls:sys_enter_getppid /pid == 42/ {
	$t = nsecs;
	$d = @__depth[tid, 0]++;
	@__start[tid, 0, $d] = $t;
	printf("%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld -> syscall:getppid\n", $t, cpu, pid, tid, comm, $d);
}

tracepoint:syscalls:sys_exit_getppid /pid == 42/ {
	$t = nsecs;
	$d = @__depth[tid, 0] - 1;
	if ($d >= 0) {
		$s = @__start[tid, 0, $d];
		delete(@__start[tid, 0, $d]);
		if ($d == 0) {
			delete(@__depth[tid, 0]);
		} else {
			@__depth[tid, 0] = $d;
		}
		printf("%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld <- syscall:getppid ret=%lld duration=%llu\n", $t, cpu, pid, tid, comm, $d, args.ret, $t - $s);
	}
}

// tracepoint:sched:sched_process_*
tracepoint:sched:sched_process_* /pid == 42/ {
	$t = nsecs;
	$d = 0;
	printf("%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld -- %s\n", $t, cpu, pid, tid, comm, $d, probe);
}

// A thread that ends inside calls never returns from them.
tracepoint:sched:sched_process_exit {
	$d = @__depth[tid, 0];
	$i = 0;
	while ($d > 0 && $i < 64) {
		$d = $d - 1;
		$i = $i + 1;
		delete(@__start[tid, 0, $d]);
	}
	delete(@__depth[tid, 0]);
}

interval:ms:2000 { exit(); }
`
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	// What --show prints runs as it is.
	prog := filepath.Join(t.TempDir(), "trace.bt")
	if err := os.WriteFile(prog, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := kinst(t, "--dry-run", prog); code != 0 {
		t.Errorf("kinst --dry-run of the shown program: exit %d\n%s", code, stderr)
	}
}

// TestTraceErrors checks that bad command lines and bad targets fail in
// one sentence, before anything is attached.
func TestTraceErrors(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	workload := testenv.Workload(t)
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"trace"}, 2, "kinst trace: name at least one function to trace\n"},
		{[]string{"trace", "bogus:x"}, 2, `kinst trace: bad target: "bogus:x": use a kernel function, kprobe:, fentry:, uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME` + "\n"},
		{[]string{"trace", "-f", "xml", "syscall:getppid"}, 2, "kinst trace: unknown output format \"xml\": use text, json or perfetto\n"},
		{[]string{"trace", "--args", "tracepoint:syscalls:sys_enter_getppi*"}, 2,
			"kinst trace: --args needs one function per target, and tracepoint:syscalls:sys_enter_getppi* matches 1: name them one by one\n"},
		{[]string{"trace", "syscall:nosuch"}, 1,
			"kinst: trace syscall:nosuch: no matches for tracepoint syscalls:sys_enter_nosuch; kinst -l 'tracepoint:syscalls:*' lists the syscalls tracepoints\n"},
		{[]string{"trace", "uprobe:" + workload + ":main.nosuch"}, 1,
			"kinst: trace uprobe:" + workload + ":main.nosuch: no matches for uprobe " + workload + ":main.nosuch: no such function\n"},
		{[]string{"trace", `syscall:getppid { system("true") }`}, 1,
			"kinst: trace syscall:getppid { system(\"true\") }: \"tracepoint:syscalls:sys_enter_getppid { system(\\\"true\\\") }\" is not a probe kinst can read\n"},
		// A probe logs each event once: a tracepoint probed as a system
		// call's exit is not probed again.
		{[]string{"trace", "syscall:getppid", "tracepoint:syscalls:sys_exit_getppid"}, 2,
			"kinst trace: syscall:getppid and tracepoint:syscalls:sys_exit_getppid both probe tracepoint:syscalls:sys_exit_getppid: name one of them\n"},
		{[]string{"trace", "tracepoint:syscalls:sys_exit_getppid", "syscall:getppid"}, 2,
			"kinst trace: tracepoint:syscalls:sys_exit_getppid and syscall:getppid both probe tracepoint:syscalls:sys_exit_getppid: name one of them\n"},
		{[]string{"count", "syscall:nosuch"}, 1,
			"kinst: count syscall:nosuch: no matches for tracepoint syscalls:sys_enter_nosuch; kinst -l 'tracepoint:syscalls:*' lists the syscalls tracepoints\n"},
		{[]string{"count", "--top", "-1", "syscall:getppid"}, 2, "kinst count: --top -1: give a positive number of rows\n"},
	}
	for _, tt := range tests {
		stdout, stderr, code := kinst(t, tt.args...)
		if code != tt.code || stderr != tt.stderr || stdout != "" {
			t.Errorf("kinst %q: exit %d, stdout %q, stderr:\n%s\nwant exit %d and:\n%s", tt.args, code, stdout, stderr, tt.code, tt.stderr)
		}
	}
}

// TestTraceKernelFunctionErrors: a kernel function that does not exist
// is refused with the reason, whichever mechanism the kernel has.
func TestTraceKernelFunctionErrors(t *testing.T) {
	testenv.Root(t)
	want := "kinst: trace no_such_function_kinst: kernel function no_such_function_kinst does not exist or cannot be traced; kinst -l 'kprobe:no_such_function_kinst*' lists similar ones\n"
	if !kernel.Available(kernel.FeatKprobe) {
		want = "kinst: trace no_such_function_kinst: " + kernel.Probe(kernel.FeatKprobe).Reason + "\n"
	}
	stdout, stderr, code := kinst(t, "trace", "no_such_function_kinst")
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and:\n%s", code, stdout, stderr, want)
	}
}

// TestTraceThreadsEnd traces the exit system call, which never returns,
// in more threads than the maps hold: the calls a thread was inside are
// forgotten when it ends, so calls made afterwards are still logged
// with their returns.
func TestTraceThreadsEnd(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	const threads = 5000 // more than the maps' 4096 elements
	file := filepath.Join(t.TempDir(), "log")
	// Five programs: the entries and exits of both, and the cleanup.
	_, _, stop := startAttached(t, 5, "trace", "-f", "json", "-o", file, "--comm", workloadComm(t), "syscall:exit", "syscall:getppid")
	// Other tests may run the workload at the same time: only the calls
	// of these two processes count.
	pids := map[int]bool{}
	for _, args := range [][]string{{"threads", strconv.Itoa(threads)}, {"getppid", "3"}} {
		var out bytes.Buffer
		cmd := exec.Command(testenv.Workload(t), args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			stop()
			t.Fatalf("workload %q: %v\n%s", args, err, out.String())
		}
		pids[cmd.Process.Pid] = true
	}
	stop()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var exits, getppid []traceEvent
	for _, e := range parseLog(t, string(data)) {
		if !pids[e.Pid] {
			continue
		}
		switch e.Function {
		case "exit":
			exits = append(exits, e)
		case "getppid":
			getppid = append(getppid, e)
		}
	}
	if len(exits) != threads {
		t.Errorf("%d calls of exit logged, want %d", len(exits), threads)
	}
	checkCalls(t, getppid, 3, "getppid")
}

// writeCalls runs trace in a guest kernel on vfs_write while the
// workload writes n times size bytes, and returns the workload's
// events.
func writeCalls(t *testing.T, n, size int, args ...string) []traceEvent {
	t.Helper()
	cmd := fmt.Sprintf("%s write %d %d", testenv.Workload(t), n, size)
	out, _, _ := runKinst(t, append([]string{"trace", "-f", "json", "-c", cmd}, args...)...)
	return parseLog(t, out)
}

// TestTraceKernelFunction logs vfs_write through the mechanism kinst
// picks (fentry and fexit where the kernel has them): N calls, each
// returning the bytes written, with typed arguments.
func TestTraceKernelFunction(t *testing.T) {
	testenv.Require(t, testenv.Kprobe, testenv.Kretprobe)
	const n, size = 300, 7
	events := writeCalls(t, n, size, "--args", "vfs_write")
	exits := checkCalls(t, events, n, "vfs_write")
	addr := kallsymsAddr(t, "vfs_write")
	for i, e := range events {
		if e.Address != addr || e.Symbol != "" {
			t.Fatalf("event %d is at %s (%q), want vfs_write at %s", i, e.Address, e.Symbol, addr)
		}
		if e.Event == "entry" && (string(e.Args["count"]) != strconv.Itoa(size) || !strings.HasPrefix(string(e.Args["file"]), `"0x`)) {
			t.Fatalf("entry %d has arguments %s, want count=%d and file as a pointer", i, e.Args, size)
		}
	}
	for i, e := range exits {
		if *e.Retval != size {
			t.Fatalf("write %d returned %d, want %d", i, *e.Retval, size)
		}
	}
}

// TestTraceNested traces a pattern that matches the system call's
// function and the two it calls in turn: the calls nest, the thread
// keeps its depth, and each exit pairs with its own entry.
func TestTraceNested(t *testing.T) {
	testenv.Require(t, testenv.Kprobe, testenv.Kretprobe)
	const n = 50
	events := writeCalls(t, n, 3, "kprobe:*s_write")
	want := []struct {
		event, function string
		depth, entry    int // entry: how many events back the exit's entry is
	}{
		{"entry", "__x64_sys_write", 0, 0}, {"entry", "ksys_write", 1, 0}, {"entry", "vfs_write", 2, 0},
		{"exit", "vfs_write", 2, 1}, {"exit", "ksys_write", 1, 3}, {"exit", "__x64_sys_write", 0, 5},
	}
	if len(events) != len(want)*n {
		t.Fatalf("%d events, want %d", len(events), len(want)*n)
	}
	for i, e := range events {
		w := want[i%len(want)]
		if e.Event != w.event || e.Function != w.function || e.Depth != w.depth {
			t.Fatalf("event %d is %s %s at depth %d, want %s %s at depth %d", i, e.Event, e.Function, e.Depth, w.event, w.function, w.depth)
		}
		if e.Event == "exit" {
			entry := events[i-w.entry]
			if *e.Duration != e.Nsecs-entry.Nsecs || *e.Retval != 3 {
				t.Fatalf("exit %d: duration %d, returned %d, want %d since its entry and 3", i, *e.Duration, *e.Retval, e.Nsecs-entry.Nsecs)
			}
		}
	}
}
