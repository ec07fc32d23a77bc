package instruments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/internal/coredump"
)

func init() {
	register(&Command{
		Name:    "break",
		Summary: "stop a process where a probe fires and a condition holds, then dump its core, hand it to gdb or leave it stopped (needs --unsafe)",
		Run:     breakpoint,
	})
}

// breakHits is the map that counts the stops the program made.
const breakHits = "@kinst_stops"

func breakpoint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := c.flags("break", stderr,
		"usage: kinst break TARGET (--core FILE | --gdb | --stop) --unsafe [--if EXPR] [--count N] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [--show]",
		"       kinst break --pid PID --core FILE --unsafe [--thread TID]",
		"TARGET is a kernel function, uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME; the process whose thread hits it is stopped",
		"(for kernel code, as it returns to user space). With no TARGET, --core dumps process PID now.",
	)
	core := fs.String("core", "", "write an ELF core file of the process to `FILE` (FILE.1, FILE.2, ... with --count), then let it go on")
	gdb := fs.Bool("gdb", false, "leave the process stopped and run gdb -p on it (print the command when stdin is no terminal)")
	stop := fs.Bool("stop", false, "leave the process stopped and say how to resume it")
	cond := fs.String("if", "", "only hits where this kinst `EXPRESSION` holds, e.g. 'arg0 == 3'")
	n := fs.Int("count", 1, "act on the first `N` hits")
	thread := fs.Int("thread", 0, "with no TARGET: the thread `TID` gdb shows first")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	var actions []string
	for _, a := range []struct {
		on   bool
		name string
	}{{*core != "", "--core"}, {*gdb, "--gdb"}, {*stop, "--stop"}} {
		if a.on {
			actions = append(actions, a.name)
		}
	}
	switch {
	case len(pos) > 1:
		return usageError("name one target")
	case len(actions) == 0:
		return usageError("say what to do at the breakpoint: --core FILE, --gdb or --stop")
	case len(actions) > 1:
		return usageError("%s conflict: give only one of --core FILE, --gdb or --stop", andList(actions))
	case *n < 1:
		return usageError("--count %d: give a positive number of hits", *n)
	case *n > 1 && *core == "":
		return usageError("--count applies to --core: --gdb and --stop act on the first hit")
	case (*gdb || *stop) && c.Command != "":
		return usageError("--gdb and --stop leave the process stopped, and kinst ends a -c command when it ends: start the process yourself and give --pid")
	case len(pos) == 0 && (*core == "" || c.Pid == 0):
		return usageError("name a target, or dump process --pid PID now with --core FILE")
	}
	if !c.Unsafe && !c.Show {
		return fmt.Errorf("break stops processes: run it with --unsafe")
	}
	if *core != "" {
		if err := coreDir(*core); err != nil {
			return err
		}
	}
	if len(pos) == 0 {
		return dumpNow(stdout, *core, c.Pid, *thread)
	}

	t, err := parseTarget(pos[0])
	if err != nil {
		return usageError("%v", err)
	}
	if _, err := resolvePoint(&attach.Resolver{Pid: c.Pid}, t.Entry); err != nil {
		return fmt.Errorf("break %s: %w", pos[0], err)
	}
	src := breakProgram(&c, t, *cond, *n, *core != "")
	if c.Show {
		return c.run(ctx, "break", src, runHooks{}, stdout, stderr)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &breaker{core: *core, count: *n, gdb: *gdb, stop: *stop, cancel: cancel, stderr: stderr, fn: t.Spec, waitsCommand: c.Command != ""}
	hooks := runHooks{
		Printf: func(w io.Writer, _ string, args []kinst.Value) error {
			var regs []uint64
			for _, a := range args[4:] {
				regs = append(regs, a.Uint())
			}
			return b.hit(w, args[0].Uint(), int(args[1].Int()), int(args[2].Int()), args[3].Text(), regs)
		},
		ExitMaps: func(io.Writer, []*kinst.Map) error { return nil },
	}
	// The breaker cancels the run once it has its hits: that end is
	// no error, unlike the end of ctx.
	if err := c.run(runCtx, "break", src, hooks, stdout, stderr); err != nil && (ctx.Err() != nil || !errors.Is(err, context.Canceled)) {
		return err
	}
	if b.err != nil {
		return b.err
	}
	if b.gdb && b.pid != 0 {
		return b.debug(stdout)
	}
	return nil
}

// breakProgram stops the process at the first n hits where the
// condition holds, and tells kinst which; at a uprobe, with the
// registers at the hit when regs asks, for a core.
func breakProgram(c *common, t probeTarget, cond string, n int, regs bool) string {
	var b strings.Builder
	user := ""
	if !strings.HasPrefix(t.Entry, "uprobe:") {
		// A kernel thread has no user space to stop in (the kernel
		// refuses it the signal) nor to dump (PF_KTHREAD).
		user = "(curtask->flags & 0x200000) == 0"
	}
	pred := and(c.predicate(), user, cond)
	if pred != "" {
		pred = "(" + pred + ") && "
	}
	fmt.Fprintf(&b, "%s /%s%s < %d/ {\n", t.Entry, pred, breakHits, n)
	fmt.Fprintf(&b, "\t%s = %s + 1;\n", breakHits, breakHits)
	b.WriteString("\tsignal(\"SIGSTOP\");\n")
	format, args := "%lu %d %d %s", "nsecs, pid, tid, comm"
	if user == "" && regs {
		// The stop comes once the probed instruction has run: the
		// registers at the hit are sent for the core.
		for _, r := range breakRegs {
			format += " %lu"
			args += ", reg(\"" + r + "\")"
		}
	}
	fmt.Fprintf(&b, "\tprintf(\"%s\\n\", %s);\n", format, args)
	b.WriteString("}\n")
	b.WriteString(c.stop())
	return b.String()
}

