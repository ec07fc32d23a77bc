package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// tracefs returns the tracing file system's directory, skipping t where
// it is not mounted.
func tracefs(t *testing.T) string {
	t.Helper()
	testenv.Root(t)
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(dir, "available_events")); err == nil {
			return dir
		}
	}
	t.Skip("tracefs is not mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing")
	return ""
}

// lines splits output into its lines, failing t if it does not end in a
// newline.
func lines(t *testing.T, out string) []string {
	t.Helper()
	if out == "" {
		return nil
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end in a newline: %q", out[max(0, len(out)-80):])
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// kinst -l lists every tracepoint the tracefs offers (available_events;
// the ftrace category's internal events are not attachable), sorted.
func TestListTracepoints(t *testing.T) {
	t.Parallel()
	dir := tracefs(t)
	f, err := os.Open(filepath.Join(dir, "available_events"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, "tracepoint:"+sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	r := kinst(t, "-l", "tracepoint:*")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("kinst -l: exit status %d, stderr:\n%s", r.code, r.stderr)
	}
	got := lines(t, r.stdout)
	if !slices.Equal(got, want) {
		for _, s := range want {
			if _, found := slices.BinarySearch(got, s); !found {
				t.Errorf("kinst -l does not list %s", s)
			}
		}
		for _, s := range got {
			if _, found := slices.BinarySearch(want, s); !found {
				t.Errorf("kinst -l lists %s, which available_events does not", s)
			}
		}
		t.Fatalf("kinst -l lists %d tracepoints, available_events %d", len(got), len(want))
	}
	// Without a pattern, the tracepoints are among everything listed.
	r = kinst(t, "-l")
	all := lines(t, r.stdout)
	var tps []string
	for _, s := range all {
		if strings.HasPrefix(s, "tracepoint:") {
			tps = append(tps, s)
		}
	}
	if r.code != 0 || !slices.Equal(tps, want) {
		t.Errorf("kinst -l: exit status %d, %d tracepoints among %d lines, want %d", r.code, len(tps), len(all), len(want))
	}
}

// A pattern lists exactly the matching directories of events/.
func TestListPattern(t *testing.T) {
	t.Parallel()
	dir := tracefs(t)
	for _, pattern := range []string{"sched:sched_process_*", "syscalls:sys_enter_open*", "raw_syscalls:*"} {
		category, name, _ := strings.Cut(pattern, ":")
		formats, err := filepath.Glob(filepath.Join(dir, "events", category, name, "format"))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, f := range formats {
			event := filepath.Dir(f)
			want = append(want, "tracepoint:"+category+":"+filepath.Base(event))
		}
		if len(want) == 0 {
			t.Errorf("no events match %s in %s: choose another pattern", pattern, dir)
			continue
		}
		r := kinst(t, "-l", "tracepoint:"+pattern)
		if got := lines(t, r.stdout); r.code != 0 || r.stderr != "" || !slices.Equal(got, want) {
			t.Errorf("kinst -l tracepoint:%s: exit status %d, stderr %q\n got %q\nwant %q", pattern, r.code, r.stderr, got, want)
		}
	}
}

// kinst -lv shows a tracepoint's fields as its format file declares them,
// without the common_ fields every event has.
func TestListVerbose(t *testing.T) {
	t.Parallel()
	dir := tracefs(t)
	for _, tp := range []string{"syscalls:sys_enter_openat", "sched:sched_switch", "sched:sched_process_exec"} {
		category, name, _ := strings.Cut(tp, ":")
		want := []string{"tracepoint:" + tp}
		format, err := os.ReadFile(filepath.Join(dir, "events", category, name, "format"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(format), "\n") {
			decl, ok := strings.CutPrefix(strings.TrimSpace(line), "field:")
			if !ok {
				continue
			}
			decl, _, _ = strings.Cut(decl, ";")
			if fields := strings.Fields(decl); strings.HasPrefix(strings.TrimRight(fields[len(fields)-1], "[]0123456789"), "common_") {
				continue
			}
			want = append(want, "    "+decl)
		}
		if len(want) < 3 {
			t.Fatalf("%s declares %d fields of its own; the test expects some", tp, len(want)-1)
		}
		for _, flags := range [][]string{{"-lv"}, {"-l", "-v"}} {
			r := kinst(t, append(flags, "tracepoint:"+tp)...)
			if got := lines(t, r.stdout); r.code != 0 || r.stderr != "" || !slices.Equal(got, want) {
				t.Errorf("kinst %s tracepoint:%s: exit status %d, stderr %q\n got %q\nwant %q", strings.Join(flags, " "), tp, r.code, r.stderr, got, want)
			}
		}
	}
}

// kinst features says whether this kernel offers kprobes, and if not why,
// in agreement with the kernel's configuration.
func TestFeatures(t *testing.T) {
	t.Parallel()
	testenv.Root(t)
	cfg, err := kernel.LoadConfig()
	if err != nil {
		t.Skipf("no kernel configuration to judge kprobes by: %v", err)
	}
	kprobes := !cfg.Disabled("CONFIG_KPROBES")

	r := kinst(t, "features")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("kinst features: exit status %d, stderr:\n%s", r.code, r.stderr)
	}
	rows := map[string][]string{}
	for _, line := range lines(t, r.stdout) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("kinst features line %q has no state", line)
		}
		rows[fields[0]] = fields[1:]
	}
	row := strings.Join(rows["kprobe"], " ")
	want := "yes"
	if !kprobes {
		want = "no kprobes are not available: this kernel was built without CONFIG_KPROBES"
	}
	if row != want {
		t.Errorf("kinst features: kprobe %q, want %q (%s)", row, want, cfg.Source)
	}
	for _, name := range []string{"tracepoint", "ringbuf"} {
		if got := strings.Join(rows[name], " "); got != "yes" {
			t.Errorf("kinst features: %s %q, want yes: every kinst run needs it", name, got)
		}
	}

	r = kinst(t, "features", "-f", "json")
	var statuses []struct {
		Name      string `json:"name"`
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &statuses); r.code != 0 || err != nil {
		t.Fatalf("kinst features -f json: exit status %d, %v\n%s", r.code, err, r.stdout)
	}
	if len(statuses) != len(rows) {
		t.Errorf("kinst features -f json has %d features, the text %d", len(statuses), len(rows))
	}
	for _, st := range statuses {
		if st.Name != "kprobe" {
			continue
		}
		if st.Available != kprobes || (!kprobes && st.Reason != "kprobes are not available: this kernel was built without CONFIG_KPROBES") {
			t.Errorf("kinst features -f json: kprobe %+v, want available %v", st, kprobes)
		}
		return
	}
	t.Error("kinst features -f json has no kprobe feature")
}

// Software and hardware events and their aliases are listed by name,
// short provider names and patterns over the provider included, whatever
// the machine counts.
func TestListPerfEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		want    []string
	}{
		// An alias is listed after its event, as an event of its own.
		{"s:*faults", []string{"software:alignment-faults:", "software:emulation-faults:", "software:major-faults:", "software:minor-faults:", "software:page-faults:", "software:faults:"}},
		{"software:cs", []string{"software:cs:"}},
		{"software:cpu*", []string{"software:cpu-clock:", "software:cpu:", "software:cpu-migrations:"}},
		{"*ware:*cycles", []string{"hardware:bus-cycles:", "hardware:cpu-cycles:", "hardware:cycles:", "hardware:ref-cycles:"}},
		// Without a provider, events are among everything listed (no
		// kernel function or tracepoint has a '-' in its name).
		{"*-faults", []string{"software:alignment-faults:", "software:emulation-faults:", "software:major-faults:", "software:minor-faults:", "software:page-faults:"}},
		{"*-stalls", []string{"hardware:backend-stalls:", "hardware:frontend-stalls:"}},
		// A pattern over every provider leaves out those that need a file.
		{"*:*-stalls", []string{"hardware:backend-stalls:", "hardware:frontend-stalls:"}},
	}
	for _, tt := range tests {
		r := kinst(t, "-l", tt.pattern)
		if got := lines(t, r.stdout); r.code != 0 || r.stderr != "" || !slices.Equal(got, tt.want) {
			t.Errorf("kinst -l %s: exit status %d, stderr %q\n got %q\nwant %q", tt.pattern, r.code, r.stderr, got, tt.want)
		}
	}
}

