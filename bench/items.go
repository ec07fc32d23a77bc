package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const mib = 1 << 20

// The programs both tools run.
const (
	progBegin  = "BEGIN { exit(); }"
	progHeader = "#include <sys/socket.h>\nBEGIN { @ = AF_INET; exit(); }"
	progOpenat = "tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }"
	progCount  = "tracepoint:syscalls:sys_enter_getppid { @[comm] = count(); }"
	progEmpty  = "tracepoint:syscalls:sys_enter_getppid { }"
	progAllSys = "tracepoint:syscalls:sys_enter_* { @[probe] = count(); }"
	progPrintf = `tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%d %s\n", tid, comm); }`
)

// bare names the workload run without a tool, beside the tools' names.
const bare = "bare"

// A bench holds what the measurements share.
type bench struct {
	reps         int
	events       int // getppid calls for the cost per event
	printfEvents int // getppid calls for printf throughput
	soakTime     time.Duration
	soakRate     int // getppid calls a second in the soak
	tools        map[string]string
	order        []string // tool names: kinst, then bpftrace if present
	self         string   // this executable, the -c helper
	workload     string
	comm         string // the workload's comm, as probes see it
	tmp          string
	runner       *runner
	log          io.Writer // progress and, with verbose, every run
	verbose      bool

	failures []failure
	notes    []string
}

// A failure is a run that gave no figure: the first error of its kind
// and how often it happened.
type failure struct {
	item, actor string
	err         error
	count       int
}

func (b *bench) fail(item, actor string, err error) {
	for i := range b.failures {
		if f := &b.failures[i]; f.item == item && f.actor == actor {
			f.count++
			return
		}
	}
	b.failures = append(b.failures, failure{item, actor, err, 1})
}

func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// repeat calls fn for every actor in every repetition, the order
// rotating from one repetition to the next, after a warm-up repetition
// (rep -1) whose figures fn must drop.
func (b *bench) repeat(item string, actors []string, fn func(actor string, rep int) error) {
	b.repeatN(item, b.reps, actors, fn)
}

// repeatN is repeat with reps repetitions.
func (b *bench) repeatN(item string, reps int, actors []string, fn func(actor string, rep int) error) {
	fmt.Fprintf(b.log, "bench: %s: %d repetitions of %s\n", item, reps, strings.Join(actors, ", "))
	for rep := -1; rep < reps; rep++ {
		for i := range actors {
			a := actors[(i+rep+1)%len(actors)]
			if err := fn(a, rep); err != nil {
				b.fail(item, a, err)
			}
		}
	}
}

func (b *bench) logRun(item, actor string, rep int, format string, args ...any) {
	if b.verbose {
		fmt.Fprintf(b.log, "  %s %s rep %d: %s\n", item, actor, rep, fmt.Sprintf(format, args...))
	}
}

// figures collects one figure's samples per tool.
type figures map[string]series

func (f figures) add(tool string, v float64) { f[tool] = append(f[tool], v) }

func (f figures) row(name string, u unit, t target) *row {
	return &row{name: name, unit: u, kinst: f["kinst"], bpftrace: f["bpftrace"], target: t}
}

// sizes compares what each tool brings onto a disk.
func (b *bench) sizes() []*row {
	size, libs := figures{}, figures{}
	for _, name := range b.order {
		measure := dynamicFootprint
		if name == "kinst" {
			measure = staticFootprint
		}
		fp, err := measure(b.tools[name])
		if err != nil {
			b.fail("size", name, err)
			continue
		}
		size.add(name, float64(fp.size))
		libs.add(name, float64(len(fp.libs)))
		if name == "kinst" && len(fp.libs) > 0 {
			b.note("kinst is not static: it needs %s", strings.Join(fp.libs, ", "))
		}
	}
	return []*row{
		size.row("binary with shared libraries", byteSize, kinstMedianAtMost(12*mib, "kinst <= 12 MiB")),
		libs.row("shared libraries and loader", number, kinstMedianAtMost(0, "kinst 0 (static)")),
	}
}

// begin times a program that exits at once.
func (b *bench) begin() []*row {
	wall, rss := figures{}, figures{}
	b.repeat("begin", b.order, func(tool string, rep int) error {
		r, err := b.runner.run([]string{b.tools[tool], "-e", progBegin}, "")
		if err != nil {
			return err
		}
		b.logRun("begin", tool, rep, "wall %v, max RSS %d", ns(r.wall()), r.maxRSS)
		if rep >= 0 {
			wall.add(tool, float64(r.wall()))
			rss.add(tool, float64(r.maxRSS))
		}
		return nil
	})
	return []*row{
		wall.row("BEGIN { exit(); } wall", nanos, kinstMedianAtMost(10e6, "kinst <= 10 ms")),
		rss.row("BEGIN { exit(); } peak RSS", byteSize, kinstPeakAtMost(30*mib, "kinst <= 30 MiB")),
	}
}

