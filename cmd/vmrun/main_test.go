package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/internal/vm/guestinit"
)

// The test binary is also the guests' /init when run calls vm.Run.
func TestMain(m *testing.M) {
	if guestinit.IsInit() {
		guestinit.Main()
	}
	os.Exit(m.Run())
}

func TestTestTimeout(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"/tmp/x.test", "-test.paniconexit0", "-test.timeout=10m0s"}, 12 * time.Minute},
		{[]string{"/tmp/x.test", "-test.timeout=30s", "-test.v=true"}, 2*time.Minute + 30*time.Second},
		{[]string{"/tmp/x.test", "-test.timeout=0s"}, 0},
		{[]string{"kinst", "features"}, 0},
		{[]string{"/tmp/x.test", "-test.timeout=soon"}, 0},
	} {
		if got := testTimeout(tt.args); got != tt.want {
			t.Errorf("testTimeout(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string // first line
	}{
		{nil, exitUsage, "vmrun: no command given"},
		{[]string{"--accel", "hvf", "true"}, exitUsage, `vmrun: accelerator "hvf": want tcg, kvm or auto`},
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"--kernel", "/nonexistent/vmlinuz", "true"}, exitFailure,
			`vmrun: kernel "/nonexistent/vmlinuz" is neither a series (6.1, 6.12) nor a file: stat /nonexistent/vmlinuz: no such file or directory`},
		{[]string{"kernels", "5.10"}, exitUsage, `vmrun: unknown kernel series "5.10": want 6.1 or 6.12`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != tt.code || first != tt.stderr || stdout.Len() != 0 {
			t.Errorf("vmrun %q = %d, stderr %q, stdout %q; want %d, %q", tt.args, code, first, stdout.String(), tt.code, tt.stderr)
		}
	}
}

func TestRunCommand(t *testing.T) {
	k := testenv.GuestKernel(t, "6.1")
	bb := testenv.Busybox(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--kernel", "6.1", "--file", bb, "--", "sh", "-c", "echo out; uname -r; exit 5"}, &stdout, &stderr)
	if code != 5 {
		t.Errorf("exit code %d, want 5; stderr:\n%s", code, stderr.String())
	}
	if want := "out\n" + k.Release + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "vmrun: Linux " + k.Release + " (tcg)\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

func TestKernels(t *testing.T) {
	testenv.GuestKernel(t, "6.12")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"kernels", "6.12"}, &stdout, &stderr); code != 0 {
		t.Fatalf("vmrun kernels 6.12 = %d: %s", code, stderr.String())
	}
	// GuestKernel gives the newest cached kernel, kernels the newest in the
	// apt index; they agree once the cache is up to date, which kernels
	// just made sure of.
	k := testenv.GuestKernel(t, "6.12")
	if want := "6.12 " + k.Release + " " + k.Image + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}

// startVmrun starts the real vmrun binary on a command that prints
// "started" and then sleeps, waits for that line, and returns the command
// and the private TMPDIR it runs with.
func startVmrun(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	testenv.GuestKernel(t, "6.1")
	bb := testenv.Busybox(t)
	vmrun := testenv.Build(t, "./cmd/vmrun")
	tmp := t.TempDir()
	cmd := exec.Command(vmrun, "--kernel", "6.1", "--file", bb, "--", "sh", "-c", "echo started; sleep 600")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("first output line %q, %v", line, err)
	}
	if len(testenv.ProcessesMentioning(tmp)) == 0 {
		t.Fatalf("no QEMU running with files in %s", tmp)
	}
	return cmd, tmp
}

// waitGone waits up to limit for no process to mention tmp.
func waitGone(t *testing.T, tmp string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		pids := testenv.ProcessesMentioning(tmp)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after %v: %v", limit, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInterruptStopsGuest(t *testing.T) {
	cmd, tmp := startVmrun(t)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if cmd.ProcessState.ExitCode() != exitInterrupted {
		t.Errorf("vmrun after SIGINT: %v, want exit code %d", err, exitInterrupted)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("vmrun took %v to stop", d)
	}
	waitGone(t, tmp, 0)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("vmrun left %v in TMPDIR", left)
	}
}

// TestKillStopsGuest kills vmrun outright: QEMU must die with it, since the
// kernel sends it SIGKILL when its parent goes.
func TestKillStopsGuest(t *testing.T) {
	cmd, tmp := startVmrun(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, tmp, 5*time.Second)
}