// Kernel types are listed by C name from BTF, as bpftrace lists them, and
// -lv prints a definition.
func TestListTypes(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.BTF)
	r := kinst(t, "-lv", "struct path")
	want := "struct path {\n\tstruct vfsmount *mnt;\n\tstruct dentry *dentry;\n};\n\n"
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("kinst -lv 'struct path': exit status %d, stderr %q\n got %q\nwant %q", r.code, r.stderr, r.stdout, want)
	}
	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Skip("no bpftrace to compare the list of structs with")
	}
	out, err := exec.Command(bpftrace, "-l", "struct *").Output()
	if err != nil {
		t.Fatalf("bpftrace -l 'struct *': %v", err)
	}
	r = kinst(t, "-l", "struct *")
	if got, want := lines(t, r.stdout), lines(t, string(out)); r.code != 0 || !slices.Equal(got, want) {
		t.Errorf("kinst -l 'struct *': exit status %d, %d structs; bpftrace lists %d", r.code, len(got), len(want))
	}
}

// Iterators are listed from the kernel's BTF, by pattern, with the short
// provider name, and among everything a pattern without a provider
// matches; -lv shows the target's arguments.
func TestListIterators(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.BTF)
	tests := []struct {
		flag, pattern string
		want          []string
	}{
		{"-l", "iter:task*", []string{"iter:task", "iter:task_file", "iter:task_vma"}},
		{"-l", "it:task_f*", []string{"iter:task_file"}},
		{"-l", "*:task_vma", []string{"iter:task_vma"}},
		{"-lv", "iter:task", []string{"iter:task", "    struct bpf_iter_meta * meta", "    struct task_struct * task"}},
	}
	for _, tt := range tests {
		r := kinst(t, tt.flag, tt.pattern)
		if got := lines(t, r.stdout); r.code != 0 || r.stderr != "" || !slices.Equal(got, tt.want) {
			t.Errorf("kinst %s %s: exit status %d, stderr %q\n got %q\nwant %q", tt.flag, tt.pattern, r.code, r.stderr, got, tt.want)
		}
	}
}

