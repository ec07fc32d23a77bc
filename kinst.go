package kinst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/inject"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

// ErrNotSupported matches the errors of probe types that the running
// kernel refuses (kprobes where the kernel forbids them) or kinst cannot
// attach; Compile reports them in its error list. Those errors match
// the standard library's [errors.ErrUnsupported] too.
var ErrNotSupported = attach.ErrUnsupported

// Options configure how a program is compiled. The zero Options are
// bpftrace's defaults. Compile checks every field: one out of its range
// is an error matching [ErrOption].
type Options struct {
	// Params are the positional parameters $1, $2, …
	Params []string
	// Pid restricts uprobes and usdt probes to one process, as -p does;
	// 0 means none; a run ends when that process exits.
	Pid int
	// Unsafe allows system(), signal(), override() and core(), as
	// --unsafe does. core() dumps the process from this one under
	// ptrace: a child of this program that it waits for meanwhile (as
	// exec.Cmd.Wait does) would see the dump's stops as its end; the
	// Command is waited for by its exit alone.
	Unsafe bool
	// StrLen is the size of strings str() reads, at most 65536 bytes;
	// 0 means 1024, as bpftrace 0.26.1's max_strlen, or 64 in the 0.17
	// mode.
	StrLen int
	// MapEntries bounds every map, at most 2^32-1; 0 means 4096
	// entries.
	MapEntries int
	// BufferSize is the size in bytes of the ring buffer carrying records
	// to user space, a power of two of at least 4096; 0 picks the
	// default.
	BufferSize int
	// Mechanism runs every kprobe through one attach mechanism: "kprobe",
	// "kprobe.multi" or "fentry"; "" picks the cheapest the kernel has.
	Mechanism string
	// HelperChecks reports failing helpers at run time as -k (1: all
	// but reads) and -kk (2: all) do, on Warnings.
	HelperChecks int
	// ProbeFilter, when set, is a regular expression: only the probes
	// whose names it matches attach, and BEGIN and END, as
	// --probe-filter does. Compile fails matching [ErrNoProbes] when it
	// leaves no probe to attach.
	ProbeFilter string
	// NoFeatures are kernel features kinst must not use although the
	// kernel has them, as --no-feature turns them off: "kprobe_multi"
	// and "uprobe_multi" (the multi-target links), and "kprobe_session"
	// (the kprobe.multi link that runs a kprobe and a kretprobe on the
	// same functions as one program).
	NoFeatures []string
	// Compat names the bpftrace release whose language and output the
	// program follows: "" (or "0.26") for bpftrace 0.26.1, "0.17" for
	// 0.17. With Environment, KINST_COMPAT gives it when this is empty.
	Compat string
	// Warnings receives compile-time, attach-time and run-time
	// warnings; nil discards them.
	Warnings io.Writer
	// Warn, when set, receives each warning about the program's source
	// as an error located as Compile's errors are (a
	// [kinst.dev/kinst/syntax.Error] whose Severity says it is a
	// warning; its File is nil for the preprocessor's, such as a missing
	// header), instead of Warnings receiving its text: errors.Is and
	// errors.As see what it is about.
	Warn func(error)

	// Command is run under tracing, as -c runs it: started before the
	// probes attach, released once they are, and waited for; the run
	// ends when it exits. The program reads its pid as cpid, and its
	// probes see the command's own execve.
	Command []string
	// Environment reads the settings bpftrace and kinst take from the
	// environment, as the kinst command does: BPFTRACE_STRLEN,
	// BPFTRACE_MAP_KEYS_MAX, BPFTRACE_MAX_PROBES, BPFTRACE_PERF_RB_PAGES,
	// BPFTRACE_BTF, BPFTRACE_CAT_BYTES_MAX, BPFTRACE_NO_USER_SYMBOLS,
	// BPFTRACE_CACHE_USER_SYMBOLS, BPFTRACE_LOG_SIZE,
	// BPFTRACE_STR_TRUNC_TRAILER, __BPFTRACE_NOTIFY_PROBES_ATTACHED, KINST_BUFFER_KB, KINST_CACHE_DIR, KINST_COMPAT
	// and the KINST_ forms of bpftrace's names. Without it the
	// preprocessor keeps no cache of headers. Fields
	// set here win over the environment. A malformed setting is an error
	// of Compile matching [ErrEnvironment].
	Environment bool
	// IncludeDirs (-I) and Includes (--include) are the preprocessor's
	// search path and the files it includes before the program.
	IncludeDirs []string
	Includes    []string
	// Debug receives the compilation stages DebugStages names, as
	// --dump prints them: a comma-separated list of "ast", "types",
	// "bpf" and "maps", or "all".
	Debug       io.Writer
	DebugStages string

	// FileActivation raises the semaphores of USDT probes in every
	// process mapping the probe's file, as --usdt-file-activation does,
	// on kernels too old to raise them (before Linux 4.20).
	FileActivation bool
	// Verbose says which mechanism each probe uses and why, how long
	// attaching and detaching took, and adds the verifier's log to load
	// errors.
	Verbose bool
	// Progress, when set, receives a line rewritten in place saying how
	// far loading, attaching or detaching has got when one takes more
	// than a second, as the kinst command shows on a terminal.
	Progress io.Writer
	// Stderr receives what Verbose adds and, in the 0.17 mode when
	// Environment finds __BPFTRACE_NOTIFY_PROBES_ATTACHED set, that line
	// once every probe is attached (RunOptions.Stdout does otherwise);
	// the run's warnings go there too unless Warnings is nil. nil means
	// Warnings.
	Stderr io.Writer
}

