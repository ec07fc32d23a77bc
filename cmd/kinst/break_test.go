package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
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

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// gdbCore runs gdb on a core file of bin with commands, and returns
// what it printed.
func gdbCore(t *testing.T, bin, core string, commands ...string) string {
	t.Helper()
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Skip("no gdb to read the core file")
	}
	args := []string{"-nx", "-batch"}
	for _, c := range commands {
		args = append(args, "-ex", c)
	}
	out, err := exec.Command(gdb, append(args, bin, core)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	return string(out)
}

// wantGdb fails t unless gdb's output matches each pattern.
func wantGdb(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("gdb printed no match for %s:\n%s", p, out)
		}
	}
}

// held starts bin with args under its final pid, held until release
// is called, so that kinst can attach to it with --pid before it makes
// its calls.
func held(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, release func()) {
	t.Helper()
	cmd = exec.Command("sh", append([]string{"-c", `read go; exec "$0" "$@"`, bin}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Wait()
	})
	return cmd, func() { in.Write([]byte("go\n")); in.Close() }
}

// verbose matches what kinst -v says of its probes.
var verbose = regexp.MustCompile(`^kinst: (attached|detached) |^kinst: uprobe:`)

// kinstAttached runs kinst with -v and calls release once its probes
// are attached; its result leaves out what -v printed.
func kinstAttached(t *testing.T, release func(), args ...string) result {
	t.Helper()
	cmd := exec.Command(testenv.Kinst(t), append(args, "-v")...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(runTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var stderr strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "kinst: attached ") {
			release()
		}
		if !verbose.MatchString(line) {
			stderr.WriteString(line + "\n")
		}
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, cmd.Wait())}
	checkNoPanic(t, r.stderr)
	return r
}

// The core of target add 5 stopped at its third call of kinst_add, with
// a = 3 in rdi and the two calls before summed in kinst_sum: gdb shows
// kinst_add as frame 0 with those values, at the function's first
// instruction as the file has it, not after it nor the uprobe's
// breakpoint, and the process, resumed, ends normally.
func TestBreakCore(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	core := filepath.Join(t.TempDir(), "core")
	cmd, release := held(t, bin, "add", "5")
	pid := cmd.Process.Pid
	r := kinstAttached(t, release, "break", "uprobe:"+bin+":kinst_add", "--if", "arg0 == 3", "--core", core, "--unsafe", "--pid", strconv.Itoa(pid))
	line := regexp.MustCompile(fmt.Sprintf(`^pid %d tid %d %s: stopped at uprobe:%s:kinst_add; core written to %s \([0-9.]+ MB, [0-9.]+s after the hit\)\n$`,
		pid, pid, regexp.QuoteMeta(comm(bin)), regexp.QuoteMeta(bin), regexp.QuoteMeta(core)))
	if r.code != 0 || r.stderr != "" || !line.MatchString(r.stdout) {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("target add 5, resumed after the dump: %v", err)
	}
	out := gdbCore(t, bin, core, "bt", "info registers rip rdi", "print kinst_sum", "info threads", "info registers mxcsr", "x/1xb $pc")
	wantGdb(t, out,
		`Program terminated with signal SIGSTOP`,
		`(?m)^#0 +kinst_add \(a=a@entry=3, b=b@entry=-6\)`,
		`(?m)^#1 +0x[0-9a-f]+ in main `,
		`(?m)^rip +0x[0-9a-f]+ +0x[0-9a-f]+ <kinst_add>$`,
		fmt.Sprintf(`(?m)^0x[0-9a-f]+ <kinst_add>:\t0x%02x$`, firstByte(t, bin, "kinst_add")),
		`(?m)^rdi +0x3 +3$`,
		`(?m)^\$1 = -3$`,
		fmt.Sprintf(`(?m)^\* 1 +LWP %d +kinst_add `, pid),
		// The SSE control register, at its reset value: the
		// floating-point registers are in the core.
		`(?m)^mxcsr +0x1f80 `,
	)
}

