package instruments

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/internal/hint"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

// common holds the options every instrument takes.
type common struct {
	Pid      int
	Comm     string
	Command  string
	Duration time.Duration
	Output   string
	Format   string
	Show     bool
	Verbose  bool
	Quiet    bool
	Unsafe   bool
	// Prometheus is the address to serve the maps on as metrics, or "".
	Prometheus string
	// Formats are the output formats -f takes, the first the default;
	// nil means text and json. Set it before addFlags.
	Formats []string
}

// formats lists the output formats -f takes.
func (c *common) formats() []string {
	if c.Formats == nil {
		return []string{"text", "json"}
	}
	return c.Formats
}

// orList joins words as "a, b or c", andList as "a, b and c".
func orList(words []string) string  { return joinList(words, "or") }
func andList(words []string) string { return joinList(words, "and") }

func joinList(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// addFlags registers the common options on fs.
func (c *common) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Pid, "pid", 0, "only this process")
	fs.StringVar(&c.Comm, "comm", "", "only processes with this name")
	fs.StringVar(&c.Command, "c", "", "run `CMD`, trace only it, and stop when it exits")
	fs.DurationVar(&c.Duration, "duration", 0, "stop after this long, for example 10s")
	fs.StringVar(&c.Output, "o", "", "write to `FILE` (a named pipe works)")
	fs.StringVar(&c.Format, "f", c.formats()[0], "output format: "+orList(c.formats()))
	fs.BoolVar(&c.Show, "show", false, "print the kinst program instead of running it")
	fs.BoolVar(&c.Verbose, "v", false, "say which mechanism each probe uses, and why")
	fs.BoolVar(&c.Quiet, "q", false, "print less")
	fs.BoolVar(&c.Unsafe, "unsafe", false, "allow changing the system")
	fs.StringVar(&c.Prometheus, "prometheus", "", "serve the maps as Prometheus metrics on http://`ADDR`/metrics while running")
}

// flags makes an instrument's option set, with the common options and a
// usage message of the given lines followed by the options.
func (c *common) flags(name string, stderr io.Writer, usage ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("kinst "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.addFlags(fs)
	fs.Usage = func() {
		for _, l := range usage {
			fmt.Fprintln(stderr, l)
		}
		fs.PrintDefaults()
	}
	return fs
}

// parse parses an instrument's command line, wherever the options are,
// checks the common options, and returns the positional arguments.
func (c *common) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, usageError("%v", err)
	}
	if err := c.check(); err != nil {
		return nil, usageError("%v", err)
	}
	return pos, nil
}

// check validates the common options.
func (c *common) check() error {
	if !slices.Contains(c.formats(), c.Format) {
		return fmt.Errorf("unknown output format %q: use %s", c.Format, orList(c.formats()))
	}
	if c.Duration < 0 || c.Duration > 0 && c.Duration < time.Millisecond {
		return fmt.Errorf("--duration %v is too short: at least 1ms", c.Duration)
	}
	if c.Pid < 0 {
		return fmt.Errorf("--pid %d is not a process id", c.Pid)
	}
	if c.Pid != 0 && !c.Show {
		return session.CheckPid(c.Pid)
	}
	return nil
}

// predicate is the condition the options put on events, as kinst
// source without the slashes, or "" for none. With -c only the command
// is traced.
func (c *common) predicate() string {
	var conds []string
	if c.Pid != 0 {
		conds = append(conds, fmt.Sprintf("pid == %d", c.Pid))
	}
	if c.Command != "" {
		conds = append(conds, "pid == cpid")
	}
	if c.Comm != "" {
		conds = append(conds, "comm == "+syntax.Quote(c.Comm))
	}
	return strings.Join(conds, " && ")
}

// and joins conditions with &&, leaving out empty ones.
func and(conds ...string) string {
	var out []string
	for _, c := range conds {
		if c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, " && ")
}

// predClause formats a predicate for a probe header: " /cond/" or "".
func predClause(cond string) string {
	if cond == "" {
		return ""
	}
	return " /" + cond + "/"
}