// ErrUnsafe matches Compile's error for a call of system(), signal(),
// override() or core(), which change the system they run on, in a
// program whose Options do not set Unsafe.
var ErrUnsafe = check.ErrUnsafe

// ErrOption matches Compile's error for an Options field out of its
// range or of no meaning.
var ErrOption = errors.New("bad option")

// ErrEnvironment matches Compile's error for a malformed environment
// setting read for Options.Environment.
var ErrEnvironment = errors.New("bad environment setting")

// badSetting is an option or environment setting Compile cannot use: its
// text names the setting and says what is wrong, and it matches kind,
// ErrOption or ErrEnvironment.
type badSetting struct{ kind, err error }

func (e badSetting) Error() string   { return e.err.Error() }
func (e badSetting) Unwrap() []error { return []error{e.kind, e.err} }

func optionErrorf(format string, args ...any) error {
	return badSetting{ErrOption, fmt.Errorf("kinst: "+format, args...)}
}

// maxPid is the largest pid a 64-bit kernel hands out (PID_MAX_LIMIT).
const maxPid = 1 << 22

// ErrNoProbes matches Compile's error for a ProbeFilter that matches
// none of the program's probes.
var ErrNoProbes = pipeline.ErrNoProbes

// NoFeatures are the names Options.NoFeatures takes.
var NoFeatures = []string{"kprobe_multi", "kprobe_session", "uprobe_multi"}

// noFeatures maps NoFeatures' names to the mechanisms they turn off.
var noFeatures = map[string]codegen.Mechanism{
	"kprobe_multi":   codegen.MechKprobeMulti,
	"uprobe_multi":   codegen.MechUprobeMulti,
	"kprobe_session": codegen.MechKprobeSession,
}

