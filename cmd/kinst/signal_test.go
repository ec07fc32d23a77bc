package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// background starts cmd and waits for it in a goroutine: done closes once
// it has ended, and *waitErr then holds what Wait returned. The test kills
// it if it is still running at the end.
func background(t *testing.T, cmd *exec.Cmd) (done <-chan struct{}, waitErr *error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	waitErr = new(error)
	go func() {
		*waitErr = cmd.Wait()
		close(ch)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-ch
	})
	return ch, waitErr
}

// stopBound is how long kinst may take to end once signalled, measured
// from outside, besides detaching: the promise is 100 ms, kinst takes
// under 10 ms on an idle machine, and the rest is room for a test
// machine shared with other work.
const stopBound = time.Second

// A signal ends kinst promptly whatever step it is in, and leaves
// nothing behind: no program, no link, no uprobe event, no -c command.
// KINST_INJECT holds kinst in the step, and kinst names the step on
// standard error as it enters it. Until BEGIN has run, the signal ends
// kinst as it would any process (status 130 for SIGINT); from then on it
// stops the run, rolls back an attach in progress, runs END and prints
// the maps; one arriving while the run already ends, as after exit() or
// a first signal, ends kinst at once.
func TestSignalAtEveryStep(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf, testenv.PerfEvent, testenv.Uprobe)
	bin := target(t)
	// The count maps print as 0 where nothing was counted, as in bpftrace.
	const full = "Attaching 5 probes...\n\n\n@a: 0\n@end: 1\n@g: 0\n@r: 0\n@t: 0\n"
	steps := []struct {
		name   string
		inject string // KINST_INJECT
		at     string // the step's line kinst prints before the signal
		nth    int    // the how-manieth such line
		exit   bool   // the program ends itself with exit()
		second string // the step's line before a second signal, if any
		killed bool   // kinst ends by the signal, not with status 0
		stdout string // what it printed, where that is known
	}{
		{name: "compile", inject: "compile.delay=1m", at: "compile", nth: 1, killed: true, stdout: ""},
		// The second program's load: the first is in the kernel.
		{name: "load", inject: "load.delay=1m@2", at: "load", nth: 1, killed: true, stdout: ""},
		// The third program's attach: two are attached and are rolled back.
		{name: "attach", inject: "attach.delay=1m@3", at: "attach", nth: 1, stdout: full},
		{name: "run", at: "attached", nth: 1, stdout: full},
		{name: "end", inject: "end.delay=1m", at: "end", nth: 1, exit: true, killed: true, stdout: "Attaching 6 probes...\n"},
		{name: "print", inject: "print.delay=1m", at: "print", nth: 1, exit: true, killed: true, stdout: "Attaching 6 probes...\n"},
		// The first signal stops the run; detaching is held, and the
		// second forces the exit with everything printed.
		{name: "detach", inject: "detach.delay=1m", at: "attached", nth: 1, second: "detach", killed: true, stdout: full},
	}
	for _, step := range steps {
		// SIGKILL gives kinst no say: the kernel's closing of its
		// descriptors and the -c command's parent-death signal must
		// leave nothing behind.
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(step.name+"/"+sig.String(), func(t *testing.T) {
				mark := newMark()
				ms := strconv.FormatInt(600000+mark%1000000, 10)
				prog := fmt.Sprintf(`uprobe:%[1]s:kinst_add /pid == %[2]d/ { @a = count(); }
uprobe:%[1]s:kinst_greet /pid == %[2]d/ { @g = count(); }
uretprobe:%[1]s:kinst_add /pid == %[2]d/ { @r = count(); }
tracepoint:syscalls:sys_enter_getppid /pid == %[2]d/ { @t = count(); }
END { @end = 1; }
`, bin, mark)
				if step.exit {
					prog += "interval:ms:50 { exit(); }\n"
				}
				cmd := exec.Command(testenv.Kinst(t), "-v", "-e", prog, "-c", bin+" sleep "+ms)
				cmd.Env = append(os.Environ(), "KINST_INJECT="+step.inject, "__BPFTRACE_NOTIFY_PROBES_ATTACHED=1")
				cmd.WaitDelay = waitDelay
				var stdout, stderr testenv.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				done, waitErr := background(t, cmd)
				line := "kinst: inject: 1m0s at " + step.at + "\n"
				if step.at == "attached" {
					line = "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"
				}
				var held bpfHeld
				for deadline := time.Now().Add(runTimeout); strings.Count(stderr.String(), line) < step.nth; {
					select {
					case <-done:
						t.Fatalf("kinst ended (%v) before %q\nstdout:\n%s\nstderr:\n%s", *waitErr, line, stdout.String(), stderr.String())
					case <-time.After(5 * time.Millisecond):
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %q within %v\nstderr:\n%s", line, runTimeout, stderr.String())
					}
				}
				held, _ = heldBy(cmd.Process.Pid)
				if step.name == "attach" && len(held.links) == 0 {
					t.Fatal("nothing attached before the signal: the roll-back would go untested")
				}
				sent := time.Now()
				cmd.Process.Signal(sig)
				kill := sig == syscall.SIGKILL
				if step.second != "" && !kill {
					// Detaching starts beside END and the print, so the
					// second signal waits for what they write as well.
					for !strings.Contains(stderr.String(), " at "+step.second+"\n") || stdout.String() != step.stdout {
						select {
						case <-done:
							t.Fatalf("kinst ended (%v) before its second signal\nstdout:\n%s\nstderr:\n%s", *waitErr, stdout.String(), stderr.String())
						case <-time.After(5 * time.Millisecond):
						}
					}
					sent = time.Now()
					cmd.Process.Signal(sig)
				}
				select {
				case <-done:
				case <-time.After(runTimeout):
					t.Fatalf("kinst did not end within %v of %v\nstderr:\n%s", runTimeout, sig, stderr.String())
				}
				// Detaching a uprobe waits for the kernel's grace periods,
				// which no way of ending saves: the kernel closes the
				// links of a process that ends as it would.
				took := time.Since(sent)
				var detach time.Duration
				if m := detachedLine.FindStringSubmatch(stderr.String()); m != nil {
					detach, _ = time.ParseDuration(m[1])
				}
				t.Logf("ended %v after the signal, %v of it detaching", took, detach)
				// Forced out while detaching, kinst leaves the links for
				// the kernel to close as the process ends, and so says
				// nothing of how long that took.
				if step.second != "detach" && !kill && took-detach > stopBound {
					t.Errorf("kinst took %v to end after %v, %v of it detaching, want less than %v besides", took, sig, detach, stopBound)
				}
				code := exitCode(t, *waitErr)
				var ee *exec.ExitError
				switch {
				case (step.killed || kill) && !(errors.As(*waitErr, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == sig):
					t.Errorf("exit status %d, want an end by %v", code, sig)
				case !step.killed && !kill && code != 0:
					t.Errorf("exit status %d, want 0", code)
				}
				if got := stdout.String(); got != step.stdout && !kill {
					t.Errorf("stdout:\n%s\nwant:\n%s", got, step.stdout)
				}
				for _, l := range strings.SplitAfter(stderr.String(), "\n") {
					if l != "" && !strings.HasPrefix(l, "kinst: inject: ") && l != "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n" && !verboseLine.MatchString(l) {
						t.Errorf("unexpected on stderr: %q", l)
					}
				}
				checkGone(t, held, mark)
				checkNoProcess(t, "sleep", ms)
				checkNoUprobeEvent(t, bin)
			})
		}
	}
}