// stop is the probe that ends the run after --duration, or "".
func (c *common) stop() string {
	if c.Duration == 0 {
		return ""
	}
	return fmt.Sprintf("interval:ms:%d { exit(); }\n", c.Duration.Milliseconds())
}

// runHooks let an instrument render the run's output itself; nil fields
// leave the output as kinst -e prints it.
type runHooks struct {
	Printf   func(w io.Writer, probe string, args []kinst.Value) error
	PrintMap func(w io.Writer, m *kinst.Map) error
	ExitMaps func(w io.Writer, maps []*kinst.Map) error
	Lost     func(w io.Writer, n uint64) error
	// Attached is called with the run once its probes are attached.
	Attached func(r *kinst.Run)
}

// observer is the run's kinst.Observer: it calls an instrument's hooks,
// and serves the maps to Prometheus.
type observer struct {
	hooks  runHooks
	stderr io.Writer // Lost's
	srv    *prom.Server
}

func (o *observer) Printf(w io.Writer, probe, _ string, args []kinst.Value) (bool, error) {
	if o.hooks.Printf == nil {
		return false, nil
	}
	return true, o.hooks.Printf(w, probe, args)
}

func (o *observer) Record(w io.Writer, r kinst.Record) (bool, error) {
	switch r := r.(type) {
	case *kinst.PrintMap:
		if o.hooks.PrintMap != nil {
			return true, o.hooks.PrintMap(w, r.Map)
		}
	case *kinst.Lost:
		if o.hooks.Lost != nil {
			return true, o.hooks.Lost(o.stderr, r.Count)
		}
	}
	return false, nil
}

// Maps hands the maps to the instrument; served to Prometheus, they
// are not printed otherwise.
func (o *observer) Maps(w io.Writer, maps []*kinst.Map) ([]*kinst.Map, error) {
	switch {
	case o.hooks.ExitMaps != nil:
		return nil, o.hooks.ExitMaps(w, maps)
	case o.srv != nil:
		return nil, nil
	}
	return maps, nil
}

func (o *observer) Attached(r *kinst.Run) {
	if o.hooks.Attached != nil {
		o.hooks.Attached(r)
	}
	if o.srv != nil {
		o.srv.Serve(r.WriteMetrics)
	}
}

// run prints the program with --show; otherwise it compiles and runs it
// as kinst -e runs a program, sending its output to -o or stdout.
func (c *common) run(ctx context.Context, name, src string, hooks runHooks, stdout, stderr io.Writer) error {
	if c.Show {
		_, err := io.WriteString(stdout, src)
		return err
	}
	var argv []string
	if c.Command != "" {
		var err error
		if argv, err = session.SplitCommand(c.Command); err != nil {
			return usageError("-c: %v", err)
		}
	}
	opts := &kinst.Options{
		Pid:         c.Pid,
		Unsafe:      c.Unsafe,
		Command:     argv,
		Environment: true,
		Warnings:    stderr,
		Warn:        hint.Warn(stderr),
		Verbose:     c.Verbose,
		// The instruments' programs, and the maps they leave to kinst
		// to print, are written for bpftrace 0.17's forms, whatever
		// KINST_COMPAT says.
		Compat: "0.17",
	}
	p, err := kinst.Compile(name, []byte(src), opts)
	if err != nil {
		return err
	}
	w := stdout
	var outF *os.File
	if c.Output != "" {
		if outF, err = output.Create(c.Output); err != nil {
			return err
		}
		defer outF.Close()
		w = outF
	}
	var srv *prom.Server
	if c.Prometheus != "" {
		if srv, err = prom.Listen(c.Prometheus); err != nil {
			return fmt.Errorf("--prometheus: %w", err)
		}
		defer srv.Close()
	}
	sigs := make(chan os.Signal, 4)
	ro := &kinst.RunOptions{
		Output:   w,
		JSON:     c.Format == "json",
		Quiet:    true,
		Signals:  sigs,
		Observer: &observer{hooks: hooks, stderr: stderr, srv: srv},
	}
	// The signals end kinst as any process until it is about to run.
	defer session.CatchSignals(sigs)()
	r, err := p.StartWith(ctx, nil, ro)
	if err != nil {
		return err
	}
	err = r.Wait()
	// A file system may report a failed write only when the file is
	// closed.
	if outF != nil {
		if cerr := outF.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("-o: %w", cerr)
		}
	}
	return err
}

