package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// In the default mode SIGUSR1 runs the self:signal:SIGUSR1 probes, in
// program order, and prints no maps by itself (bpftrace 0.26); the 0.17
// mode's SIGUSR1 is TestSignalPrintsMaps.
func TestSelfSignal(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf)
	cmd := exec.Command(testenv.Kinst(t), "-e", `begin { @a = 1; }
self:signal:SIGUSR1 { printf("signal %d", @a); @a++; }
self:signal:SIGUSR1 { printf(" then %d\n", @a); }`)
	cmd.Env = append(os.Environ(), "KINST_COMPAT=", "__BPFTRACE_NOTIFY_PROBES_ATTACHED=")
	var stdout, stderr testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done, waitErr := background(t, cmd)
	waitFor := func(b *testenv.Buffer, s string) {
		t.Helper()
		for deadline := time.Now().Add(runTimeout); !strings.Contains(b.String(), s); {
			select {
			case <-done:
				t.Fatalf("kinst ended (%v) before printing %q\nstdout:\n%s\nstderr:\n%s", *waitErr, s, stdout.String(), stderr.String())
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q within %v\nstdout:\n%s\nstderr:\n%s", s, runTimeout, stdout.String(), stderr.String())
			}
		}
	}
	waitFor(&stdout, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n")
	cmd.Process.Signal(syscall.SIGUSR1)
	waitFor(&stdout, "signal 1 then 2\n")
	cmd.Process.Signal(syscall.SIGUSR1)
	waitFor(&stdout, "signal 2 then 3\n")
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, *waitErr)}
	res.want(t, 0, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\nsignal 1 then 2\nsignal 2 then 3\n\n\n@a: 3\n", "Attached 3 probes\n")
}

// self:signal takes SIGUSR1 only, as in bpftrace.
func TestSelfSignalErrors(t *testing.T) {
	testenv.Root(t)
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", "self:signal:SIGUSR2 { }").want(t, 1, "",
		"-e:1:1: self:signal takes SIGUSR1 only, not SIGUSR2\nself:signal:SIGUSR2 { }\n^~~~~~~~~~~~~~~~~~~\n")
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", "self:exit { }").want(t, 1, "",
		"-e:1:1: self probes are written self:signal:SIGUSR1\nself:exit { }\n^~~~~~~~~\n")
}