// check checks every field of o, and sets what they say in the
// pipeline's options.
func (o *Options) check(popts *pipeline.Options) error {
	for _, f := range []struct {
		name   string
		v, max int64
	}{
		{"Pid", int64(o.Pid), maxPid},
		{"StrLen", int64(o.StrLen), check.MaxStrLen},
		{"MapEntries", int64(o.MapEntries), math.MaxUint32},
		{"HelperChecks", int64(o.HelperChecks), 2},
	} {
		if f.v < 0 || f.v > f.max {
			return optionErrorf("Options.%s %d is out of range 0..%d", f.name, f.v, f.max)
		}
	}
	if b := o.BufferSize; b != 0 && (b < 4096 || b&(b-1) != 0) {
		return optionErrorf("Options.BufferSize %d is not a power of two of at least 4096", b)
	}
	if !pipeline.ValidStage(o.DebugStages) {
		return optionErrorf("Options.DebugStages %q: use ast, types, bpf, maps or all, or several separated by commas", o.DebugStages)
	}
	if len(o.Command) > 0 && o.Command[0] == "" {
		return optionErrorf("Options.Command names no program")
	}
	for _, f := range o.NoFeatures {
		m, ok := noFeatures[f]
		if !ok {
			return optionErrorf("Options.NoFeatures: unknown feature %q: kprobe_multi, kprobe_session and uprobe_multi can be turned off", f)
		}
		popts.NoFeatures = append(popts.NoFeatures, m)
	}
	if o.ProbeFilter != "" {
		re, err := regexp.Compile(o.ProbeFilter)
		if err != nil {
			return optionErrorf("Options.ProbeFilter: invalid regular expression %q: %w", o.ProbeFilter, err)
		}
		popts.ProbeFilter = re
	}
	if o.Mechanism == "" {
		return nil
	}
	m, err := codegen.ParseMechanism(o.Mechanism)
	if err != nil {
		return optionErrorf("Options.Mechanism: %w", err)
	}
	popts.Force = m
	return nil
}

// A Program is a compiled program, ready to start any number of times.
type Program struct {
	out  *codegen.Output
	opts Options
	run  session.Options // what Options and the environment say of runs
}

// Compile compiles a program in bpftrace's language for the running
// kernel; name is the file name its errors give. Errors in the program
// are a [kinst.dev/kinst/syntax.ErrorList], each with a position:
//
//	var list syntax.ErrorList
//	if errors.As(err, &list) { … }
//
// Options are checked first: a bad field is an error matching
// [ErrOption], a bad environment setting one matching [ErrEnvironment].
func Compile(name string, src []byte, opts *Options) (*Program, error) {
	if opts == nil {
		opts = &Options{}
	}
	popts := &pipeline.Options{}
	if err := opts.check(popts); err != nil {
		return nil, err
	}
	p := &Program{opts: *opts, run: session.Options{Pid: opts.Pid}}
	if opts.Environment {
		if err := popts.FromEnv(); err != nil {
			return nil, badSetting{ErrEnvironment, err}
		}
		if err := p.run.FromEnv(); err != nil {
			return nil, badSetting{ErrEnvironment, err}
		}
		// bpftrace prints the line when the variable is set, even empty.
		_, p.run.NotifyAttached = os.LookupEnv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")
	}
	if opts.Compat != "" {
		v, err := compat.Parse(opts.Compat)
		if err != nil {
			return nil, fmt.Errorf("kinst: %w", err)
		}
		popts.Compat = v
	}
	popts.Params = opts.Params
	popts.Pid = opts.Pid
	popts.Unsafe = opts.Unsafe
	if len(opts.Command) > 0 {
		popts.Cpid, popts.Command = true, opts.Command[0]
	}
	popts.Warnings = opts.Warnings
	if opts.Warn != nil {
		popts.Warn = func(w *syntax.Error) { opts.Warn(w) }
	}
	popts.HelperChecks = opts.HelperChecks
	popts.IncludeDirs, popts.Includes = opts.IncludeDirs, opts.Includes
	popts.Dump, popts.Stages = opts.Debug, opts.DebugStages
	for _, o := range []struct {
		to   *int
		from int
	}{
		{&popts.StrLen, opts.StrLen}, {&popts.MapEntries, opts.MapEntries}, {&popts.EventsSize, opts.BufferSize},
	} {
		if o.from != 0 {
			*o.to = o.from
		}
	}
	// A test may hold kinst here to signal it before anything is loaded.
	inject.Delay(context.Background(), inject.Compile)
	out, err := pipeline.Compile(name, src, popts)
	if err != nil {
		return nil, err
	}
	p.out = out
	p.run.Configure(out.Settings)
	return p, nil
}

