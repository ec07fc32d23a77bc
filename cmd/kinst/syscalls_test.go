package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// A probe naming many syscalls tracepoints of one direction runs as one
// program on raw_syscalls, which tells the system calls apart by number.
// It must count exactly what one perf event per tracepoint counts: the
// same probe, split into blocks too small for raw_syscalls, is the
// reference.

// syscallTracepoints lists the tracepoint:syscalls:DIR_* probes of the
// kernel, DIR sys_enter or sys_exit.
func syscallTracepoints(t *testing.T, dir string) []string {
	t.Helper()
	r := kinst(t, "-l", "tracepoint:syscalls:"+dir+"_*")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("kinst -l: exit status %d\n%s", r.code, r.stderr)
	}
	names := strings.Fields(r.stdout)
	if len(names) < 50 {
		t.Fatalf("kinst -l lists %d syscalls tracepoints:\n%s", len(names), r.stdout)
	}
	return names
}

// perEvent writes the probe body once for every group of 7 of names, a
// block too small for raw_syscalls: each tracepoint gets a perf event.
func perEvent(names []string, body string) string {
	var b strings.Builder
	for i := 0; i < len(names); i += 7 {
		fmt.Fprintf(&b, "%s %s\n", strings.Join(names[i:min(i+7, len(names))], ","), body)
	}
	return b.String()
}

func TestSyscallFamilyCounts(t *testing.T) {
	t.Parallel()
	tracing(t)
	bin := target(t)
	tests := []struct {
		name, dir, body, cmd string
		want                 string // a line the output must have
	}{
		{"enter", "sys_enter", `/pid == cpid/ { @[probe] = count(); }`, "getppid 1000",
			"@[tracepoint:syscalls:sys_enter_getppid]: 1000\n"},
		// brk and mmap return addresses, and set_tid_address the tid, which
		// differ from run to run.
		{"exit", "sys_exit", `/pid == cpid && args->ret < 65536 && args->ret != cpid/ { @n[probe] = count(); @ret[probe] = sum(args->ret); }`, "writes 1 100",
			"@ret[tracepoint:syscalls:sys_exit_write]: 5050\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			names := syscallTracepoints(t, tt.dir)
			family := kinst(t, "-v", "-e", "tracepoint:syscalls:"+tt.dir+"_* "+tt.body, "-c", bin+" "+tt.cmd)
			why := fmt.Sprintf("(%d targets): raw_syscalls: one perf event on raw_syscalls:%s serves all %d syscalls tracepoints, told apart by system call number\n", len(names), tt.dir, len(names))
			if family.code != 0 || !strings.Contains(family.stderr, why) || !strings.Contains(family.stderr, "kinst: detached 1 links in ") {
				t.Fatalf("exit status %d, want 0 and one raw_syscalls link\nstderr:\n%s", family.code, family.stderr)
			}
			if !strings.Contains(family.stdout, tt.want) {
				t.Errorf("stdout has no %q:\n%s", tt.want, family.stdout)
			}
			each := kinst(t, "-e", perEvent(names, tt.body), "-c", bin+" "+tt.cmd)
			each.want(t, 0, family.stdout, "")
		})
	}
}

// A 32-bit system call fires raw_syscalls with its 32-bit number, while
// the kernel keeps syscalls tracepoints silent: int $0x80 with getppid's
// 32-bit number, 64, which is semget's on x86-64, counts nowhere.
func TestSyscallFamilyCompat(t *testing.T) {
	t.Parallel()
	tracing(t)
	bin := target(t)
	if err := exec.Command(bin, "int80", "1").Run(); err != nil {
		t.Skipf("this kernel runs no 32-bit system calls: %s int80 1: %v", bin, err)
	}
	names := syscallTracepoints(t, "sys_enter")
	const body = `/pid == cpid/ { @[probe] = count(); }`
	family := kinst(t, "-e", "tracepoint:syscalls:sys_enter_* "+body, "-c", bin+" int80 100")
	if family.code != 0 || !strings.Contains(family.stdout, "@[tracepoint:syscalls:sys_enter_getppid]: 1\n") || strings.Contains(family.stdout, "semget") {
		t.Fatalf("exit status %d, want 0, one getppid and no semget\nstdout:\n%s\nstderr:\n%s", family.code, family.stdout, family.stderr)
	}
	kinst(t, "-e", perEvent(names, body), "-c", bin+" int80 100").want(t, 0, family.stdout, "")
}

// A signal stops a raw_syscalls program's run as any other: the maps
// print once, even when a second signal ends kinst while it detaches,
// and nothing stays in the kernel.
func TestSyscallFamilySignal(t *testing.T) {
	t.Parallel()
	tracing(t)
	bin := target(t)
	n := len(syscallTracepoints(t, "sys_enter"))
	full := fmt.Sprintf("Attaching %d probes...\n\n\n@: 0\n@end: 1\n", n+1)
	for _, tt := range []struct {
		name, inject string
		killed       bool // a second signal, while detaching, ends kinst
	}{
		{"run", "", false},
		{"detach", "detach.delay=1m", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mark := newMark()
			ms := strconv.FormatInt(600000+mark%1000000, 10)
			prog := fmt.Sprintf(`tracepoint:syscalls:sys_enter_* /pid == %d/ { @ = count(); } END { @end = 1; }`, mark)
			cmd := exec.Command(testenv.Kinst(t), "-v", "-e", prog, "-c", bin+" sleep "+ms)
			cmd.Env = append(os.Environ(), "KINST_INJECT="+tt.inject)
			cmd.WaitDelay = waitDelay
			var stdout, stderr testenv.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			done, waitErr := background(t, cmd)
			r := &running{cmd: cmd, done: make(chan struct{})}
			go func() { <-done; close(r.done) }()
			held := r.waitAttached(t, 1)
			if len(held.links) != 1 || len(marked(t, mark)) != 1 {
				t.Fatalf("kinst holds links %v and %d programs carry the mark, want one each\nstderr:\n%s", held.links, len(marked(t, mark)), stderr.String())
			}
			cmd.Process.Signal(syscall.SIGINT)
			if tt.killed {
				for !strings.Contains(stderr.String(), "kinst: inject: 1m0s at detach\n") || stdout.String() != full {
					select {
					case <-done:
						t.Fatalf("kinst ended (%v) before its second signal\nstdout:\n%s\nstderr:\n%s", *waitErr, stdout.String(), stderr.String())
					case <-time.After(5 * time.Millisecond):
					}
				}
				cmd.Process.Signal(syscall.SIGINT)
			}
			select {
			case <-done:
			case <-time.After(runTimeout):
				t.Fatalf("kinst did not end within %v\nstderr:\n%s", runTimeout, stderr.String())
			}
			if code := exitCode(t, *waitErr); tt.killed != (code == -1) {
				t.Errorf("exit status %d, want an end by the signal: %v", code, tt.killed)
			}
			if got := stdout.String(); got != full {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, full)
			}
			checkGone(t, held, mark)
			checkNoProcess(t, "sleep", ms)
		})
	}
}
