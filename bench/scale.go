package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scaleProbes is how many functions the probes item's library holds,
// and scaleEntries how many elements the bigmap item's map.
const (
	scaleProbes  = 10_000
	scaleEntries = 1_000_000
)

// attachedLine is bpftrace 0.17's "Attaching N probes..." and kinst's
// (and 0.26.1's) "Attached N probes".
var attachedLine = regexp.MustCompile(`^Attach(?:ing|ed) (\d+) probes?`)

// probes measures a run with ten thousand uprobes attached, one per
// function of a shared library the bench builds with gcc, around
// /bin/true: the wall time (attaching and detaching them all) and the
// peak RSS. The library is not loaded by either tool, so no probe fires.
// bpftrace 0.17 opens a perf event for each uprobe, which takes the
// kernel long enough that one run lasts many minutes (about twenty on
// the bench's 2-CPU host): each tool runs once, without a warm-up, with
// an hour's timeout and room for a descriptor per probe.
func (b *bench) probes() []*row {
	defer func(t time.Duration) { b.runner.timeout = t }(b.runner.timeout)
	b.runner.timeout = max(b.runner.timeout, time.Hour)
	restore, err := raiseFileLimit(4 * scaleProbes)
	if err != nil {
		b.fail("probes", "bench", err)
		return nil
	}
	defer restore()
	lib, err := b.probeLibrary()
	if err != nil {
		b.fail("probes", "bench", err)
		return nil
	}
	prog := fmt.Sprintf("uprobe:%s:probe10k_* { @ = count(); }", lib)
	wall, rss := figures{}, figures{}
	fmt.Fprintf(b.log, "bench: probes: one run of %s\n", strings.Join(b.order, ", "))
	for _, tool := range b.order {
		argv := []string{"env", fmt.Sprintf("BPFTRACE_MAX_PROBES=%d", 2*scaleProbes), b.tools[tool], "-e", prog, "-c", "/bin/true"}
		r, err := b.runner.run(argv, "")
		if err == nil && r.out.attached < scaleProbes {
			err = fmt.Errorf("attached %d probes, want %d: %s", r.out.attached, scaleProbes, tail(r.stderr, 400))
		}
		if err != nil {
			b.fail("probes", tool, err)
			continue
		}
		b.logRun("probes", tool, 0, "wall %v, max RSS %d", ns(r.wall()), r.maxRSS)
		wall.add(tool, float64(r.wall()))
		rss.add(tool, float64(r.maxRSS))
	}
	return []*row{
		wall.row("10,000 uprobes -c /bin/true wall", nanos, ratioAtMost(1)),
		rss.row("10,000 uprobes -c /bin/true peak RSS", byteSize, kinstPeakAtMost(64*mib, "kinst <= 64 MiB")),
	}
}

// parseAttached reads bpftrace 0.17's "Attaching N probes..." line, on
// standard output, or kinst's (and 0.26.1's) "Attached N probes", on
// standard error.
func parseAttached(line []byte) (int, bool) {
	m := attachedLine.FindSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	return n, err == nil
}

// raiseFileLimit raises the open-file limit the tools inherit towards n,
// as far as the hard limit allows where it may not be raised, and
// returns what puts the old one back. Go starts children with the limit
// its process began with unless the limit was set since.
func raiseFileLimit(n uint64) (restore func(), err error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return nil, err
	}
	lim := syscall.Rlimit{Cur: max(old.Cur, n), Max: max(old.Max, n)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		lim = syscall.Rlimit{Cur: old.Max, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return nil, fmt.Errorf("raise the open-file limit to %d: %w", old.Max, err)
		}
	}
	return func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }, nil
}

// probeLibrary writes and compiles a shared library of scaleProbes
// functions, each with a symbol of its own size.
func (b *bench) probeLibrary() (string, error) {
	src := filepath.Join(b.tmp, "probe10k.c")
	lib := filepath.Join(b.tmp, "libprobe10k.so")
	var sb strings.Builder
	for i := range scaleProbes {
		fmt.Fprintf(&sb, "int probe10k_%05d(int x) { return x + %d; }\n", i, i)
	}
	if err := os.WriteFile(src, []byte(sb.String()), 0o644); err != nil {
		return "", err
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("the probes item builds its library with gcc: %w", err)
	}
	if out, err := exec.Command(gcc, "-O1", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc: %w: %s", err, tail(string(out), 400))
	}
	return lib, nil
}

// bigmap measures a run whose map holds a million elements when it is
// printed at exit: the workload's getppid calls each add one.
func (b *bench) bigmap() []*row {
	prog := "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @m[@n] = 1; @n = @n + 1; }"
	wall, rss := figures{}, figures{}
	n := strconv.Itoa(scaleEntries)
	b.repeatN("bigmap", b.longReps(), b.order, func(tool string, rep int) error {
		argv := []string{"env", fmt.Sprintf("BPFTRACE_MAP_KEYS_MAX=%d", scaleEntries), b.tools[tool], "-e", prog, "-c", b.workload + " getppid " + n}
		r, err := b.runner.run(argv, "")
		if err != nil {
			return err
		}
		if got := r.out.sums["@m"]; got != scaleEntries {
			return fmt.Errorf("printed %d elements of @m, want %d", got, scaleEntries)
		}
		b.logRun("bigmap", tool, rep, "wall %v, max RSS %d", ns(r.wall()), r.maxRSS)
		if rep >= 0 {
			wall.add(tool, float64(r.wall()))
			rss.add(tool, float64(r.maxRSS))
		}
		return nil
	})
	return []*row{
		wall.row("1,000,000-element map printed at exit wall", nanos, ratioAtMost(1)),
		rss.row("1,000,000-element map printed at exit peak RSS", byteSize, ratioAtMost(1)),
	}
}

// longReps is the repetitions of the items that take seconds a run.
func (b *bench) longReps() int { return min(b.reps, 3) }