// WriteELF writes the compiled programs and their maps as a BPF ELF
// object file, as --emit-elf does.
func (p *Program) WriteELF(w io.Writer) error {
	if p == nil || p.out == nil {
		return errNoProgram
	}
	return pipeline.WriteELF(w, p.out)
}

// Load loads the program into the kernel and unloads it again, attaching
// nothing: the verifier's check, as --dry-run makes it. Its errors are
// those of Start.
func (p *Program) Load() error {
	if p == nil || p.out == nil {
		return errNoProgram
	}
	opts := p.runOptions()
	return apiError(session.Load(p.out, &opts))
}

// A Probe is one probe of a program, with what it attaches to.
type Probe struct {
	// Name is the probe as the program writes it, such as
	// "tracepoint:syscalls:sys_enter_open*" or "BEGIN".
	Name string
	// Targets are the full names of what it attaches to, its wildcards
	// expanded: "tracepoint:syscalls:sys_enter_openat", …
	Targets []string
	// Mechanism is how it attaches: "test_run" for BEGIN and END, which
	// kinst runs itself, "xdp" for test and bench probes, which it runs
	// in the modes of RunOptions.Mode, "tracepoint", "perf_event",
	// "uprobe", "kprobe", "fentry", …, and "kprobe.session" for both a
	// kprobe and the kretprobe whose program it shares; Why says why
	// that one was chosen.
	Mechanism string
	Why       string
}

// Probes lists the program's probes in the order it declares them.
func (p *Program) Probes() []Probe {
	if p == nil || p.out == nil {
		return nil
	}
	var probes []Probe
	add := func(prog *codegen.Program, probe *check.Probe, targets []*check.Target) {
		names := make([]string, len(targets))
		for j, t := range targets {
			names[j] = t.FullName()
		}
		probes = append(probes, Probe{Name: probeName(probe.Syntax.Points), Targets: names, Mechanism: string(prog.Mechanism), Why: prog.Why})
	}
	for _, prog := range p.out.Programs {
		add(prog, prog.Probe, prog.Targets)
		if prog.Return != nil {
			// A kprobe session's program serves its kretprobe too.
			add(prog, prog.Return, prog.Return.Targets)
		}
	}
	return probes
}

// probeName is a probe as the program writes it: its attach points,
// separated by commas.
func probeName(points []*syntax.AttachPoint) string {
	if len(points) == 1 {
		return points[0].Raw
	}
	names := make([]string, len(points))
	for i, pt := range points {
		names[i] = pt.Raw
	}
	return strings.Join(names, ",")
}

// A MapSpec describes one of a program's maps.
type MapSpec struct {
	Name string // as the program writes it: "@", "@bytes"
	// Kind is what the map holds and so which Go type its values have
	// (see [Map]): "integer", "string", "count", "sum", "min", "max",
	// "avg", "stats", "hist", "lhist", "tuple", …
	Kind string
	// Keys are the types of the key's elements, nil for a map without
	// keys; Value is the type of its values. Both are written as the
	// checker writes types: "int64", "string[64]", "hist", …
	Keys  []string
	Value string
}

// Maps lists the program's maps in the order they first appear.
func (p *Program) Maps() []MapSpec {
	if p == nil || p.out == nil {
		return nil
	}
	specs := make([]MapSpec, len(p.out.Maps))
	for i, m := range p.out.Maps {
		var keys []string
		for _, k := range m.Keys {
			keys = append(keys, k.String())
		}
		specs[i] = MapSpec{Name: m.Display(), Kind: check.OutputKind(m.Value).String(), Keys: keys, Value: m.Value.String()}
	}
	return specs
}
