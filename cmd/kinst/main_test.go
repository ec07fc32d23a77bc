package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/testenv"
)

// The tests run the kinst command as a subprocess, as users do, against
// workloads whose every traced call is known: internal/workload for
// system calls and testdata/target.c for uprobes and write sizes.

// targetName is the name a prebuilt target goes by on PATH, as inside a
// QEMU guest, where there is no C compiler.
const targetName = "kinst-target"

var tmpDir string // removed when the test binary ends

func TestMain(m *testing.M) {
	// Most exact outputs here were taken from bpftrace 0.17 side by
	// side: the command runs in its 0.17 mode unless a test sets
	// KINST_COMPAT itself (empty for the default, bpftrace 0.26.1).
	if _, set := os.LookupEnv("KINST_COMPAT"); !set {
		os.Setenv("KINST_COMPAT", "0.17")
	}
	var err error
	if tmpDir, err = os.MkdirTemp("", "kinst-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	os.Exit(code)
}

var targetBuild struct {
	once sync.Once
	path string
	err  error
}

// target returns the path of testdata/target.c built static: compiled
// once per test binary where gcc is installed, or else kinst-target from
// PATH. It skips t where there is neither.
func target(t testing.TB) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if p, err := exec.LookPath(targetName); err == nil {
			return p
		}
		t.Skipf("no gcc to build testdata/target.c and no prebuilt %s on PATH (give it to vmrun with --file)", targetName)
	}
	targetBuild.once.Do(func() {
		path := filepath.Join(tmpDir, targetName)
		out, err := exec.Command(gcc, "-O1", "-g", "-static", "-Wall", "-o", path, "testdata/target.c").CombinedOutput()
		if err != nil {
			targetBuild.err = fmt.Errorf("gcc testdata/target.c: %w\n%s", err, out)
			return
		}
		targetBuild.path = path
	})
	if targetBuild.err != nil {
		t.Fatal(targetBuild.err)
	}
	return targetBuild.path
}

// targetSymbol is the test target's symbol name.
func targetSymbol(t testing.TB, name string) elfsym.Symbol {
	t.Helper()
	f, err := elfsym.Open(target(t))
	if err != nil {
		t.Fatal(err)
	}
	sym, err := f.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sym
}

// targetLine is how bpftrace 0.26.1's show_debug_info places a frame
// at line n of the test target's source: "@FILE:LINE", the file as the
// target's DWARF names it.
func targetLine(t testing.TB, n int) string {
	t.Helper()
	src, err := filepath.Abs("testdata/target.c")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("@%s:%d", src, n)
}

// gccBuild builds the C program src with debug information and flags,
// dynamically linked unless they say -static, and skips t where there
// is no gcc (the guests).
func gccBuild(t testing.TB, src string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("no gcc to build %s", src)
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	args := append(append([]string{"-g", "-Wall"}, flags...), "-o", bin, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, out)
	}
	return bin
}