// What -v adds to standard error.
var (
	detachedLine = regexp.MustCompile(`(?m)^kinst: detached \d+ links in (\S+)$`)
	verboseLine  = regexp.MustCompile(`^kinst: (detached \d+ links|attached \S+|\S+ \(\d+ targets\):) `)
)

// checkNoUprobeEvent fails t if a uprobe event of tracefs names path:
// links made through the perf PMU leave none, but a legacy uprobe made
// through tracefs would.
func checkNoUprobeEvent(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(tracefs(t) + "/uprobe_events")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, path) {
			t.Errorf("uprobe event left in tracefs: %s", l)
		}
	}
}

// SIGINT ends kinst at once while probes call system() faster than its
// commands end: the command in progress is killed and those queued
// behind it never start, where each would otherwise hold kinst for its
// whole duration.
func TestSignalDuringSystemFlood(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	// A duration no other process sleeps for, to find leftovers by.
	secs := fmt.Sprintf("3.%06d", newMark()%1000000)
	k := start(t, "--unsafe", "-e", `interval:ms:5 { system("sleep `+secs+`"); }`)
	// Wait for the first command, and let records pile up behind it.
	for deadline := time.Now().Add(runTimeout); len(testenv.ProcessesMentioning("sleep\x00"+secs+"\x00")) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no system() command ran within %v", runTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	sent := time.Now()
	k.signal(t, syscall.SIGINT)
	r := k.wait(t)
	took := time.Since(sent)
	t.Logf("ended %v after the signal", took)
	if took > stopBound {
		t.Errorf("kinst took %v to end after SIGINT during system() calls, want less than %v", took, stopBound)
	}
	r.want(t, 0, "Attaching 1 probe...\n\n\n", "")
	checkNoProcess(t, "sleep", secs)
}