// firstByte is the first byte of function fn in the ELF file bin.
func firstByte(t *testing.T, bin, fn string) byte {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != fn {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				b := make([]byte, 1)
				if _, err := p.ReadAt(b, int64(s.Value-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b[0]
			}
		}
	}
	t.Fatalf("%s has no function %s", bin, fn)
	return 0
}

// --count 2 under -c dumps two hits, to FILE.1 and FILE.2, and the
// command runs to its end.
func TestBreakCoreCount(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	core := filepath.Join(t.TempDir(), "core")
	r := kinst(t, "break", "uprobe:"+bin+":kinst_add", "--if", "arg0 >= 3", "--count", "2", "--core", core, "--unsafe", "-c", bin+" add 5")
	if r.code != 0 || r.stderr != "" || strings.Count(r.stdout, "core written to "+core+".") != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for i, want := range []string{"a=a@entry=3, b=b@entry=-6", "a=a@entry=4, b=b@entry=-8"} {
		out := gdbCore(t, bin, fmt.Sprintf("%s.%d", core, i+1), "bt", "print kinst_sum")
		wantGdb(t, out, `(?m)^#0 +kinst_add \(`+regexp.QuoteMeta(want)+`\)`, fmt.Sprintf(`(?m)^\$1 = %d$`, []int{-3, -6}[i]))
	}
	if _, err := os.Stat(core + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third core: %v", err)
	}
}

// A tracepoint at a system call stops the process as the call returns
// to user space: the core shows the C library's nanosleep called from
// main, and the sleep, restarted, ends normally.
func TestBreakCoreSyscall(t *testing.T) {
	t.Parallel()
	tracing(t)
	bin := target(t)
	core := filepath.Join(t.TempDir(), "core")
	r := kinst(t, "break", "syscall:clock_nanosleep", "--core", core, "--unsafe", "-c", bin+" sleep 300")
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "stopped at syscall:clock_nanosleep; core written to "+core+" (") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	out := gdbCore(t, bin, core, "bt")
	wantGdb(t, out, `(?m)^#0 .*nanosleep`, `(?m)^#\d+ +0x[0-9a-f]+ in main `)
}

// --stop and --gdb leave the process stopped where the probe fired and
// say how to go on; without a terminal, --gdb prints gdb's command.
func TestBreakStop(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	for _, tc := range []struct{ flag, then string }{
		{"--stop", "resume it with: kill -CONT %d"},
		{"--gdb", "debug it with: gdb -p %[1]d, then resume it with: kill -CONT %[1]d"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			cmd, release := held(t, bin, "add", "5")
			pid := cmd.Process.Pid
			r := kinstAttached(t, release, "break", "uprobe:"+bin+":kinst_add", tc.flag, "--unsafe", "--pid", strconv.Itoa(pid))
			r.want(t, 0, fmt.Sprintf("pid %d tid %d %s: stopped at uprobe:%s:kinst_add; "+tc.then+"\n", pid, pid, comm(bin), bin, pid), "")
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || !strings.Contains(string(stat), ") T ") {
				t.Errorf("process %d is not stopped: %s %v", pid, stat, err)
			}
			cmd.Process.Signal(syscall.SIGCONT)
			if err := cmd.Wait(); err != nil {
				t.Errorf("target add 5, resumed: %v", err)
			}
		})
	}
}