// targetCopy returns a copy of the target of the test's own: another
// file to uprobes, which the other tests' probes do not reach, and one
// the test may delete.
func targetCopy(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(target(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), targetName)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startSleeping starts bin's sleep command and returns its pid once the
// process runs bin; the test kills it when it ends.
func startSleeping(t *testing.T, bin string) string {
	t.Helper()
	return startTarget(t, bin, "sleep", "20000")
}

// startTarget starts bin with args and returns its pid once the process
// runs bin; the test kills it when it ends.
func startTarget(t *testing.T, bin string, args ...string) string {
	t.Helper()
	proc := exec.Command(bin, args...)
	err := proc.Start()
	// A copy just written may be open for writing in a child another
	// test forked and has not exec'd yet (Go issue 22315).
	for try := 0; errors.Is(err, syscall.ETXTBSY) && try < 50; try++ {
		time.Sleep(20 * time.Millisecond)
		proc = exec.Command(bin, args...)
		err = proc.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	pid := strconv.Itoa(proc.Process.Pid)
	want, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if exe, err := os.Stat("/proc/" + pid + "/exe"); err == nil && os.SameFile(exe, want) {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s did not run %s in 5 s", pid, bin)
		}
	}
}

// workload returns the path of internal/workload: built where the go
// command is installed, or else found on PATH by that name.
func workload(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err == nil {
		return testenv.Build(t, "./internal/workload")
	}
	p, err := exec.LookPath("workload")
	if err != nil {
		t.Skip("no go command to build internal/workload and no prebuilt workload on PATH (give it to vmrun with --file)")
	}
	return p
}

// comm is what the kernel calls a process started from path: the first
// 15 bytes of the file's name.
func comm(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

// A result is what one run of kinst did.
type result struct {
	stdout, stderr string
	code           int // exit status; -1 if a signal killed it
	elapsed        time.Duration
}

// runTimeout bounds every run, so that a kinst that never stops fails
// its test rather than hanging the test binary.
const runTimeout = 60 * time.Second

// waitDelay is how long a test waits, once kinst has ended, for its
// output pipes to close: a -c command kinst left running would hold them
// open for ever.
const waitDelay = 5 * time.Second

// kinst runs the kinst command with args to its end.
func kinst(t *testing.T, args ...string) result {
	t.Helper()
	return kinstEnv(t, nil, args...)
}

// kinstEnv runs the kinst command with extra environment variables.
func kinstEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return kinstRun(t, "", env, args...)
}

// kinstIn runs the kinst command in directory dir, for attach points
// with relative paths.
func kinstIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return kinstRun(t, dir, nil, args...)
}

// kinstRun runs the kinst command in dir ("" for the test's own) with
// extra environment variables.
func kinstRun(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	exe := testenv.Kinst(t)
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs // a relative path would be read from dir
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("kinst %q did not end within %v\nstdout:\n%s\nstderr:\n%s", args, runTimeout, r.stdout, r.stderr)
	}
	r.code = exitCode(t, err)
	checkNoPanic(t, r.stderr)
	return r
}

// exitCode returns the exit status err reports, or -1 for a signal.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, exec.ErrWaitDelay):
		t.Errorf("kinst ended but left its output open: is its -c command still running?")
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("run kinst: %v", err)
	return 0
}

// checkNoPanic fails t if kinst's standard error shows a Go panic or a
// runtime crash.
func checkNoPanic(t *testing.T, stderr string) {
	t.Helper()
	for _, sign := range []string{"panic: ", "fatal error: ", "goroutine 1 ["} {
		if strings.Contains(stderr, sign) {
			t.Fatalf("kinst crashed:\n%s", stderr)
		}
	}
}

// want fails t unless kinst exited with code and printed exactly stdout
// and stderr.
func (r result) want(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code || r.stdout != stdout || r.stderr != stderr {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nwant stdout:\n%s\nstderr:\n%s\nwant stderr:\n%s",
			r.code, code, r.stdout, stdout, r.stderr, stderr)
	}
}

// golden reads an expected output from testdata.
func golden(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A running kinst is one started in the background, for tests that
// signal it or look at it while it traces.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

// start starts kinst with args and returns once it runs; the test's end
// kills it if it is still running.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv starts kinst with extra environment variables, as start does.
func startEnv(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	r := &running{done: make(chan struct{})}
	r.cmd = exec.Command(testenv.Kinst(t), args...)
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.WaitDelay = waitDelay
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// wait waits for the background kinst to end and returns what it did.
func (r *running) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(runTimeout):
		r.cmd.Process.Kill()
		<-r.done
		t.Fatalf("kinst did not end within %v\nstdout:\n%s\nstderr:\n%s", runTimeout, &r.stdout, &r.stderr)
	}
	res := result{stdout: r.stdout.String(), stderr: r.stderr.String(), code: exitCode(t, r.err)}
	checkNoPanic(t, res.stderr)
	return res
}

// signal sends sig to the background kinst.
func (r *running) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal kinst: %v", err)
	}
}
