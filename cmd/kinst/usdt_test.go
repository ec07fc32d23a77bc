package main

import (
	"bytes"
	"debug/elf"
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
	"kinst.dev/kinst/usdt"
)

// usdtArgsProgram prints every argument of the target's USDT probes.
// Tests run in parallel, and the probes fire in every process running
// the target: each keeps to its own -c command.
const usdtArgsProgram = `
usdt:BIN:kinst:tick /pid == cpid/ { printf("%s %d %d %d\n", probe, arg0, arg1, arg2) }
usdt:BIN:kinst:small /pid == cpid/ { printf("%s %d %d %d\n", probe, arg0, arg1, arg2) }
usdt:BIN:kinst:mem /pid == cpid/ { printf("%s %d %d\n", probe, arg0, arg1) }
usdt:BIN:kinst:twice /pid == cpid/ { printf("%s %d\n", probe, arg0) }
usdt:BIN:gated /pid == cpid/ { printf("%s %d\n", probe, arg0) }`

// The target's USDT probes pass arguments in registers and their low
// parts (-8@%rdx, -1@%sil, 2@%di), as constants (-4@$-7), in stack
// memory (-8@16(%rsp)) and in a global (-8@kinst_total(%rip)); each
// reads back what the program passed, sign-extended as its size says.
// kinst:twice has two sites whose argument is in different registers,
// and kinst:gated fires only while its semaphore is raised, which the
// kernel does for the attached uprobe.
func TestUSDTArgs(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := strings.ReplaceAll(usdtArgsProgram, "BIN", bin)
	want := strings.NewReplacer("BIN", bin).Replace(
		"usdt:BIN:kinst:tick 1 -1 1\n" +
			"usdt:BIN:kinst:small -1 60001 -7\n" +
			"usdt:BIN:kinst:mem 3 -1\n" +
			"usdt:BIN:kinst:twice 1\n" +
			"usdt:BIN:kinst:twice -2\n" +
			"usdt:BIN:kinst:gated 1\n" +
			"usdt:BIN:kinst:tick 2 -2 3\n" +
			"usdt:BIN:kinst:small -2 60002 -7\n" +
			"usdt:BIN:kinst:mem 6 -2\n" +
			"usdt:BIN:kinst:twice 2\n" +
			"usdt:BIN:kinst:twice -4\n" +
			"usdt:BIN:kinst:gated 2\n\n\n")
	kinst(t, "-e", prog, "-c", bin+" usdt 2").want(t, 0, "Attaching 6 probes...\n"+want, "")
}

// bpftrace 0.17 prints the same, but for arguments in globals, which it
// does not decode ("deref ident is not handled yet"): those are left
// out of the comparison.
func TestUSDTArgsAsBpftrace(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Skip("bpftrace is not installed")
	}
	bin := target(t)
	prog := strings.ReplaceAll(strings.Replace(usdtArgsProgram, `%d %d %d\n", probe, arg0, arg1, arg2) }`, `%d %d\n", probe, arg0, arg1) }`, 1), "BIN", bin)
	args := []string{"-e", prog, "-c", bin + " usdt 3"}
	out, err := exec.Command(bpftrace, args...).Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	r := kinst(t, args...)
	if r.code != 0 || r.stdout != string(out) {
		t.Errorf("kinst exit status %d, stdout:\n%s\nbpftrace's:\n%s\nkinst's stderr:\n%s", r.code, r.stdout, out, r.stderr)
	}
}