// On a terminal, --gdb runs gdb on the stopped process and continues
// the process once gdb ends, which leaves it in its stop when it
// detaches: the gdb here only says how it was run.
func TestBreakGdbTerminal(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	dir := t.TempDir()
	said := filepath.Join(dir, "gdb.args")
	if err := os.WriteFile(filepath.Join(dir, "gdb"), []byte("#!/bin/sh\necho \"$@\" > "+said+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, tty := openPty(t)
	cmd, release := held(t, bin, "add", "5")
	pid := cmd.Process.Pid
	k := exec.Command(testenv.Kinst(t), "break", "uprobe:"+bin+":kinst_add", "--gdb", "--unsafe", "--pid", strconv.Itoa(pid), "-v")
	k.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	k.Stdin = tty
	var stdout bytes.Buffer
	k.Stdout = &stdout
	errPipe, err := k.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(runTimeout, func() { k.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "kinst: attached ") {
			release()
		}
	}
	if err := k.Wait(); err != nil {
		t.Fatalf("kinst: %v\nstdout:\n%s", err, stdout.String())
	}
	want := fmt.Sprintf("pid %[1]d tid %[1]d %[2]s: stopped at uprobe:%[3]s:kinst_add; running gdb -p %[1]d; it goes on when gdb ends\npid %[1]d goes on\n", pid, comm(bin), bin)
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if args, err := os.ReadFile(said); err != nil || string(args) != fmt.Sprintf("-p %d\n", pid) {
		t.Errorf("gdb ran with %q (%v), want -p %d", args, err, pid)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("target add 5, after gdb: %v", err)
	}
}

// With no target, --core dumps process --pid at once and lets it go on.
func TestBreakDumpNow(t *testing.T) {
	t.Parallel()
	bin := target(t)
	cmd := exec.Command(bin, "sleep", "60000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	time.Sleep(200 * time.Millisecond) // into the sleep
	core := filepath.Join(t.TempDir(), "core")
	pid := cmd.Process.Pid
	r := kinst(t, "break", "--pid", strconv.Itoa(pid), "--core", core, "--unsafe")
	if want := regexp.MustCompile(fmt.Sprintf(`^core of pid %d written to %s \([0-9.]+ MB in [0-9.]+s\)\n$`, pid, regexp.QuoteMeta(core))); r.code != 0 || r.stderr != "" || !want.MatchString(r.stdout) {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	wantGdb(t, gdbCore(t, bin, core, "bt"), `(?m)^#\d+ +0x[0-9a-f]+ in main `)
	// Resumed, it sleeps on.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || !strings.Contains(string(stat), ") S ") {
		t.Errorf("process %d is not back to its sleep: %s %v", pid, stat, err)
	}

	// A process stopped before stays stopped.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(stat), ") T ") {
			break
		}
	}
	r = kinst(t, "break", "--pid", strconv.Itoa(pid), "--core", core, "--unsafe")
	if want := regexp.MustCompile(fmt.Sprintf(`^core of pid %d written to %s \([0-9.]+ MB in [0-9.]+s\); it was stopped before, and stays stopped\n$`, pid, regexp.QuoteMeta(core))); r.code != 0 || r.stderr != "" || !want.MatchString(r.stdout) {
		t.Errorf("stopped before: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || !strings.Contains(string(stat), ") T ") {
		t.Errorf("process %d, stopped before the dump, is not stopped after it: %s %v", pid, stat, err)
	}
}

func TestBreakErrors(t *testing.T) {
	t.Parallel()
	bin := target(t)
	u := "uprobe:" + bin + ":kinst_add"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no action", []string{u, "--unsafe"}, 2, "kinst break: say what to do at the breakpoint: --core FILE, --gdb or --stop\n"},
		{"two actions", []string{u, "--stop", "--gdb", "--unsafe"}, 2, "kinst break: --gdb and --stop conflict: give only one of --core FILE, --gdb or --stop\n"},
		{"three actions", []string{u, "--gdb", "--core", "c", "--stop", "--unsafe"}, 2, "kinst break: --core, --gdb and --stop conflict: give only one of --core FILE, --gdb or --stop\n"},
		{"two targets", []string{u, u, "--stop", "--unsafe"}, 2, "kinst break: name one target\n"},
		{"count zero", []string{u, "--core", "c", "--count", "0", "--unsafe"}, 2, "kinst break: --count 0: give a positive number of hits\n"},
		{"count with stop", []string{u, "--stop", "--count", "2", "--unsafe"}, 2, "kinst break: --count applies to --core: --gdb and --stop act on the first hit\n"},
		{"stop with -c", []string{u, "--stop", "--unsafe", "-c", bin + " add 1"}, 2,
			"kinst break: --gdb and --stop leave the process stopped, and kinst ends a -c command when it ends: start the process yourself and give --pid\n"},
		{"no target nor pid", []string{"--core", "c", "--unsafe"}, 2, "kinst break: name a target, or dump process --pid PID now with --core FILE\n"},
		{"no unsafe", []string{u, "--stop"}, 1, "kinst: break stops processes: run it with --unsafe\n"},
		{"unwritable", []string{u, "--core", "/nonexistent/core", "--unsafe"}, 1,
			"kinst: cannot write a core file in /nonexistent: no such file or directory\n"},
		{"no process", []string{"--pid", "2147483647", "--core", "c", "--unsafe"}, 2, "kinst break: pid 2147483647: no such process\n"},
		{"bad target", []string{"uprobe:" + bin + ":kinst_none", "--stop", "--unsafe"}, 1,
			"kinst: break uprobe:" + bin + ":kinst_none: no matches for uprobe " + bin + ":kinst_none: no such function (did you mean kinst_move?)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinst(t, append([]string{"break"}, tc.args...)...).want(t, tc.code, "", tc.want)
		})
	}
}