// header times a program that includes a glibc header for one of its
// constants: about twenty files of preprocessor directives. kinst keeps
// what they define in its cache, which the warm-up repetition fills.
func (b *bench) header() []*row {
	wall := figures{}
	b.repeat("header", b.order, func(tool string, rep int) error {
		r, err := b.runner.run([]string{b.tools[tool], "-e", progHeader}, "")
		if err != nil {
			return err
		}
		if v, ok := r.out.mapValue("@"); !ok || v != 2 {
			return fmt.Errorf("no @: 2 (AF_INET) in the map printed: %q", r.out.maps)
		}
		b.logRun("header", tool, rep, "wall %v", ns(r.wall()))
		if rep >= 0 {
			wall.add(tool, float64(r.wall()))
		}
		return nil
	})
	return []*row{wall.row("#include <sys/socket.h> BEGIN wall", nanos, kinstMedianAtMost(10e6, "kinst <= 10 ms"))}
}

// tracepoint times a counting tracepoint program around /bin/true.
func (b *bench) tracepoint() []*row {
	wall, rss := figures{}, figures{}
	// A dynamic /bin/true opens its libraries, so the map must count it;
	// a static one, such as busybox's, opens nothing.
	fp, err := staticFootprint("/bin/true")
	opens := err == nil && len(fp.libs) > 0
	b.repeat("tracepoint", b.order, func(tool string, rep int) error {
		r, err := b.runner.run([]string{b.tools[tool], "-e", progOpenat, "-c", "/bin/true"}, "")
		if err != nil {
			return err
		}
		if _, ok := r.out.mapValue("@[true]"); opens && !ok {
			return fmt.Errorf("no @[true] in the map printed: %q", r.out.maps)
		}
		b.logRun("tracepoint", tool, rep, "wall %v, max RSS %d", ns(r.wall()), r.maxRSS)
		if rep >= 0 {
			wall.add(tool, float64(r.wall()))
			rss.add(tool, float64(r.maxRSS))
		}
		return nil
	})
	return []*row{
		wall.row("openat count -c /bin/true wall", nanos, kinstMedianAtMost(100e6, "kinst <= 100 ms")),
		rss.row("openat count -c /bin/true peak RSS", byteSize, kinstPeakAtMost(30*mib, "kinst <= 30 MiB")),
	}
}

// syscalls times a program on every syscalls tracepoint around
// /bin/true: attaching and detaching hundreds of tracepoints, which one
// perf event each makes seconds of the kernel's grace periods.
func (b *bench) syscalls() []*row {
	wall := figures{}
	b.repeat("syscalls", b.order, func(tool string, rep int) error {
		r, err := b.runner.run([]string{b.tools[tool], "-e", progAllSys, "-c", "/bin/true"}, "")
		if err != nil {
			return err
		}
		// Every process that ends calls exit_group, /bin/true too.
		if _, ok := r.out.mapValue("@[tracepoint:syscalls:sys_enter_exit_group]"); !ok {
			return fmt.Errorf("no @[tracepoint:syscalls:sys_enter_exit_group] in the map printed: %q", r.out.maps)
		}
		b.logRun("syscalls", tool, rep, "wall %v", ns(r.wall()))
		if rep >= 0 {
			wall.add(tool, float64(r.wall()))
		}
		return nil
	})
	return []*row{wall.row("sys_enter_* count -c /bin/true wall", nanos, kinstMedianAtMost(2e9, "kinst <= 2 s"))}
}

// latency measures how long after its -c command ends a tool prints the
// maps and exits. The command is this executable writing the time just
// before it exits, so the time from the tool's start to that stamp is
// the tool's start-up and attachment, plus the helper's own start.
func (b *bench) latency() []*row {
	ready, maps, exit := figures{}, figures{}, figures{}
	stamp := filepath.Join(b.tmp, "exit-stamp")
	b.repeat("latency", b.order, func(tool string, rep int) error {
		os.Remove(stamp)
		child := strings.Join([]string{b.self, childArg, exitStamp, stamp}, " ")
		r, err := b.runner.run([]string{b.tools[tool], "-e", progOpenat, "-c", child}, "")
		if err != nil {
			return err
		}
		end, err := readNanos(stamp)
		if err != nil {
			return fmt.Errorf("the -c command left no stamp: %w", err)
		}
		if r.out.firstMap == 0 {
			return fmt.Errorf("no map printed")
		}
		b.logRun("latency", tool, rep, "command ended %v after start; maps after %v, exit after %v",
			ns(end-r.start), ns(r.out.firstMap-end), ns(r.exit-end))
		if rep >= 0 {
			ready.add(tool, float64(end-r.start))
			maps.add(tool, float64(r.out.firstMap-end))
			exit.add(tool, float64(r.exit-end))
		}
		return nil
	})
	return []*row{
		ready.row("-c command exit after tool start", nanos, target{}),
		maps.row("maps printed after -c command exit", nanos, kinstMedianAtMost(30e6, "kinst <= 30 ms")),
		exit.row("tool exit after -c command exit", nanos, target{}),
	}
}