// kinst -l with a program, given with -e or as a file, lists the probes
// the program would attach to, each once, without BEGIN, END and self
// probes, and timers without their rates; -lv adds their arguments; a
// bad program is a located error.
func TestListProgram(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	dir := tracefs(t)
	formats, err := filepath.Glob(filepath.Join(dir, "events", "syscalls", "sys_enter_open*", "format"))
	if err != nil || len(formats) == 0 {
		t.Fatalf("no syscalls:sys_enter_open* events in %s: %v", dir, err)
	}
	var opens strings.Builder
	for _, f := range formats {
		fmt.Fprintf(&opens, "tracepoint:syscalls:%s\n", filepath.Base(filepath.Dir(f)))
	}
	bin := target(t)
	prog := fmt.Sprintf("BEGIN { } tracepoint:syscalls:sys_enter_open* { exit(); } interval:s:1, tracepoint:syscalls:sys_enter_openat { } interval:s:2 { } uretprobe:%s:kinst_a* { } end { } self:signal:SIGUSR1 { }", bin)
	want := opens.String() + "interval:s:\n" + "uretprobe:" + bin + ":kinst_add\n"
	kinst(t, "-l", "-e", prog).want(t, 0, want, "")
	file := filepath.Join(t.TempDir(), "p.bt")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	kinst(t, "-l", file).want(t, 0, want, "")

	// With a process, a wildcard file is the files it maps.
	sleeper := exec.Command(bin, "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	for exe, start := "", time.Now(); exe != bin; exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", sleeper.Process.Pid)) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("process %d runs %q, not %s", sleeper.Process.Pid, exe, bin)
		}
		time.Sleep(time.Millisecond)
	}
	kinst(t, "-l", "-e", "uretprobe:*:kinst_a* { exit(); }", "--pid", strconv.Itoa(sleeper.Process.Pid)).want(t, 0, "uretprobe:"+bin+":kinst_add\n", "")

	verbose := kinst(t, "-lv", "-e", "tracepoint:syscalls:sys_enter_openat { }")
	if verbose.code != 0 || !strings.HasPrefix(verbose.stdout, "tracepoint:syscalls:sys_enter_openat\n    int __syscall_nr\n    int dfd\n    const char * filename\n") {
		t.Errorf("kinst -lv -e: exit status %d\nstdout:\n%s\nstderr:\n%s", verbose.code, verbose.stdout, verbose.stderr)
	}
	kinst(t, "-l", "-e", "tracepoint:nope:x { }").want(t, 1, "",
		"-e:1:1: no matches for tracepoint nope:x; kinst -l 'tracepoint:nope:*' lists the nope tracepoints\ntracepoint:nope:x { }\n^~~~~~~~~~~~~~~~~\n")
}