// A process that exited, a zombie not yet reaped, and one a debugger
// traces cannot be dumped, each for its reason.
func TestBreakDumpRefused(t *testing.T) {
	t.Parallel()
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", zombie.Process.Pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	core := filepath.Join(t.TempDir(), "core")
	kinst(t, "break", "--pid", strconv.Itoa(zombie.Process.Pid), "--core", core, "--unsafe").want(t, 1, "",
		fmt.Sprintf("kinst: process %d exited before its core was written\n", zombie.Process.Pid))

	// The test traces a process of its own, from one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	traced := exec.Command(target(t), "sleep", "60000")
	if err := traced.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		traced.Process.Kill()
		traced.Wait()
	}()
	pid := traced.Process.Pid
	if err := unix.PtraceSeize(pid); err != nil {
		t.Fatal(err)
	}
	kinst(t, "break", "--pid", strconv.Itoa(pid), "--core", core, "--unsafe").want(t, 1, "",
		fmt.Sprintf("kinst: cannot dump process %d: already traced, by process %d: detach that debugger first\n", pid, unix.Gettid()))
	// Detaching needs the tracee in a ptrace stop.
	if err := unix.PtraceInterrupt(pid); err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		t.Fatal(err)
	}
	if err := unix.PtraceDetach(pid); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(core); !os.IsNotExist(err) {
		t.Errorf("a refused dump left %s: %v", core, err)
	}
}

// coreThreads reads the threads of a core file, in the order of their
// NT_PRSTATUS notes, after checking it is an x86-64 core with memory.
func coreThreads(t *testing.T, path string) []int {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_CORE || f.Machine != elf.EM_X86_64 || len(f.Progs) < 2 || f.Progs[0].Type != elf.PT_NOTE {
		t.Fatalf("%s: type %v, machine %v, %d segments", path, f.Type, f.Machine, len(f.Progs))
	}
	notes, err := io.ReadAll(f.Progs[0].Open())
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for len(notes) >= 12 {
		namesz, descsz, typ := binary.LittleEndian.Uint32(notes), binary.LittleEndian.Uint32(notes[4:]), binary.LittleEndian.Uint32(notes[8:])
		desc := notes[12+(namesz+3)&^3:]
		if typ == uint32(elf.NT_PRSTATUS) {
			tids = append(tids, int(binary.LittleEndian.Uint32(desc[32:])))
		}
		notes = desc[(descsz+3)&^3:]
	}
	return tids
}