// perEvent measures what a counting probe adds to each getppid call:
// the workload's CPU time, taken by a helper around it, with the tool
// attached less without; and, against it, what an empty probe on the
// same tracepoint adds, which is the floor the kernel sets for any
// tool.
func (b *bench) perEvent() []*row {
	actors := []string{bare}
	for _, tool := range b.order {
		actors = append(actors, tool, tool+emptySuffix)
	}
	times := map[string][]float64{}
	for _, a := range actors {
		times[a] = nanSlice(b.reps)
	}
	file := filepath.Join(b.tmp, "workload-time")
	n := strconv.Itoa(b.events)
	b.repeat("per-event", actors, func(actor string, rep int) error {
		os.Remove(file)
		child := []string{b.self, childArg, cpuTime, file, b.workload, "getppid", n}
		argv := child
		tool, empty := strings.CutSuffix(actor, emptySuffix)
		prog := progCount
		if empty {
			prog = progEmpty
		}
		if actor != bare {
			argv = []string{b.tools[tool], "-e", prog, "-c", strings.Join(child, " ")}
		}
		r, err := b.runner.run(argv, "")
		if err != nil {
			return err
		}
		if actor != bare && !empty {
			key := "@[" + b.comm + "]"
			got, ok := r.out.mapValue(key)
			if !ok || got < int64(b.events) {
				return fmt.Errorf("%s counted %d (printed: %v), want at least %d", key, got, ok, b.events)
			}
		}
		t, err := readNanos(file)
		if err != nil {
			return fmt.Errorf("the workload helper left no time: %w", err)
		}
		b.logRun("per-event", actor, rep, "workload used %v of CPU", ns(t))
		if rep >= 0 {
			times[actor][rep] = float64(t)
		}
		return nil
	})
	cost, emptyCost, overEmpty := figures{}, figures{}, figures{}
	var bareCall series
	for rep := 0; rep < b.reps; rep++ {
		t0 := times[bare][rep]
		if math.IsNaN(t0) {
			continue
		}
		bareCall = append(bareCall, t0/float64(b.events))
		for _, tool := range b.order {
			t, te := times[tool][rep], times[tool+emptySuffix][rep]
			if !math.IsNaN(t) {
				cost.add(tool, (t-t0)/float64(b.events))
			}
			if !math.IsNaN(te) {
				emptyCost.add(tool, (te-t0)/float64(b.events))
			}
			if !math.IsNaN(t) && !math.IsNaN(te) && te > t0 {
				overEmpty.add(tool, (t-t0)/(te-t0))
			}
		}
	}
	if len(bareCall) > 0 {
		b.note("getppid() without a tool: %s per call (median of %d runs of %d calls)",
			nanos.cell(bareCall), len(bareCall), b.events)
	}
	return []*row{
		cost.row("@[comm] = count() cost per event", nanos, ratioAtMost(1)),
		emptyCost.row("empty probe cost per event", nanos, target{}),
		overEmpty.row("count() cost / empty probe cost", number, kinstMedianAtMost(1.2, "kinst <= 1.2")),
	}
}

// emptySuffix names a tool's runs of progEmpty among the actors.
const emptySuffix = " (empty)"

// printf measures how fast printf events reach user space, and whether
// the ones that do not are reported.
func (b *bench) printf() []*row {
	rate, lost, missing := figures{}, figures{}, figures{}
	stamp := filepath.Join(b.tmp, "start-stamp")
	n := strconv.Itoa(b.printfEvents)
	b.repeat("printf", b.order, func(tool string, rep int) error {
		os.Remove(stamp)
		child := strings.Join([]string{b.self, childArg, execStamp, stamp, b.workload, "getppid", n}, " ")
		r, err := b.runner.run([]string{b.tools[tool], "-e", progPrintf, "-c", child}, " "+b.comm)
		if err != nil {
			return err
		}
		start, err := readNanos(stamp)
		if err != nil {
			return fmt.Errorf("the -c command left no stamp: %w", err)
		}
		if r.out.events == 0 {
			return fmt.Errorf("no events printed")
		}
		perSec := float64(r.out.events) / float64(r.out.lastEvent-start) * 1e9
		unaccounted := int64(b.printfEvents) - int64(r.out.events) - int64(r.out.lost)
		b.logRun("printf", tool, rep, "%d delivered in %v (%.0f/s), %d lost, %d unaccounted",
			r.out.events, ns(r.out.lastEvent-start), perSec, r.out.lost, unaccounted)
		if rep >= 0 {
			rate.add(tool, perSec)
			lost.add(tool, float64(r.out.lost))
			missing.add(tool, float64(unaccounted))
		}
		return nil
	})
	return []*row{
		rate.row("printf events delivered per second", perSecond, ratioAtLeast(2)),
		lost.row("printf events lost, reported", number, target{}),
		missing.row("printf events missing, unreported", number, kinstPeakAtMost(0, "kinst 0")),
	}
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// ns prints a nanosecond count for the verbose log.
type ns int64

func (n ns) String() string { return nanos.cell(series{float64(n)}) }
