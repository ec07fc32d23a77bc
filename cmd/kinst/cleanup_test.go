package main

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"kinst.dev/kinst/internal/testenv"
)

// Nothing kinst loads or attaches outlives it, whichever way it ends, and
// neither does its -c command.
//
// Programs are what everything else holds on to: a link, a perf event or
// a pinned file attached to a program keeps it, and so its ID, alive. So
// each test marks its program with a constant of its own and, once kinst
// has ended, looks for any program in the kernel carrying it.

// bpfHeld is what a process holds open: program and link IDs, from the
// prog_id and link_id lines of its fdinfo.
type bpfHeld struct {
	progs map[ebpf.ProgramID]bool
	links []link.ID
}

func heldBy(pid int) (bpfHeld, error) {
	held := bpfHeld{progs: map[ebpf.ProgramID]bool{}}
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return held, err
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		sc := bufio.NewScanner(f)
		isLink := false
		var prog uint64
		for sc.Scan() {
			name, value, _ := strings.Cut(sc.Text(), ":")
			n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 32)
			switch {
			case err != nil:
			case name == "link_id":
				held.links = append(held.links, link.ID(n))
				isLink = true
			case name == "prog_id":
				prog = n
			}
		}
		f.Close()
		if prog != 0 && !isLink {
			held.progs[ebpf.ProgramID(prog)] = true
		}
	}
	return held, nil
}

// waitAttached waits until the background kinst holds n links, which it
// creates last, once per attached probe target.
func (r *running) waitAttached(t *testing.T, n int) bpfHeld {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	for {
		held, err := heldBy(r.cmd.Process.Pid)
		if err == nil && len(held.links) >= n {
			return held
		}
		select {
		case <-r.done:
			t.Fatalf("kinst ended before attaching %d probes: %v\nstdout:\n%s\nstderr:\n%s", n, r.err, &r.stdout, &r.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kinst did not attach %d probes within %v", n, runTimeout)
		}
	}
}

// marked returns the IDs of the programs whose instructions use the
// constant mark.
func marked(t *testing.T, mark int64) []ebpf.ProgramID {
	t.Helper()
	var ids []ebpf.ProgramID
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return ids
		}
		if err != nil {
			t.Fatalf("list BPF programs: %v", err)
		}
		id = next
		prog, err := ebpf.NewProgramFromID(id)
		if errors.Is(err, os.ErrNotExist) {
			continue // unloaded meanwhile
		}
		if err != nil {
			t.Fatalf("open BPF program %d: %v", id, err)
		}
		info, err := prog.Info()
		prog.Close()
		if err != nil {
			t.Fatalf("BPF program %d: %v", id, err)
		}
		insns, err := info.Instructions()
		if err != nil {
			continue // the kernel shows no instructions for some programs
		}
		for _, ins := range insns {
			if ins.Constant == mark {
				ids = append(ids, id)
				break
			}
		}
	}
}

// newMark returns a constant for a program to compare the pid with, that
// no other program is likely to hold and no process has as its pid.
func newMark() int64 { return 0x40000000 + rand.Int64N(0x3fffffff) }

// checkGone fails t unless, within a few seconds of kinst's end, the
// kernel holds none of the programs nor links kinst held, and no program
// carries mark. Releasing a perf event attachment can lag its close.
func checkGone(t *testing.T, held bpfHeld, mark int64) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		left = left[:0]
		for id := range held.progs {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				p.Close()
				left = append(left, fmt.Sprintf("program %d", id))
			}
		}
		for _, id := range held.links {
			if l, err := link.NewFromID(id); err == nil {
				l.Close()
				left = append(left, fmt.Sprintf("link %d", id))
			}
		}
		for _, id := range marked(t, mark) {
			left = append(left, fmt.Sprintf("program %d (marked)", id))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("still in the kernel after kinst ended: %s", strings.Join(left, ", "))
	}
}