// Wildcards in the provider and name parts reach every site: 1000
// rounds fire kinst:twice 2000 times and the others 1000 times each. As
// in bpftrace, each site counts as one probe attached.
func TestUSDTWildcardCounts(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := strings.ReplaceAll(`
usdt:BIN:kin*:* /pid == cpid/ { @[probe] = count(); }
usdt:BIN:kinst:t* /pid == cpid/ { @sum[probe] = sum((int64)arg0); }
usdt:BIN:*:mem /pid == cpid/ { @lo = min((int64)arg1); @hi = max(arg0); }`, "BIN", bin)
	want := strings.ReplaceAll("Attaching 10 probes...\n\n\n"+
		"@[usdt:BIN:kinst:gated]: 1000\n"+
		"@[usdt:BIN:kinst:mem]: 1000\n"+
		"@[usdt:BIN:kinst:small]: 1000\n"+
		"@[usdt:BIN:kinst:tick]: 1000\n"+
		"@[usdt:BIN:kinst:twice]: 2000\n"+
		"@hi: 3000\n"+
		"@lo: -1000\n"+
		"@sum[usdt:BIN:kinst:twice]: -500500\n"+
		"@sum[usdt:BIN:kinst:tick]: 500500\n", "BIN", bin)
	kinst(t, "-e", prog, "-c", bin+" usdt 1000").want(t, 0, want, "")
}

// A probe of a library Debian ships: libstdc++ marks every throw and
// catch with USDT probes, which a program throwing 100 exceptions fires
// 100 times each; other processes throwing meanwhile are filtered out.
// The library is named as uprobes name it.
func TestUSDTLibstdcxx(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ is not installed")
	}
	bin := filepath.Join(t.TempDir(), "throw")
	if out, err := exec.Command(gxx, "-O1", "-o", bin, "testdata/throw.cc").CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	r := kinst(t, "-l", "usdt:libstdc++:libstdcxx:*")
	if !strings.Contains(r.stdout, ":libstdcxx:throw\n") {
		t.Skipf("this libstdc++ has no USDT probes: kinst -l lists\n%s%s", r.stdout, r.stderr)
	}
	prog := `usdt:libstdc++:libstdcxx:throw /pid == cpid/ { @throws = count(); } usdt:libstdc++:catch /pid == cpid/ { @catches = count(); }`
	kinst(t, "-e", prog, "-c", bin+" 100").want(t, 0,
		"Attaching 2 probes...\n\n\n@catches: 100\n@throws: 100\n", "")
}

// python returns Debian's python3 binary when it has USDT probes.
func python(t *testing.T) string {
	t.Helper()
	p, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".note.stapsdt") == nil {
		t.Skipf("%s has no USDT probes", p)
	}
	return p
}

// Python's probes are gated by semaphores: python:audit fires only
// while kinst has the kernel raise its semaphore, once for each
// sys.audit() call, with the event's name as arg0. Python 3.11 does not
// fire function__entry for the calls its interpreter inlines, so audit
// events are what a script controls exactly.
func TestUSDTPythonSemaphore(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	py := python(t)
	script := filepath.Join(t.TempDir(), "audit.py")
	src := "import sys\nfor i in range(250):\n    sys.audit('kinst.event', i)\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := fmt.Sprintf(`usdt:%s:python:audit /pid == cpid && str(arg0) == "kinst.event"/ { @events = count(); }`, py)
	kinst(t, "-e", prog, "-c", py+" "+script).want(t, 0, "Attaching 1 probe...\n\n\n@events: 250\n", "")
}

// With -p, usdt:NAME searches every file the process maps, named
// through /proc/PID/root as bpftrace names them.
func TestUSDTPid(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	py := python(t)
	proc := exec.Command(py, "-c", "import sys, time\nwhile True:\n    sys.audit('kinst.pid')\n    time.sleep(0.05)\n")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	pid := proc.Process.Pid
	prog := `usdt:audit /str(arg0) == "kinst.pid" && @seen == 0/ { @seen = 1; printf("%s %s\n", probe, str(arg0)); exit(); }`
	kinst(t, "-p", strconv.Itoa(pid), "-e", prog).want(t, 0,
		fmt.Sprintf("Attaching 1 probe...\nusdt:/proc/%d/root%s:python:audit kinst.pid\n\n\n@seen: 1\n", pid, py), "")
}