// SIGUSR1 prints the maps as at exit, without the blank lines before
// them, and the run goes on; with __BPFTRACE_NOTIFY_PROBES_ATTACHED set
// (even empty, as bpftrace reads it), kinst says on standard error when
// its probes are attached.
func TestSignalPrintsMaps(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	cmd := exec.Command(testenv.Kinst(t), "-e", `BEGIN { @a = 1; @b[1, "x"] = 2; } interval:s:100 { @c = count(); }`)
	cmd.Env = append(os.Environ(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED=")
	var stdout, stderr testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done, waitErr := background(t, cmd)
	waitFor := func(b *testenv.Buffer, s string, n int) {
		t.Helper()
		for deadline := time.Now().Add(runTimeout); strings.Count(b.String(), s) < n; {
			select {
			case <-done:
				t.Fatalf("kinst ended (%v) before printing %q %d times\nstdout:\n%s\nstderr:\n%s", *waitErr, s, n, stdout.String(), stderr.String())
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q %d times within %v\nstdout:\n%s", s, n, runTimeout, stdout.String())
			}
		}
	}
	waitFor(&stderr, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n", 1)
	const maps = "@a: 1\n@b[1, x]: 2\n@c: 0\n"
	for n := 1; n <= 2; n++ {
		cmd.Process.Signal(syscall.SIGUSR1)
		waitFor(&stdout, maps, n)
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, *waitErr)}
	res.want(t, 0, "Attaching 2 probes...\n"+maps+maps+"\n\n"+maps, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n")
}

// SIGINT ends kinst promptly when its standard output is a pipe nobody
// reads: the maps could never be printed, and the write kinst is blocked
// in would hold it for ever.
func TestSignalWithStalledOutput(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	cmd := exec.Command(testenv.Kinst(t), "-e", `interval:ms:1 { printf("%0200d\n", 1); @n = count(); }`)
	out, err := cmd.StdoutPipe() // never read
	if err != nil {
		t.Fatal(err)
	}
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	done, waitErr := background(t, cmd)
	defer out.Close()
	// A pipe holds 64 KiB: 330 lines of 201 bytes fill it, and the
	// 64 KiB kinst buffers on top take as many again.
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(runTimeout):
		t.Fatalf("kinst did not end within %v of SIGINT with its output stalled", runTimeout)
	}
	took := time.Since(sent)
	t.Logf("ended %v after the signal", took)
	if took > stopBound {
		t.Errorf("kinst took %v to end after SIGINT with its output stalled, want less than %v", took, stopBound)
	}
	var ee *exec.ExitError
	if !errors.As(*waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("kinst ended with %v, want an end by SIGINT\nstderr:\n%s", *waitErr, stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Errorf("stderr:\n%s", s)
	}
}

// A second signal milliseconds after the first, as timeout -s INT sends
// one to kinst and then one to its process group, leaves the first its
// moment to print the maps; one the first has not made good a second
// later still forces the exit then. The second is SIGTERM: two SIGINTs
// pending at once are one for the kernel, which a loaded machine shows.
func TestSignalTwiceAtOnce(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	for _, tc := range []struct {
		name   string
		inject string // KINST_INJECT
		killed bool   // ended by the second signal
		stdout string
	}{
		// END held a moment, as a large map's printing would hold it.
		{"maps print", "end.delay=300ms", false, "Attaching 3 probes...\n\n\n@a: 1\n@end: 2\n"},
		// END held a minute: the second signal ends kinst after a second.
		{"end held", "end.delay=1m", true, "Attaching 3 probes...\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(testenv.Kinst(t), "-e", `BEGIN { @a = 1; } interval:s:100 { } END { @end = 2; }`)
			cmd.Env = append(os.Environ(), "KINST_INJECT="+tc.inject, "__BPFTRACE_NOTIFY_PROBES_ATTACHED=1")
			var stdout, stderr testenv.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			done, waitErr := background(t, cmd)
			for deadline := time.Now().Add(runTimeout); !strings.Contains(stderr.String(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("kinst did not attach within %v\nstderr:\n%s", runTimeout, stderr.String())
				}
			}
			sent := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			time.Sleep(5 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(runTimeout):
				t.Fatalf("kinst did not end within %v of two signals", runTimeout)
			}
			took := time.Since(sent)
			var ee *exec.ExitError
			killed := errors.As(*waitErr, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM
			switch {
			case killed != tc.killed:
				t.Errorf("kinst ended with %v; want an end by SIGTERM: %v", *waitErr, tc.killed)
			case !tc.killed && *waitErr != nil:
				t.Errorf("kinst ended with %v, want status 0", *waitErr)
			case tc.killed && (took < time.Second || took > time.Second+stopBound):
				t.Errorf("kinst ended %v after the first signal, want a second after it", took)
			}
			if got := stdout.String(); got != tc.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tc.stdout)
			}
		})
	}
}