// breakRegs are the registers of x86-64's struct pt_regs in its order,
// which is also that of the first words of the user_regs_struct ptrace
// reads: a uprobe's registers are the thread's at the hit.
var breakRegs = []string{
	"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8",
	"ax", "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss",
}

// A breaker acts on the hits the probe reports.
type breaker struct {
	core         string
	count        int
	gdb, stop    bool
	fn           string
	waitsCommand bool // a -c command, which the run waits for
	cancel       func()
	stderr       io.Writer

	hits    int
	pid     int    // the process stopped for --gdb and --stop
	resumed uint64 // when the last dump began, in nsecs: hits before it shared its stop
	err     error
}

// hit handles a stop the probe made at nsecs in thread tid of pid; regs
// are the registers at the hit, in breakRegs's order, nil for a stop in
// kernel code.
func (b *breaker) hit(w io.Writer, nsecs uint64, pid, tid int, comm string, regs []uint64) error {
	if b.hits >= b.count || nsecs < b.resumed {
		// A stop that threads hitting together shared with one
		// already dumped, or one past the count: the probe limits
		// its stops, so at most a few come, and none must remain.
		if b.core != "" {
			unix.Kill(pid, unix.SIGCONT)
		}
		return nil
	}
	b.hits++
	if b.gdb || b.stop {
		if err := coredump.WaitStopped(pid, 5*time.Second); err != nil {
			b.err = fmt.Errorf("cannot stop at %s: %w", b.fn, err)
			b.cancel()
			return nil
		}
		b.pid = pid
		resume := fmt.Sprintf("resume it with: kill -CONT %d", pid)
		switch {
		case b.gdb && terminal():
			resume = fmt.Sprintf("running gdb -p %d; it goes on when gdb ends", pid)
		case b.gdb:
			resume = fmt.Sprintf("debug it with: gdb -p %d, then resume it with: kill -CONT %d", pid, pid)
		}
		fmt.Fprintf(w, "pid %d tid %d %s: stopped at %s; %s\n", pid, tid, comm, b.fn, resume)
		b.cancel()
		return nil
	}
	file := coreName(b.core, b.hits, b.count)
	// The probe's stop takes effect as the thread returns to user space:
	// Dump must find the process stopped, or it would let it go itself,
	// and the resume below would then cancel the stop of a next hit.
	coredump.WaitStopped(pid, 5*time.Second)
	// A later hit is one after the dump began.
	b.resumed = monotonic()
	size, err := coredump.Dump(file, pid, tid, regs)
	clock := monotonic()
	// Whatever happened, the process must not stay stopped.
	unix.Kill(pid, unix.SIGCONT)
	if err != nil {
		b.err = fmt.Errorf("%v (hit at %s)", err, b.fn)
		b.cancel()
		return nil
	}
	fmt.Fprintf(w, "pid %d tid %d %s: stopped at %s; core written to %s (%.1f MB, %.3fs after the hit)\n",
		pid, tid, comm, b.fn, file, float64(size)/1e6, float64(clock-nsecs)/1e9)
	if b.hits == b.count && !b.waitsCommand {
		b.cancel()
	}
	return nil
}

// terminal reports whether standard input is a terminal, where gdb can
// run.
func terminal() bool {
	_, err := unix.IoctlGetTermios(0, unix.TCGETS)
	return err == nil
}

// debug runs gdb on the stopped process when there is a terminal, and
// otherwise printed the commands already. gdb leaves a process it
// detaches from in the stop it found it in: the process is continued
// once gdb ends, as the breakpoint's hit line said.
func (b *breaker) debug(stdout io.Writer) error {
	if !terminal() {
		return nil
	}
	path, err := exec.LookPath("gdb")
	if err != nil {
		return fmt.Errorf("no gdb to debug pid %d, which stays stopped: %w", b.pid, err)
	}
	cmd := exec.Command(path, "-p", strconv.Itoa(b.pid))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Ctrl-C at gdb's prompt is gdb's, not a signal to end kinst.
	signal.Ignore(syscall.SIGINT)
	err = cmd.Run()
	if kerr := unix.Kill(b.pid, unix.SIGCONT); kerr == nil {
		fmt.Fprintf(stdout, "pid %d goes on\n", b.pid)
	}
	if err != nil {
		return fmt.Errorf("gdb: %w", err)
	}
	return nil
}

// dumpNow dumps a process at once and lets it go on, unless it was
// stopped before.
func dumpNow(w io.Writer, file string, pid, first int) error {
	stopped, err := coredump.Stopped(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	size, err := coredump.Dump(file, pid, first, nil)
	if err != nil {
		return err
	}
	stays := ""
	if stopped {
		stays = "; it was stopped before, and stays stopped"
	}
	_, err = fmt.Fprintf(w, "core of pid %d written to %s (%.1f MB in %.3fs)%s\n", pid, file, float64(size)/1e6, time.Since(start).Seconds(), stays)
	return err
}

// coreName is the file of the ith of n dumps: FILE, or FILE.i when
// there are several.
func coreName(file string, i, n int) string {
	if n == 1 {
		return file
	}
	return file + "." + strconv.Itoa(i)
}

// coreDir checks that a core file can be written where it is asked for.
func coreDir(file string) error {
	dir := filepath.Dir(file)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("cannot write a core file in %s: %w", dir, err)
	}
	return nil
}

// monotonic is the time nsecs gives probes.
func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}