// kinst -l lists a file's USDT probes once each, sorted, and -lp those
// of every file a process maps; without a provider, -lp also lists the
// functions of the process's executable.
func TestUSDTList(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := target(t)
	listing := usdtListing
	kinst(t, "-l", "usdt:"+bin+":*").want(t, 0, listing(bin), "")
	kinst(t, "-l", "usdt:"+bin).want(t, 0, listing(bin), "")
	kinst(t, "-l", "U:"+bin+":kinst:t*").want(t, 0, fmt.Sprintf("usdt:%s:kinst:tick\nusdt:%[1]s:kinst:twice\n", bin), "")
	kinst(t, "-lv", "usdt:"+bin+":kinst:small").want(t, 0, fmt.Sprintf("usdt:%s:kinst:small\n    arg0: -1@%%sil\n    arg1: 2@%%di\n    arg2: -4@$-7\n", bin), "")

	pid := startSleeping(t, bin)
	seen := "/proc/" + pid + "/root" + bin
	kinst(t, "-lp", pid, "usdt:*").want(t, 0, listing(seen), "")
	// bpftrace 0.17 lists the same.
	if bpftrace, err := exec.LookPath("bpftrace"); err == nil {
		for _, args := range [][]string{{"-l", "usdt:" + bin + ":*"}, {"-lp", pid, "usdt:*"}} {
			out, err := exec.Command(bpftrace, args...).Output()
			if r := kinst(t, args...); err != nil || r.stdout != string(out) {
				t.Errorf("kinst %q lists\n%s\nbpftrace (%v):\n%s", args, r.stdout, err, out)
			}
		}
	}
	r := kinst(t, "-lp", pid)
	if r.code != 0 || !strings.Contains(r.stdout, "uprobe:"+seen+":kinst_add\n") || !strings.HasSuffix(r.stdout, listing(seen)) {
		t.Errorf("kinst -lp %s: exit status %d, stdout:\n%s\nstderr:\n%s", pid, r.code, r.stdout, r.stderr)
	}
}

// usdtListing is what kinst -l lists of the target's USDT probes, the
// target named path.
func usdtListing(path string) string {
	var b strings.Builder
	for _, n := range []string{"kinst:gated", "kinst:mem", "kinst:small", "kinst:tick", "kinst:twice", "other:tick"} {
		fmt.Fprintf(&b, "usdt:%s:%s\n", path, n)
	}
	return b.String()
}