// checkNoProcess fails t if a process still runs with args on its
// command line.
func checkNoProcess(t *testing.T, args ...string) {
	t.Helper()
	s := strings.Join(args, "\x00") + "\x00"
	for deadline := time.Now().Add(5 * time.Second); ; {
		pids := testenv.ProcessesMentioning(s)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the -c command %q still runs as %v after kinst ended", args, pids)
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A signal stops kinst: it detaches, prints, exits 0, ends its -c
// command and leaves nothing loaded.
func TestSignalLeavesNothing(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf, testenv.PerfEvent)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			mark := newMark()
			prog := fmt.Sprintf(`tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @ = count(); } interval:ms:50 { @ticks = count(); } END { @end = 1; }`, mark)
			// A command that would run for ten minutes, with a
			// duration no other process has.
			ms := strconv.FormatInt(600000+mark%1000000, 10)
			k := start(t, "-q", "-e", prog, "-c", target(t)+" sleep "+ms)
			held := k.waitAttached(t, 2)
			if len(held.progs) == 0 {
				t.Fatalf("kinst holds no programs while attached: fdinfo shows links %v", held.links)
			}
			if ids := marked(t, mark); len(ids) == 0 {
				t.Fatal("no program carries the mark while kinst runs: the check after it ends would prove nothing")
			}
			k.signal(t, sig)
			r := k.wait(t)
			if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "\n@end: 1\n") {
				t.Errorf("exit status %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			checkGone(t, held, mark)
			checkNoProcess(t, "sleep", ms)
		})
	}
}

// When attaching fails part way, after some probes are attached, kinst
// says why, exits 1, and leaves nothing attached nor its command running.
// The failure is a limit on open files that a first run, with no limit,
// shows to leave room for about half of the probes' perf events and links.
func TestAttachFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to lower the open file limit with: %v", err)
	}
	bin := target(t)
	syscalls := []string{"read", "write", "openat", "close", "getppid", "getpid", "gettid", "nanosleep", "mmap", "munmap", "brk", "dup"}
	probes := func(mark int64) string {
		var prog strings.Builder
		for _, name := range syscalls {
			fmt.Fprintf(&prog, "tracepoint:syscalls:sys_enter_%s /pid == %d/ { @[probe] = count(); }\n", name, mark)
		}
		return prog.String()
	}

	k := start(t, "-q", "-e", probes(newMark()))
	k.waitAttached(t, len(syscalls))
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", k.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	k.signal(t, syscall.SIGTERM)
	k.wait(t)
	// Each probe holds a perf event and a link.
	limit := len(fds) - len(syscalls)

	// failAttach runs kinst -v on prog with a -c command that sleeps ms
	// milliseconds, under the limit, and checks that attaching fails
	// with the open-file limit's error; it returns how many probes had
	// attached (-v says each).
	failAttach := func(t *testing.T, prog string, ms int64) int {
		t.Helper()
		cmd := exec.Command(sh, "-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(limit),
			testenv.Kinst(t), "-q", "-v", "-e", prog, "-c", bin+" sleep "+strconv.FormatInt(ms, 10))
		cmd.WaitDelay = waitDelay
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := exitCode(t, cmd.Run())
		checkNoPanic(t, stderr.String())
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		last := regexp.MustCompile(`^kinst: \d+ probes exceed the open-file limit of ` + strconv.Itoa(limit) + ` `)
		if code != 1 || stdout.String() != "" || !last.MatchString(lines[len(lines)-1]) {
			t.Errorf("with %d files open at most: exit status %d\nstdout:\n%s\nstderr:\n%s\nwant status 1 and the open-file limit's error",
				limit, code, stdout.String(), stderr.String())
			return 0
		}
		return strings.Count(stderr.String(), "kinst: attached tracepoint:")
	}

	t.Run("probes", func(t *testing.T) {
		t.Parallel()
		mark := newMark()
		ms := 600000 + mark%1000000
		// The first probe attached, so there was something to detach.
		if n := failAttach(t, probes(mark), ms); n < 1 {
			t.Errorf("%d probes attached before the failure, want at least one", n)
		}
		checkGone(t, bpfHeld{}, mark)
		checkNoProcess(t, "sleep", strconv.FormatInt(ms, 10))
	})
	// Running out of files is no reason to skip a wildcard's targets,
	// as targets the kernel refuses are skipped: every later one would
	// fail the same way, and kinst would trace a fraction of them.
	// The wildcard is not one of syscalls tracepoints, which kinst
	// attaches as one perf event on raw_syscalls.
	t.Run("wildcard", func(t *testing.T) {
		t.Parallel()
		mark := newMark()
		ms := 5000 + mark%1000 // what kinst runs for if it does not fail
		failAttach(t, fmt.Sprintf("tracepoint:sched:sched_* /pid == %d/ { @[probe] = count(); }", mark), ms)
		checkGone(t, bpfHeld{}, mark)
		checkNoProcess(t, "sleep", strconv.FormatInt(ms, 10))
	})
}