// A dump of a Go program has each of its threads, the one asked for
// first, as gdb's current thread.
func TestBreakDumpThreads(t *testing.T) {
	t.Parallel()
	w := workload(t)
	cmd := exec.Command(w, "nanosleep", "1", "60000000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	var tids []int
	for deadline := time.Now().Add(10 * time.Second); len(tids) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tids = tids[:0]
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			tids = append(tids, tid)
		}
	}
	if len(tids) < 2 {
		t.Fatalf("the Go workload runs %d threads", len(tids))
	}
	second := tids[1]
	core := filepath.Join(t.TempDir(), "core")
	r := kinst(t, "break", "--pid", strconv.Itoa(pid), "--thread", strconv.Itoa(second), "--core", core, "--unsafe")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	got := coreThreads(t, core)
	if len(got) < len(tids) || got[0] != second {
		t.Errorf("core threads %v; the process had %v, and %d first", got, tids, second)
	}
	out := gdbCore(t, w, core, "info threads")
	wantGdb(t, out, fmt.Sprintf(`(?m)^\* 1 +LWP %d `, second), fmt.Sprintf(`(?m)^  %d +LWP \d+ `, len(got)))
}

// A kernel function stops the process that called it as the call
// returns to user space: the core holds its thread, and gdb, where
// there is one, shows the sleep called from main.
func TestBreakKernelFunction(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Kprobe, testenv.Ringbuf)
	bin := target(t)
	core := filepath.Join(t.TempDir(), "core")
	r := kinst(t, "break", "hrtimer_nanosleep", "--core", core, "--unsafe", "-c", bin+" sleep 300")
	m := regexp.MustCompile(`^pid (\d+) tid (\d+) ` + regexp.QuoteMeta(comm(bin)) + `: stopped at hrtimer_nanosleep; core written to ` + regexp.QuoteMeta(core) + ` \(`).FindStringSubmatch(r.stdout)
	if r.code != 0 || r.stderr != "" || m == nil {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := coreThreads(t, core); fmt.Sprint(got) != "["+m[2]+"]" {
		t.Errorf("core threads %v, want [%s]", got, m[2])
	}
	wantGdb(t, gdbCore(t, bin, core, "bt"), `(?m)^#0 .*nanosleep`, `(?m)^#\d+ +0x[0-9a-f]+ in main `)
}

// --show prints the program: at most --count stops, and for kernel
// code none of a kernel thread, which has no user space to stop in.
func TestBreakShow(t *testing.T) {
	t.Parallel()
	tracing(t)
	bin := target(t)
	body := " && @kinst_stops < %d/ {\n\t@kinst_stops = @kinst_stops + 1;\n\tsignal(\"SIGSTOP\");\n\tprintf(\"%%lu %%d %%d %%s\\n\", nsecs, pid, tid, comm);\n}\n"
	kinst(t, "break", "syscall:getppid", "--if", "pid > 1", "--core", "c", "--count", "3", "--show").want(t, 0,
		"tracepoint:syscalls:sys_enter_getppid /((curtask->flags & 0x200000) == 0 && pid > 1)"+fmt.Sprintf(body, 3), "")
	kinst(t, "break", "uprobe:"+bin+":kinst_add", "--stop", "--pid", "42", "--show").want(t, 0,
		"uprobe:"+bin+":kinst_add /(pid == 42)"+fmt.Sprintf(body, 1), "")
}

// core() does in a script what kinst break --core does: the process
// that hit the probe stops there, its core is written, and it goes on
// (the command ends normally, so kinst ends).
func TestCoreFunction(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	core := filepath.Join(t.TempDir(), "core")
	// Other tests run the same target at the same time: the probe
	// fires in this run's command only.
	prog := fmt.Sprintf(`uprobe:%s:kinst_add /pid == cpid && arg0 == 3/ { core("%s"); }`, bin, core)
	r := kinst(t, "-q", "--unsafe", "-e", prog, "-c", bin+" add 5")
	if m := regexp.MustCompile(`^core of pid \d+ written to ` + regexp.QuoteMeta(core) + "\n\n\n$").MatchString(r.stdout); r.code != 0 || r.stderr != "" || !m {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	wantGdb(t, gdbCore(t, bin, core, "bt", "info registers rdi"),
		`(?m)^#0 +0x[0-9a-f]+ in kinst_add \(a=a@entry=3, b=b@entry=-6\)`,
		`(?m)^rdi +0x3 +3$`)
}