// Timers list their units; perf events are listed by name whatever count
// follows; several patterns separated by commas are listed in turn;
func TestListForms(t *testing.T) {
	t.Parallel()
	kinst(t, "-l", "profile:*").want(t, 0, "profile:hz:\nprofile:ms:\nprofile:s:\nprofile:us:\n", "")
	kinst(t, "-l", "i:*s").want(t, 0, "interval:ms:\ninterval:s:\ninterval:us:\n", "")
	kinst(t, "-l", "software:cpu-clock:1000").want(t, 0, "software:cpu-clock:\n", "")
	kinst(t, "-l", "profile:hz, software:cpu-clock").want(t, 0, "profile:hz:\nsoftware:cpu-clock:\n", "")
}

// A raw tracepoint's args are its arguments, typed and named from BTF,
// which -lv lists.
func TestRawTracepointArgs(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.BTF, testenv.Ringbuf)
	kinst(t, "-lv", "rawtracepoint:sched_switch").want(t, 0,
		"rawtracepoint:sched_switch\n    bool preempt\n    struct task_struct * prev\n    struct task_struct * next\n    unsigned int prev_state\n", "")
	// sys_enter passes the registers and the syscall's number: getppid
	// is 110 on x86-64.
	prog := `rawtracepoint:sys_enter /pid == cpid && args.id == 110/ { @calls = count(); @regs = args.regs != 0; }`
	kinst(t, "-e", prog, "-c", workload(t)+" getppid 7").want(t, 0, "Attaching 1 probe...\n\n\n@calls: 7\n@regs: 1\n", "")
	kinst(t, "-e", `rawtracepoint:sys_enter { @ = args.nope; }`).want(t, 1, "",
		"-e:1:31: struct sys_enter_args has no field nope\nrawtracepoint:sys_enter { @ = args.nope; }\n                              ^~~~~~~~~\n")
	// The syscalls events of tracefs are no raw tracepoints: a wildcard
	// finds raw_syscalls's two, and attaches them.
	kinst(t, "-l", "rawtracepoint:sys_*").want(t, 0, "rawtracepoint:sys_enter\nrawtracepoint:sys_exit\n", "")
	// A module named is vmlinux, or matches it: kinst finds raw
	// tracepoints in vmlinux's BTF only.
	kinst(t, "--dry-run", "-e", "rawtracepoint:vmlinux:sys_exit, rawtracepoint:*:sys_enter { }").want(t, 0, "", "")
	kinst(t, "-e", "rawtracepoint:nonsense:sys_exit { }").want(t, 1, "",
		"-e:1:1: no matches for rawtracepoint nonsense:sys_exit: kinst attaches the raw tracepoints of vmlinux only; kinst -l 'rawtracepoint:*' lists them\nrawtracepoint:nonsense:sys_exit { }\n^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n")
	r := kinst(t, "-e", "rawtracepoint:sys_* /pid == cpid/ { @[probe] = count(); }", "-c", workload(t)+" getppid 1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Attaching 2 probes...\n") || !strings.Contains(r.stdout, "\n@[rawtracepoint:sys_enter]: ") || !strings.Contains(r.stdout, "\n@[rawtracepoint:sys_exit]: ") {
		t.Errorf("rawtracepoint:sys_*: exit status %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestListModules: bpftrace 0.26.1 names the module of fentry, fexit and
// raw tracepoint probes, vmlinux for the kernel's own, and lists fentry
// probes with the others when no provider is given; 0.17 named only
// other modules, and a pattern may name vmlinux in both.
func TestListModules(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.BTF)
	now := []string{"KINST_COMPAT="}
	kinstEnv(t, now, "-l", "fentry:vfs_read").want(t, 0, "fentry:vmlinux:vfs_read\n", "")
	kinstEnv(t, now, "-l", "fexit:vmlinux:vfs_read").want(t, 0, "fexit:vmlinux:vfs_read\n", "")
	kinstEnv(t, now, "-l", "rawtracepoint:sched_switch").want(t, 0, "rawtracepoint:vmlinux:sched_switch\n", "")
	kinstEnv(t, now, "-l", "rawtracepoint:vmlinux:sched_switch").want(t, 0, "rawtracepoint:vmlinux:sched_switch\n", "")
	kinstEnv(t, now, "-l", "rawtracepoint:nosuchmodule:sched_switch").want(t, 0, "", "")
	kinst(t, "-l", "fentry:vmlinux:vfs_read").want(t, 0, "fentry:vfs_read\n", "")
	kinst(t, "-l", "rawtracepoint:vmlinux:sched_switch").want(t, 0, "rawtracepoint:sched_switch\n", "")
	// A program's probes are listed so too.
	const prog = `rawtracepoint:sched_switch, tracepoint:sched:sched_switch { exit(); }`
	kinstEnv(t, now, "-l", "-e", prog).want(t, 0, "rawtracepoint:vmlinux:sched_switch\ntracepoint:sched:sched_switch\n", "")
	kinst(t, "-l", "-e", prog).want(t, 0, "rawtracepoint:sched_switch\ntracepoint:sched:sched_switch\n", "")
	for _, tc := range []struct {
		env  []string
		want bool
	}{{now, true}, {nil, false}} {
		r := kinstEnv(t, tc.env, "-l")
		if got := strings.Contains(r.stdout, "\nfentry:vmlinux:vfs_read\n"); r.code != 0 || got != tc.want {
			t.Errorf("kinst -l with %q: exit status %d, lists fentry:vmlinux:vfs_read: %v, want %v", tc.env, r.code, got, tc.want)
		}
	}
}

// TestListFileLikePattern: -l with what looks like a file name that no
// file has warns that it is taken as a pattern, as bpftrace 0.26.1 warns.
func TestListFileLikePattern(t *testing.T) {
	t.Parallel()
	kinstEnv(t, []string{"KINST_COMPAT="}, "-l", "no_such_file.bt").want(t, 0, "",
		"kinst: warning: no_such_file.bt looks like a file name, but there is no such file: it is taken as a search pattern\n")
	kinstEnv(t, []string{"KINST_COMPAT="}, "--no-warnings", "-l", "no_such_file.bt").want(t, 0, "", "")
	kinstEnv(t, []string{"KINST_COMPAT="}, "-l", "tracepoint:no_such.*").want(t, 0, "", "")
	kinst(t, "-l", "no_such_file.bt").want(t, 0, "", "")
}