// Attach-point forms bpftrace reads, listed from the target's directory:
// a wildcard path, which names the file as glob(3) does
// ("./kinst-target", not "kinst-target"); an empty provider, which is
// any provider; quoted parts; '*' as the probe type, which before a path
// stands for uprobe and usdt (not uretprobe); and, with -p, a name alone
// or after empty path and provider. bpftrace 0.17 lists the same.
func TestUSDTListForms(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := target(t)
	dir, rel := filepath.Dir(bin), "./"+targetName
	ticks := func(path string) string {
		return fmt.Sprintf("usdt:%s:kinst:tick\nusdt:%[1]s:other:tick\n", path)
	}
	add := "uprobe:" + rel + ":kinst_add\n"
	tests := []struct{ pattern, want string }{
		{"usdt:./kinst-targ*::*", usdtListing(rel)},
		{"usdt:./kinst-targ*:*", usdtListing(rel)},
		{"usdt:./kinst-target::*ick", ticks(rel)},
		{`usdt:./kinst-target:kinst:"tick"`, "usdt:" + rel + ":kinst:tick\n"},
		{`usdt:"./kinst-target":"kinst":tick`, "usdt:" + rel + ":kinst:tick\n"},
		{"uprobe:./kinst-targ*:kinst_a*", add},
		{"u:./kinst-targ*:kinst_a*", add},
		{`uprobe:./kinst-target:"kinst_add"`, add},
		{"*:./kinst-target:kinst_a*", add},
		{"*r*:./kinst-targ*:kinst_a*", add},
		{"*:./kinst-target:kinst:t*", fmt.Sprintf("usdt:%s:kinst:tick\nusdt:%[1]s:kinst:twice\n", rel)},
	}
	for _, tt := range tests {
		kinstIn(t, dir, "-l", tt.pattern).want(t, 0, tt.want, "")
	}
	r := kinstIn(t, dir, "-l", "*:./kinst-target:*")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "uprobe:"+rel+":") || !strings.Contains(r.stdout, "\n"+add) ||
		strings.Contains(r.stdout, "uretprobe:") || !strings.HasSuffix(r.stdout, usdtListing(rel)) {
		t.Errorf("kinst -l '*:./kinst-target:*': exit status %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	pid := startSleeping(t, bin)
	seen := "/proc/" + pid + "/root" + bin
	pidTests := []struct{ pattern, want string }{
		{"usdt:::*ick", ticks(seen)},
		{"usdt::*ick", ticks(seen)},
		{"usdt:*ick", ticks(seen)},
		{"uprobe:kinst_a*", "uprobe:" + seen + ":kinst_add\n"},
	}
	for _, tt := range pidTests {
		kinst(t, "-lp", pid, tt.pattern).want(t, 0, tt.want, "")
	}

	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil {
		return
	}
	var runs [][]string
	for _, tt := range tests {
		runs = append(runs, []string{"-l", tt.pattern})
	}
	runs = append(runs, []string{"-l", "*:./kinst-target:*"})
	for _, tt := range pidTests {
		runs = append(runs, []string{"-lp", pid, tt.pattern})
	}
	for _, args := range runs {
		cmd := exec.Command(bpftrace, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if r := kinstIn(t, dir, args...); err != nil || r.stdout != string(out) {
			t.Errorf("kinst %q lists\n%s\nbpftrace (%v):\n%s", args, r.stdout, err, out)
		}
	}
}

// The same forms attach, each probe counting every time the target
// passes it; with -p, usdt:::NAME searches every file the process maps.
// bpftrace 0.17 counts the same, printing equal counts in another order.
// The target is a copy of the test's own, in a directory of its own:
// other tests count every call of kinst_add in the shared one.
func TestUSDTAttachForms(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := targetCopy(t)
	dir, rel := filepath.Dir(bin), "./"+targetName
	counts := func(n int, lines ...string) string {
		s := fmt.Sprintf("Attaching %d probes...\n\n\n", n)
		if n == 1 {
			s = "Attaching 1 probe...\n\n\n"
		}
		for _, l := range lines {
			s += strings.ReplaceAll(l, "BIN", rel) + "\n"
		}
		return s
	}
	tests := []struct{ ap, cmd, want string }{
		{"usdt:./kinst-targ*::*", "usdt 3", counts(7,
			"@[usdt:BIN:kinst:gated]: 3", "@[usdt:BIN:kinst:mem]: 3", "@[usdt:BIN:kinst:small]: 3",
			"@[usdt:BIN:kinst:tick]: 3", "@[usdt:BIN:other:tick]: 3", "@[usdt:BIN:kinst:twice]: 6")},
		{"usdt:./kinst-target::*ick", "usdt 3", counts(2, "@[usdt:BIN:kinst:tick]: 3", "@[usdt:BIN:other:tick]: 3")},
		{"usdt:./kinst-target::twice", "usdt 3", counts(2, "@[usdt:BIN:kinst:twice]: 6")},
		{`usdt:./kinst-target:kinst:"tick"`, "usdt 3", counts(1, "@[usdt:BIN:kinst:tick]: 3")},
		{"uprobe:./kinst-targ*:kinst_add", "add 3", counts(1, "@[uprobe:BIN:kinst_add]: 3")},
		{"uretprobe:./kinst-targ*:kinst_a*", "add 3", counts(1, "@[uretprobe:BIN:kinst_add]: 3")},
		// A wildcard probe type before a path is uprobe or usdt,
		// whichever the rest fits.
		{"*:./kinst-target:kinst_add", "add 3", counts(1, "@[uprobe:BIN:kinst_add]: 3")},
		{"u*:./kinst-targ*:kinst_add", "add 3", counts(1, "@[uprobe:BIN:kinst_add]: 3")},
		{"*:./kinst-target:kinst:tick", "usdt 3", counts(1, "@[usdt:BIN:kinst:tick]: 3")},
		{"us*:./kinst-target:*ick", "usdt 3", counts(2, "@[usdt:BIN:kinst:tick]: 3", "@[usdt:BIN:other:tick]: 3")},
	}
	bpftrace, _ := exec.LookPath("bpftrace")
	for _, tt := range tests {
		args := []string{"-e", tt.ap + " /pid == cpid/ { @[probe] = count(); }", "-c", rel + " " + tt.cmd}
		r := kinstIn(t, dir, args...)
		r.want(t, 0, tt.want, "")
		if bpftrace == "" {
			continue
		}
		cmd := exec.Command(bpftrace, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		got, want := strings.Split(r.stdout, "\n"), strings.Split(string(out), "\n")
		slices.Sort(got)
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("kinst %q prints\n%s\nbpftrace (%v):\n%s", args, r.stdout, err, out)
		}
	}
	for _, tt := range []struct{ prog, msg string }{
		{"uprobe:./kinst-targ*:nope { }", "no function in the files matching ./kinst-targ* matches nope; kinst -l 'uprobe:./kinst-targ*:*' lists them"},
		{"usdt:./kinst-target::tick { }", "usdt:./kinst-target::tick names no provider and matches kinst:tick and other:tick: name one, or use '*' for all"},
		{"usdt:./kinst-nope*:tick { }", "resolve ./kinst-nope*: no such binary or library: no file matches"},
		{"*:./kinst-target:nope { }", "*:./kinst-target:nope matches nothing; kinst -l '*:./kinst-target:nope' lists what exists"},
		{"ur*:./kinst-target:kinst_add { }", "no probe type matches ur*"},
		{"*:syscalls:sys_enter_getppid { }", "* matches the kernel probe types fentry, hardware, iter, kprobe, rawtracepoint, software, tracepoint: name one, or a file (a path) for uprobe and usdt"},
	} {
		caret := "^" + strings.Repeat("~", strings.Index(tt.prog, " {")-1)
		kinstIn(t, dir, "-e", tt.prog).want(t, 1, "", fmt.Sprintf("-e:1:1: %s\n%s\n%s\n", tt.msg, tt.prog, caret))
	}

	pid := startTarget(t, bin, "usdtloop")
	seen := "/proc/" + pid + "/root" + bin
	ticks := fmt.Sprintf("Attaching 3 probes...\n\n\n@[usdt:%s:kinst:tick]: 1\n@[usdt:%[1]s:other:tick]: 1\n", seen)
	kinst(t, "-p", pid, "-e", "usdt:::*ick { @[probe] = 1; } interval:ms:500 { exit(); }").want(t, 0, ticks, "")
	// With -p, a wildcard probe type is uprobe or usdt too.
	kinst(t, "-p", pid, "-e", "*:*ick { @[probe] = 1; } interval:ms:500 { exit(); }").want(t, 0, ticks, "")
}

// Without a path or -p, a wildcard probe type is one of the kernel's, as
// in bpftrace: t* is tracepoint (and not uprobe or usdt).
func TestWildcardKernelProbeType(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	bin := target(t)
	kinst(t, "-e", "t*:syscalls:sys_enter_getppid /pid == cpid/ { @[probe] = count(); }", "-c", bin+" getppid 2").want(t, 0,
		"Attaching 1 probe...\n\n\n@[tracepoint:syscalls:sys_enter_getppid]: 2\n", "")
}

// Bad USDT attach points are located errors, before anything attaches.
func TestUSDTErrors(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := target(t)
	text := filepath.Join(t.TempDir(), "notelf")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ prog, msg string }{
		{"usdt:/nonexistent/bin:p:n { }",
			"resolve /nonexistent/bin: no such binary or library: stat /nonexistent/bin: no such file or directory"},
		{"usdt:" + text + ":p:n { }", text + " is not an ELF file"},
		{"usdt:" + self + ":p:n { }", self + " has no USDT probes"},
		{"usdt:" + bin + ":kinst:nope { }",
			"no USDT probe matches kinst:nope in " + bin + "; kinst -l 'usdt:" + bin + ":*' lists them"},
		{"usdt:" + bin + ":nope { }",
			"no USDT probe matches nope in " + bin + "; kinst -l 'usdt:" + bin + ":*' lists them"},
		{"usdt:" + filepath.Dir(bin) + "/kinst-targ*:nope { }",
			"no USDT probe matches nope in the files matching " + filepath.Dir(bin) + "/kinst-targ*; kinst -l 'usdt:" + filepath.Dir(bin) + "/kinst-targ*' lists them"},
		{"usdt:nope { }", "usdt probes are written usdt:PATH:[PROVIDER:]NAME, or usdt:NAME with -p"},
		{"usdt:" + bin + ":tick { }",
			"usdt:" + bin + ":tick names no provider and matches kinst:tick and other:tick: name one, or use '*' for all"},
	}
	for _, tt := range tests {
		caret := "^" + strings.Repeat("~", strings.Index(tt.prog, " {")-1)
		kinst(t, "-e", tt.prog).want(t, 1, "", fmt.Sprintf("-e:1:1: %s\n%s\n%s\n", tt.msg, tt.prog, caret))
	}
	// An argument the probe does not pass.
	prog := "usdt:" + bin + ":kinst:t* { @ = arg2; }"
	col := strings.Index(prog, "arg2") + 1
	kinst(t, "-e", prog).want(t, 1, "", fmt.Sprintf("-e:1:%d: arg2 is out of range: usdt:%s:kinst:twice has one argument, arg0\n%s\n%s^~~~\n", col, bin, prog, strings.Repeat(" ", col-1)))
}

// With -p, absolute paths are the process's: a target run from a tmpfs
// mounted in its own mount namespace, where kinst's namespace has only an
// empty directory, is found through /proc/PID/root for uprobes and USDT
// probes, listed and attached.
func TestPidMountNamespace(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	dir := t.TempDir()
	inner := filepath.Join(dir, "kinst-target")
	pid := strconv.Itoa(inMountNamespace(t, inner,
		fmt.Sprintf("mount -t tmpfs none %s && cp %s %s && exec %[3]s sleep 20000", dir, bin, inner)))
	if _, err := os.Stat(inner); err == nil {
		t.Fatalf("%s is visible outside the process's mount namespace", inner)
	}
	seen := "/proc/" + pid + "/root" + inner
	kinst(t, "-lp", pid, "uprobe:"+inner+":kinst_a*").want(t, 0, "uprobe:"+seen+":kinst_add\n", "")
	kinst(t, "-lp", pid, "usdt:"+inner+":kinst:t*").want(t, 0, "usdt:"+seen+":kinst:tick\nusdt:"+seen+":kinst:twice\n", "")
	prog := fmt.Sprintf(`uprobe:%s:kinst_add, usdt:%[1]s:kinst:tick { } BEGIN { printf("%%s\n", "attached"); exit(); }`, inner)
	kinst(t, "-p", pid, "-e", prog).want(t, 0, "Attaching 3 probes...\nattached\n\n\n", "")
}

// A uprobe on a USDT site's own address and the usdt probe attach
// together, each seeing every hit: the kernel refuses a second uprobe on
// an instruction unless both count in the same semaphore, so the uprobe
// takes the site's.
func TestUSDTAndUprobeOnOneSite(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	probes, err := usdt.Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(probes, func(p usdt.Probe) bool { return p.FullName() == "kinst:tick" })
	if i < 0 {
		t.Fatal("the target has no kinst:tick")
	}
	for _, prog := range []string{
		fmt.Sprintf("uprobe:%s:%#x /pid == cpid/ { @uprobe = count(); } usdt:%[1]s:kinst:tick /pid == cpid/ { @usdt = count(); }", bin, probes[i].Addr),
		fmt.Sprintf("usdt:%s:kinst:tick /pid == cpid/ { @usdt = count(); } uprobe:%[1]s:%#x /pid == cpid/ { @uprobe = count(); }", bin, probes[i].Addr),
	} {
		kinst(t, "-e", prog, "-c", bin+" usdt 5").want(t, 0, "Attaching 2 probes...\n\n\n@uprobe: 5\n@usdt: 5\n", "")
	}
}

// Semaphores are raised by file, as --usdt-file-activation asks of
// bpftrace: a Python process already running when kinst starts, not
// named by -p, sees its python:audit semaphore raised and fires the
// probe; once kinst ends, the semaphore in the process is 0 again.
func TestUSDTFileActivation(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	py := python(t)
	script := "import sys, time\nwhile True:\n    sys.audit('kinst.file')\n    time.sleep(0.05)\n"
	proc := exec.Command(py, "-c", script)
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	pid := proc.Process.Pid
	prog := fmt.Sprintf(`usdt:%s:python:audit /pid == %d && str(arg0) == "kinst.file" && @seen == 0/ { @seen = 1; printf("%%s\n", str(arg0)); exit(); }`, py, pid)
	for _, flags := range [][]string{{"--usdt-file-activation"}, nil} {
		kinst(t, append(flags, "-e", prog)...).want(t, 0, "Attaching 1 probe...\nkinst.file\n\n\n@seen: 1\n", "")
	}
	probes, err := usdt.Read(py)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(probes, func(p usdt.Probe) bool { return p.FullName() == "python:audit" })
	ef, err := elf.Open(py)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if i < 0 || probes[i].Semaphore == 0 || ef.Type != elf.ET_EXEC {
		return // the semaphore's address in the process is not the file's
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var sem [2]byte
	if _, err := mem.ReadAt(sem[:], int64(probes[i].Semaphore)); err != nil {
		t.Fatal(err)
	}
	if sem != [2]byte{} {
		t.Errorf("python:audit's semaphore holds %v after kinst ended, want 0", sem)
	}
}

// With -p, a process whose executable was deleted since it started has
// its functions reached through /proc/PID/exe, the only name left.
func TestPidDeletedExecutable(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := targetCopy(t)
	pid := startSleeping(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	kinst(t, "-lp", pid, "uprobe:*:kinst_a*").want(t, 0, "uprobe:/proc/"+pid+"/exe:kinst_add\n", "")
}

// Where the kernel has no uprobe reference counter (before 4.20), kinst
// raises USDT semaphores itself by writing the traced process's memory,
// as bpftrace does. KINST_INJECT takes the counter away on this host.
// The -c command fires kinst:gated 500 times; with uprobe.multi, the
// semaphores of kinst:tick and of both sites of kinst:twice are raised
// too. A running target, named by -p and then found by
// --usdt-file-activation, sees its semaphore at 1 while kinst is
// attached (the probe reads it) and at 0 again once kinst has ended.
// Without a process to raise it in, kinst says so. The test probes a
// copy of the target of its own: the kernel refuses a uprobe without a
// reference counter where the other tests' uprobes have one (EINVAL).
func TestUSDTSemaphoreByHand(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := copyFile(t, target(t), "own")
	noRefCtr := []string{"KINST_INJECT=uprobe_ref_ctr.fail=1"}
	prog := strings.ReplaceAll(`usdt:BIN:kinst:gated /pid == cpid/ { @ = count(); } usdt:BIN:kinst:t* /pid == cpid/ { @t[probe] = count(); }`, "BIN", bin)
	kinstEnv(t, noRefCtr, "-q", "-e", prog, "-c", bin+" usdt 500").want(t, 0,
		fmt.Sprintf("\n\n@: 500\n@t[usdt:%s:kinst:tick]: 500\n@t[usdt:%[1]s:kinst:twice]: 1000\n", bin), "")

	proc := exec.Command(bin, "usdtloop")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	pid := proc.Process.Pid
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "kinst_gated_semaphore" })
	if i < 0 {
		t.Fatal("no kinst_gated_semaphore in the target")
	}
	semaphore := func() uint16 {
		t.Helper()
		mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		var b [2]byte
		if _, err := mem.ReadAt(b[:], int64(syms[i].Value)); err != nil {
			t.Fatal(err)
		}
		return uint16(b[0]) | uint16(b[1])<<8
	}
	prog = fmt.Sprintf(`usdt:%s:kinst:gated /pid == %d/ { @n++; if (@n == 100) { printf("%%d %%d\n", @n, *uaddr("kinst_gated_semaphore")); exit(); } } END { clear(@n); }`, bin, pid)
	for _, flags := range [][]string{{"-p", strconv.Itoa(pid)}, {"--usdt-file-activation"}} {
		kinstEnv(t, noRefCtr, append(flags, "-q", "-e", prog)...).want(t, 0, "100 1\n\n\n\n", "")
		if v := semaphore(); v != 0 {
			t.Errorf("%v: kinst:gated's semaphore is %d after kinst ended, want 0", flags, v)
		}
	}

	// The error points at the probe: "-e:1:1: MESSAGE", the line, a caret.
	located := func(point, msg string) string {
		return "-e:1:1: attach " + point + ": " + msg + "\n" + point + " { }\n^" + strings.Repeat("~", len(point)-1) + "\n"
	}
	point := "usdt:" + bin + ":kinst:gated"
	kinstEnv(t, noRefCtr, "-q", "-e", point+" { }").want(t, 1, "",
		located(point, "cannot raise the probe's USDT semaphore: this kernel has no uprobe reference counter, which raises it in every process: give -p PID or --usdt-file-activation"))
	// In a probe of several points, the caret goes under the one that
	// failed.
	tp := "tracepoint:syscalls:sys_enter_getppid"
	kinstEnv(t, noRefCtr, "-q", "-e", tp+", "+point+" { }").want(t, 1, "",
		fmt.Sprintf("-e:1:%d: attach %s: cannot raise the probe's USDT semaphore: this kernel has no uprobe reference counter, which raises it in every process: give -p PID or --usdt-file-activation\n%s, %s { }\n%s^%s\n",
			len(tp)+3, point, tp, point, strings.Repeat(" ", len(tp)+2), strings.Repeat("~", len(point)-1)))
	idle := copyFile(t, bin, "idle")
	point = "usdt:" + idle + ":kinst:gated"
	kinstEnv(t, noRefCtr, "-q", "--usdt-file-activation", "-e", point+" { }").want(t, 1, "",
		located(point, "cannot raise the probe's USDT semaphore: no process runs "+idle+" for --usdt-file-activation to raise it in"))
}

// copyFile copies an executable into a file called name in a folder of
// the test's: another inode, which no other test probes.
func copyFile(t *testing.T, path, name string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// inMountNamespace runs script under unshare, in a mount namespace of its
// own, and returns its pid once it has exec'd exe there. Where the kernel
// or the test's privileges refuse the namespace or the mount, which
// unshare and mount say, the test is skipped; any other end of the
// script, or no exec within runTimeout, fails it.
func inMountNamespace(t *testing.T, exe, script string) int {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare is not installed")
	}
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script)
	var stderr bytes.Buffer // read once the command has ended
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(runTimeout); ; {
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); got == exe {
			return cmd.Process.Pid
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			if msg := stderr.String(); strings.Contains(msg, "Operation not permitted") || strings.Contains(msg, "ermission denied") {
				t.Skipf("no mount namespace of its own for the target: %s", msg)
			}
			t.Fatalf("%s ended (%v) before it ran %s: %s", script, err, exe, &stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not run %s within %v", script, exe, runTimeout)
		}
	}
}
