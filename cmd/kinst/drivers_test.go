package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// -o opens its file the same way in every command: a named pipe holds
// kinst until its reader comes, and then gets everything kinst -o FILE
// would have written, where a pipe opened for reading and writing would
// have let kinst run with nobody reading and lose the output.
func TestOutputNamedPipe(t *testing.T) {
	t.Parallel()
	tracing(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "x.bt")
	if err := os.WriteFile(prog, []byte(`BEGIN { printf("x\n"); @a = 1; exit(); }`), 0o644); err != nil {
		t.Fatal(err)
	}
	getppid := testenv.Workload(t) + " getppid 3"
	testenv.Kinst(t) // built before the clock starts
	tests := []struct {
		name   string
		args   []string // -o FIFO comes first
		stdout string
		fifo   *regexp.Regexp
	}{
		{"-e", []string{"-e", `BEGIN { printf("x\n"); @a = 1; exit(); }`}, "\n\n", regexp.MustCompile(`^Attaching 1 probe...\nx\n@a: 1\n$`)},
		{"file", []string{prog}, "\n\n", regexp.MustCompile(`^Attaching 1 probe...\nx\n@a: 1\n$`)},
		{"latency", []string{"latency", "-c", getppid, "syscall:getppid"}, "", regexp.MustCompile(`^@oncpu\[syscall:getppid\]: count 3, average \d+, total \d+\n`)},
		{"count", []string{"count", "-c", getppid, "syscall:getppid"}, "", regexp.MustCompile(`^\d\d:\d\d:\d\d\nFUNCTION +CALLS\ngetppid +3\n\n$`)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fifo := filepath.Join(dir, "fifo"+string(rune('0'+i)))
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			args := tt.args
			if len(args) > 0 && (args[0] == "latency" || args[0] == "count") {
				args = append([]string{args[0], "-o", fifo}, args[1:]...)
			} else {
				args = append([]string{"-o", fifo}, args...)
			}
			r := start(t, args...)
			// kinst waits in open(2) for the pipe's reader, as a writer
			// of a pipe does.
			for deadline := time.Now().Add(runTimeout); !waitsForReader(r.cmd.Process.Pid); {
				select {
				case <-r.done:
					t.Fatalf("kinst ended (%v) with nobody reading %s\nstderr:\n%s", r.err, fifo, &r.stderr)
				case <-time.After(5 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("kinst did not wait for a reader of %s within %v", fifo, runTimeout)
				}
			}
			f, err := os.Open(fifo)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			data, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			res := r.wait(t)
			res.want(t, 0, tt.stdout, "")
			if !tt.fifo.Match(data) {
				t.Errorf("%s got %q, want %v", fifo, data, tt.fifo)
			}
		})
	}
}