// A probeTarget is what an instrument probes: the attach point that fires on
// entry and the one that fires on return, either of which may be "".
type probeTarget struct {
	Spec  string // as the user wrote it
	Entry string
	Exit  string
	// Kernel is set for kernel functions, which trampolines and
	// kprobes reach.
	Kernel bool
}

// parseTarget reads a target as users write it: a kernel function
// (vfs_read, or kprobe:, fentry: forms), a user function
// (uprobe:PATH:FUNC), a system call (syscall:openat), or a tracepoint
// (tracepoint:CAT:NAME, whose sys_enter_ and sys_exit_ pairs are paired).
func parseTarget(spec string) (probeTarget, error) {
	provider, rest, ok := strings.Cut(spec, ":")
	if !ok {
		provider, rest = "kprobe", spec
	}
	if rest == "" {
		return probeTarget{}, fmt.Errorf("bad target: %q names nothing", spec)
	}
	t := probeTarget{Spec: spec}
	switch provider {
	case "kprobe", "k", "kretprobe", "kr":
		t.Entry, t.Exit, t.Kernel = "kprobe:"+rest, "kretprobe:"+rest, true
		if strings.Contains(rest, "+") {
			t.Exit = "" // an offset has no return
		}
	case "fentry", "kfunc", "f", "fexit", "kretfunc", "fr":
		t.Entry, t.Exit, t.Kernel = "fentry:"+rest, "fexit:"+rest, true
	case "uprobe", "u", "uretprobe", "ur":
		t.Entry, t.Exit = "uprobe:"+rest, "uretprobe:"+rest
	case "syscall":
		t.Entry, t.Exit = "tracepoint:syscalls:sys_enter_"+rest, "tracepoint:syscalls:sys_exit_"+rest
	case "tracepoint", "t":
		t.Entry = "tracepoint:" + rest
		if cat, name, ok := strings.Cut(rest, ":"); ok && cat == "syscalls" && strings.HasPrefix(name, "sys_enter_") {
			t.Exit = "tracepoint:syscalls:sys_exit_" + strings.TrimPrefix(name, "sys_enter_")
		}
	default:
		return probeTarget{}, fmt.Errorf("bad target: %q: use a kernel function, kprobe:, fentry:, uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME", spec)
	}
	return t, nil
}

// A Command is one instrument, as a subcommand of kinst.
type Command struct {
	Name    string
	Summary string // one line for kinst -h
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*Command{}

// register adds an instrument; each instrument's file registers itself.
func register(c *Command) { commands[c.Name] = c }

// Lookup returns the instrument called name, or nil.
func Lookup(name string) *Command { return commands[name] }

// Commands lists the instruments by name.
func Commands() []*Command {
	list := make([]*Command, 0, len(commands))
	for _, c := range commands {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

// ErrUsage marks a bad command line; the message says what is wrong.
var ErrUsage = errors.New("usage")

// ErrHelp reports that -h asked for the usage, which was printed.
var ErrHelp = flag.ErrHelp

// usageError reports a bad command line; a request for help passes
// through as ErrHelp.
func usageError(format string, args ...any) error {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
	}
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// wallClock turns the monotonic nanoseconds probes read (nsecs) into wall
// time, with the offset between the two clocks taken once.
type wallClock struct{ offset int64 }

// newWallClock reads both clocks.
func newWallClock() (*wallClock, error) {
	var mono, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return nil, err
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return nil, err
	}
	return &wallClock{offset: real.Nano() - mono.Nano()}, nil
}

// Wall returns the wall time of a monotonic timestamp.
func (c *wallClock) Wall(nsecs uint64) time.Time {
	return time.Unix(0, int64(nsecs)+c.offset)
}

// parseFlags parses options given before, between or after the
// positional arguments, which it returns: instruments read as
// "kinst trace vfs_read --args".
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		// Parse stops at "--" and drops it: everything after it is
		// positional, dashes and all.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