// waitsForReader reports whether a thread of process pid waits in
// open(2) for the other end of a named pipe.
func waitsForReader(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, task := range tasks {
		if wchan, err := os.ReadFile(task); err == nil && string(wchan) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// kinst -e, kinst FILE and the instruments run programs the same way:
// the environment's settings, the run-time ones included, and -c reach
// each alike, with the same exit statuses.
func TestDriversAgree(t *testing.T) {
	t.Parallel()
	tracing(t)
	const prog = `tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @n = count(); }`
	file := filepath.Join(t.TempDir(), "n.bt")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	getppid := testenv.Workload(t) + " getppid 2"
	forms := []struct {
		name string
		args []string
		// prefix of -c's usage errors, and what a run of getppid 2 prints
		usage  string
		stdout *regexp.Regexp
	}{
		{"-e", []string{"-e", prog}, "kinst", regexp.MustCompile(`^Attaching 1 probe...\n\n\n@n: 2\n$`)},
		{"file", []string{file}, "kinst", regexp.MustCompile(`^Attaching 1 probe...\n\n\n@n: 2\n$`)},
		{"latency", []string{"latency", "syscall:getppid"}, "kinst latency", regexp.MustCompile(`^@oncpu\[syscall:getppid\]: count 2, `)},
		{"count", []string{"count", "syscall:getppid"}, "kinst count", regexp.MustCompile(`^\d\d:\d\d:\d\d\nFUNCTION +CALLS\ngetppid +2\n\n$`)},
	}
	cases := []struct {
		name   string
		env    []string
		c      string
		code   int
		stderr string // %s is the form's usage prefix
	}{
		{"compile-time setting", []string{"BPFTRACE_STRLEN=x"}, getppid, 2, "kinst: BPFTRACE_STRLEN=\"x\" is not a positive integer\n"},
		{"run-time setting", []string{"BPFTRACE_CAT_BYTES_MAX=-1"}, getppid, 2, "kinst: BPFTRACE_CAT_BYTES_MAX=\"-1\" is not a number of bytes\n"},
		{"bad -c", nil, "'" + getppid, 2, "%s: -c: unterminated quote in command\n"},
		{"missing -c", nil, "/nonexistent/x", 1, "kinst: command /nonexistent/x: exec: \"/nonexistent/x\": stat /nonexistent/x: no such file or directory\n"},
		{"notify", []string{"__BPFTRACE_NOTIFY_PROBES_ATTACHED="}, getppid, 0, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"},
	}
	for _, f := range forms {
		for _, tc := range cases {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				args := append(slices.Clone(f.args), "-c", tc.c)
				r := kinstEnv(t, tc.env, args...)
				stderr := tc.stderr
				if strings.Contains(stderr, "%s") {
					stderr = fmt.Sprintf(stderr, f.usage)
				}
				if r.code != tc.code || r.stderr != stderr {
					t.Errorf("exit status %d, stderr:\n%s\nwant %d, stderr:\n%s", r.code, r.stderr, tc.code, stderr)
				}
				if tc.code == 0 && !f.stdout.MatchString(r.stdout) {
					t.Errorf("stdout:\n%s\nwant %v", r.stdout, f.stdout)
				}
			})
		}
	}
}

// SIGINT and SIGTERM once the probes are attached stop every command
// alike: END runs, the maps are printed, and the status is 0.
func TestDriversStopOnSignal(t *testing.T) {
	t.Parallel()
	tracing(t)
	const prog = `tracepoint:syscalls:sys_enter_getppid { @n = count(); } END { printf("end\n"); }`
	file := filepath.Join(t.TempDir(), "n.bt")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	forms := []struct {
		name   string
		args   []string
		stdout *regexp.Regexp
	}{
		{"-e", []string{"-e", prog}, regexp.MustCompile(`^Attaching 2 probes...\nend\n\n\n@n: \d+\n$`)},
		{"file", []string{file}, regexp.MustCompile(`^Attaching 2 probes...\nend\n\n\n@n: \d+\n$`)},
		{"count", []string{"count", "syscall:getppid"}, regexp.MustCompile(`^\d\d:\d\d:\d\d\nFUNCTION +CALLS\n(getppid +\d+\n)?\n$`)},
		{"trace", []string{"trace", "-q", "syscall:getppid"}, regexp.MustCompile(`^TIME +CPU +PID +TID +COMM +CALL\n(.* getppid .*\n)*$`)},
	}
	for _, f := range forms {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(f.name+"/"+sig.String(), func(t *testing.T) {
				cmd := exec.Command(testenv.Kinst(t), f.args...)
				cmd.Env = append(os.Environ(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED=1")
				cmd.WaitDelay = waitDelay
				var stdout, stderr testenv.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				done, waitErr := background(t, cmd)
				for deadline := time.Now().Add(runTimeout); stderr.String() != "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"; {
					select {
					case <-done:
						t.Fatalf("kinst ended (%v) before attaching\nstderr:\n%s", *waitErr, stderr.String())
					case <-time.After(5 * time.Millisecond):
					}
					if time.Now().After(deadline) {
						t.Fatalf("not attached within %v\nstderr:\n%s", runTimeout, stderr.String())
					}
				}
				cmd.Process.Signal(sig)
				select {
				case <-done:
				case <-time.After(runTimeout):
					t.Fatalf("kinst did not end within %v of %v", runTimeout, sig)
				}
				if code := exitCode(t, *waitErr); code != 0 || stderr.String() != "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n" {
					t.Errorf("exit status %d, stderr:\n%s\nwant 0 and only the notify line", code, stderr.String())
				}
				if !f.stdout.MatchString(stdout.String()) {
					t.Errorf("stdout:\n%s\nwant %v", stdout.String(), f.stdout)
				}
			})
		}
	}
}
