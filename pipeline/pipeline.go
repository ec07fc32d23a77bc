package pipeline

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/preprocess"
	"kinst.dev/kinst/syntax"
)

// Options configure a compilation.
type Options struct {
	Params []string // positional parameters $1, $2, …
	Pid    int      // -p: uprobes in this process
	Unsafe bool     // allow system(), signal() and override()
	Cpid   bool     // a -c command runs, so cpid has a value
	// Command is the -c command's program as given, whose functions
	// watchpoints on an argument probe.
	Command string
	StrLen  int // size of str() results; 0 for the default
	// MapEntries bounds every map; 0 for the default.
	MapEntries int
	// EventsSize is the ring buffer's size in bytes; 0 for the default.
	EventsSize int
	// StackEntries bounds the kstack and ustack maps; 0 for the
	// default, bpftrace's 131072.
	StackEntries int
	// Force runs kprobes through one mechanism; "" picks the cheapest.
	Force codegen.Mechanism
	// MaxProbes, from BPFTRACE_MAX_PROBES, bounds the probes a program
	// attaches to; 0 sets no bound.
	MaxProbes int
	// HelperChecks is -k (1: helpers other than reads) or -kk (2: all):
	// failing helpers are reported at run time.
	HelperChecks int
	// Dump receives the stages named in Stages, a comma-separated list
	// of "ast", "types", "bpf" and "maps", or "all".
	Dump   io.Writer
	Stages string
	// IncludeDirs (-I) and Includes (--include) are the preprocessor's.
	IncludeDirs []string
	Includes    []string
	// Warnings receives compile-time warnings; nil discards them.
	Warnings io.Writer
	// Warn, when set, receives the warnings about the program's source,
	// the preprocessor's among them, instead of Warnings.
	Warn func(*syntax.Error)
	// CacheDir keeps preprocessed headers between runs; "" keeps none.
	// FromEnv sets it from KINST_CACHE_DIR, or preprocess.DefaultCacheDir.
	CacheDir string
	// Compat is the bpftrace release the program is written for;
	// FromEnv sets it from KINST_COMPAT.
	Compat compat.Version
	// MissingProbes and StackMode are bpftrace 0.26.1's missing_probes
	// and stack_mode (see check.Config), from BPFTRACE_MISSING_PROBES
	// and BPFTRACE_STACK_MODE; "" leaves them to the program's config
	// block and then the defaults: missing_probes is error in the
	// default mode and warn in 0.17's.
	MissingProbes string
	StackMode     string
	// UnstableTSeries is bpftrace 0.26.1's unstable_tseries, from
	// BPFTRACE_UNSTABLE_TSERIES: "error" refuses tseries(); "enable",
	// "warn" or "" (the program's config block then decides) allow it.
	UnstableTSeries string
	// UnstableTypeinfo is bpftrace 0.26.1's unstable_typeinfo, from
	// BPFTRACE_UNSTABLE_TYPEINFO: "enable" or "warn" allow typeinfo();
	// "error" refuses it, and so does "" unless the program's config
	// block allows it.
	UnstableTypeinfo string
	// TSeriesClock is BPFTRACE_DUMMY_TS_MAP (see
	// codegen.Options.TSeriesClock), for tests of tseries.
	TSeriesClock string
	// ProbeFilter, when set, keeps only the probes whose names match
	// it, and BEGIN and END, as --probe-filter does.
	ProbeFilter *regexp.Regexp
	// NoFeatures are attach mechanisms code generation must not pick
	// although the kernel has them, as --no-feature asks.
	NoFeatures []codegen.Mechanism
}

// FromEnv reads the settings users give through the environment: the
// string length, the map size (under bpftrace's names too), the ring
// buffer's size and the preprocessor's cache.
func (o *Options) FromEnv() error {
	var err error
	if o.StrLen, err = envInt(check.MaxStrLen, "KINST_STRLEN", "BPFTRACE_MAX_STRLEN", "BPFTRACE_STRLEN"); err != nil {
		return err
	}
	if o.MapEntries, err = envInt(math.MaxUint32, "KINST_MAP_KEYS_MAX", "BPFTRACE_MAX_MAP_KEYS", "BPFTRACE_MAP_KEYS_MAX"); err != nil {
		return err
	}
	switch o.MissingProbes = strings.ToLower(os.Getenv("BPFTRACE_MISSING_PROBES")); o.MissingProbes {
	case "", "error", "warn", "ignore":
	default:
		return fmt.Errorf("BPFTRACE_MISSING_PROBES=%q: want error, warn or ignore", o.MissingProbes)
	}
	switch o.StackMode = os.Getenv("BPFTRACE_STACK_MODE"); o.StackMode {
	case "", "bpftrace", "perf", "raw", "build_id":
	default:
		return fmt.Errorf("BPFTRACE_STACK_MODE=%q: want bpftrace, raw, perf or build_id", o.StackMode)
	}
	switch o.UnstableTSeries = strings.ToLower(os.Getenv("BPFTRACE_UNSTABLE_TSERIES")); o.UnstableTSeries {
	case "", "enable", "warn", "error":
	default:
		return fmt.Errorf("BPFTRACE_UNSTABLE_TSERIES=%q: want enable, warn or error", o.UnstableTSeries)
	}
	switch o.UnstableTypeinfo = strings.ToLower(os.Getenv("BPFTRACE_UNSTABLE_TYPEINFO")); o.UnstableTypeinfo {
	case "", "enable", "warn", "error":
	default:
		return fmt.Errorf("BPFTRACE_UNSTABLE_TYPEINFO=%q: want enable, warn or error", o.UnstableTypeinfo)
	}
	o.TSeriesClock = os.Getenv("BPFTRACE_DUMMY_TS_MAP")
	kb, err := envInt(0, "KINST_BUFFER_KB")
	if err != nil || kb != 0 && (kb < 4 || kb&(kb-1) != 0) {
		return fmt.Errorf("KINST_BUFFER_KB must be a power of two of at least 4")
	}
	o.EventsSize = kb << 10
	if o.EventsSize == 0 {
		pages, err := envInt(0, "BPFTRACE_PERF_RB_PAGES")
		if err != nil {
			return err
		}
		if o.EventsSize, err = ringSize(pages); err != nil {
			return fmt.Errorf("BPFTRACE_PERF_RB_PAGES=%q is not a power of two", os.Getenv("BPFTRACE_PERF_RB_PAGES"))
		}
	}
	if o.MaxProbes, err = envInt(0, "BPFTRACE_MAX_PROBES"); err != nil {
		return err
	}
	if o.Compat, err = compat.FromEnv(); err != nil {
		return err
	}
	var set bool
	if o.CacheDir, set = os.LookupEnv("KINST_CACHE_DIR"); !set {
		o.CacheDir = preprocess.DefaultCacheDir()
	}
	if path := os.Getenv("BPFTRACE_BTF"); path != "" {
		if err := kernel.UseBTFFile(path); err != nil {
			return fmt.Errorf("BPFTRACE_BTF: %w", err)
		}
	}
	return nil
}

// ringSize sizes the ring buffer from perf_rb_pages, the pages per CPU
// bpftrace gives its perf buffers: as many pages for every CPU in one
// ring, rounded up to a power of two. It returns 0 for 0 pages.
func ringSize(pages int) (int, error) {
	if pages&(pages-1) != 0 {
		return 0, fmt.Errorf("%d pages is not a power of two", pages)
	}
	if pages == 0 {
		return 0, nil
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return 0, err
	}
	size := 1
	for size < pages*os.Getpagesize()*ncpu {
		size <<= 1
	}
	return size, nil
}

// ErrTooManyProbes reports a program that attaches to more probes than
// BPFTRACE_MAX_PROBES allows.
var ErrTooManyProbes = errors.New("too many probes")

// envInt reads the first of names that is set, as a positive integer
// of at most max (no bound when 0), or 0 when none is.
func envInt(max int, names ...string) (int, error) {
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 1 {
			return 0, fmt.Errorf("%s=%q is not a positive integer", n, v)
		}
		if max > 0 && i > max {
			return 0, fmt.Errorf("%s=%q is more than %d", n, v, max)
		}
		return i, nil
	}
	return 0, nil
}

// ValidStage reports whether s names stages to print.
func ValidStage(s string) bool {
	if s == "" {
		return true
	}
	for _, st := range strings.Split(s, ",") {
		switch st {
		case "ast", "types", "bpf", "maps", "all":
		default:
			return false
		}
	}
	return true
}

func (o *Options) dumps(stage string) bool {
	if o.Dump == nil {
		return false
	}
	for _, st := range strings.Split(o.Stages, ",") {
		if st == stage || st == "all" {
			return true
		}
	}
	return false
}

// Compile turns a program's source into BPF for the running kernel.
// Errors in the program are a syntax.ErrorList.
// filterPid is the process -p restricts kernel probes to: 0.26.1 filters
// them by process, where 0.17's -p named the process of uprobes alone.
func filterPid(opts *Options) int {
	if opts.Compat == compat.V017 {
		return 0
	}
	return opts.Pid
}

func Compile(name string, src []byte, opts *Options) (*codegen.Output, error) {
	checked, settings, opts, err := checkProgram(name, src, opts)
	if err != nil {
		return nil, err
	}
	if opts.dumps("types") {
		DumpTypes(opts.Dump, checked)
	}
	out, err := codegen.Generate(checked, &codegen.Options{
		MapEntries:   opts.MapEntries,
		EventsSize:   opts.EventsSize,
		StackEntries: opts.StackEntries,
		Supports:     opts.supports,
		Force:        opts.Force,
		HelperChecks: opts.HelperChecks,
		CompatStatus: kernel.CompatStatusOffset,
		HasLoop:      func() bool { return kernel.Available(kernel.FeatLoop) },
		TSeriesClock: opts.TSeriesClock,
		FilterPid:    filterPid(opts),
	})
	if err != nil {
		return nil, err
	}
	out.Settings = settings
	if opts.dumps("bpf") {
		DumpBPF(opts.Dump, out)
	}
	if opts.dumps("maps") {
		dumpMaps(opts.Dump, out)
	}
	if n := len(out.Targets); opts.MaxProbes > 0 && n > opts.MaxProbes {
		return nil, fmt.Errorf("%w: can't attach to %d probes because it exceeds the current limit of %d probes; "+
			"raise it with BPFTRACE_MAX_PROBES, but carefully: very many probes can slow the system down", ErrTooManyProbes, n, opts.MaxProbes)
	}
	return out, nil
}

// checkProgram takes a program's source through preprocessing,
// parsing, macro expansion, its config block and type checking, and
// returns the options its config block amended.
func checkProgram(name string, src []byte, opts *Options) (*check.Program, check.Settings, *Options, error) {
	pre, err := preprocess.Preprocess(name, src, &preprocess.Config{
		IncludeDirs: opts.IncludeDirs,
		Includes:    opts.Includes,
		BTF:         haveBTF,
		CacheDir:    opts.CacheDir,
	})
	if pre != nil {
		for _, msg := range pre.Warnings {
			// A missing header or a #warning, which the message
			// places itself.
			w := &syntax.Error{Msg: msg, Severity: syntax.SeverityWarning}
			switch {
			case opts.Warn != nil:
				opts.Warn(w)
			case opts.Warnings != nil:
				fmt.Fprintf(opts.Warnings, "kinst: %v\n", w)
			}
		}
	}
	if err != nil {
		return nil, check.Settings{}, nil, err
	}
	parsed, err := syntax.ParseFile(pre.File)
	if err != nil {
		return nil, check.Settings{}, nil, err
	}
	// Imports are relative to the program's folder, or to the working
	// directory for a program given with -e.
	dir := "."
	if _, err := os.Stat(name); err == nil {
		dir = filepath.Dir(name)
	}
	if parsed, err = syntax.ResolveImports(parsed, dir); err != nil {
		return nil, check.Settings{}, nil, err
	}
	if err := syntax.Expand(parsed, check.IsBuiltin); err != nil {
		return nil, check.Settings{}, nil, err
	}
	params := opts.Params
	if opts.Compat != compat.V017 {
		var named []string
		params, named = splitOptions(params)
		if err := syntax.ResolveGetopt(parsed, named); err != nil {
			return nil, check.Settings{}, nil, err
		}
	}
	if opts.dumps("ast") {
		fmt.Fprintln(opts.Dump, "syntax tree:")
		syntax.Dump(opts.Dump, parsed)
	}
	warn := opts.Warn
	if warn == nil && opts.Warnings != nil {
		warn = func(w *syntax.Error) { fmt.Fprintln(opts.Warnings, w.Detail()) }
	}
	settings, err := check.ReadConfig(parsed, opts.Compat, warn)
	if err != nil {
		return nil, check.Settings{}, nil, err
	}
	if opts, err = configure(opts, settings); err != nil {
		return nil, check.Settings{}, nil, err
	}
	strLen := opts.StrLen
	if strLen == 0 {
		strLen = check.DefaultStrLen(opts.Compat)
	}
	checked, err := check.Check(parsed, &check.Config{
		Resolver: &attach.Resolver{Pid: opts.Pid, Command: opts.Command, StrLen: strLen, Unsafe: opts.Unsafe, Compat: opts.Compat},
		Kernel:   attach.Kernel{},
		Params:   params,
		Unsafe:   opts.Unsafe,
		Cpid:     opts.Cpid,
		StrLen:   strLen,
		Warn:     warn,
		Compat:   opts.Compat,

		MissingProbes: opts.MissingProbes,
		StackMode:     opts.StackMode,
		NoTSeries:     opts.UnstableTSeries == "error",
		Typeinfo:      opts.UnstableTypeinfo == "enable" || opts.UnstableTypeinfo == "warn",
	})
	if err != nil {
		return nil, check.Settings{}, nil, err
	}
	if opts.ProbeFilter != nil {
		if err := filterProbes(checked, opts.ProbeFilter); err != nil {
			return nil, check.Settings{}, nil, err
		}
	}
	return checked, settings, opts, nil
}

// haveBTF says whether the kernel has BTF, for BPFTRACE_HAVE_BTF: the
// file the kernel exports answers without parsing it, which would cost
// more than the rest of compiling most programs.
func haveBTF() bool {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		return true
	}
	return kernel.Available(kernel.FeatBTF)
}

// Supports answers code generation's questions about mechanisms from
// the kernel's features, each probed once and only when asked.
func Supports(m codegen.Mechanism) bool {
	f, ok := map[codegen.Mechanism]kernel.Feature{
		codegen.MechKprobe:        kernel.FeatKprobe,
		codegen.MechKprobeMulti:   kernel.FeatKprobeMulti,
		codegen.MechKprobeSession: kernel.FeatKprobeSession,
		codegen.MechFentry:        kernel.FeatFentry,
		codegen.MechFexit:         kernel.FeatFexit,
		codegen.MechFmodRet:       kernel.FeatFmodRet,
		codegen.MechUprobeMulti:   kernel.FeatUprobeMulti,
	}[m]
	return ok && kernel.Available(f)
}

// supports is Supports less the mechanisms NoFeatures turns off.
func (o *Options) supports(m codegen.Mechanism) bool {
	return !slices.Contains(o.NoFeatures, m) && Supports(m)
}

// ErrNoProbes reports a --probe-filter that leaves a program nothing
// to attach.
var ErrNoProbes = errors.New("no probes to attach")

// filterProbes drops the targets whose names re does not match, and the
// probes left with none; BEGIN, END and signal probes stay, as bpftrace
// keeps them, while test and bench probes go by their names too.
func filterProbes(prog *check.Program, re *regexp.Regexp) error {
	kept, attaching := prog.Probes[:0], false
	for _, p := range prog.Probes {
		switch p.Provider {
		case "BEGIN", "END", "self":
			kept = append(kept, p)
			continue
		}
		p.Targets = slices.DeleteFunc(p.Targets, func(t *check.Target) bool { return !re.MatchString(t.FullName()) })
		if len(p.Targets) > 0 {
			kept, attaching = append(kept, p), true
		}
	}
	if !attaching {
		return fmt.Errorf("%w: --probe-filter %q matches none of the program's probes", ErrNoProbes, re)
	}
	prog.Probes = kept
	return nil
}

// DumpTypes prints every checked probe's expressions with their types.
func DumpTypes(w io.Writer, prog *check.Program) {
	fmt.Fprintln(w, "maps:")
	for _, m := range prog.Maps {
		keys := ""
		if m.Keys != nil {
			keys = fmt.Sprint(m.Keys)
		}
		fmt.Fprintf(w, "  %s%s: %s\n", m.Display(), keys, m.Value)
	}
	for _, p := range prog.Probes {
		fmt.Fprintf(w, "probe %s (%d targets):\n", p.Targets[0].FullName(), len(p.Targets))
		names := make([]string, 0, len(p.Vars))
		for n := range p.Vars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "  $%s: %s\n", n, p.Vars[n].Type)
		}
		syntax.Inspect(p.Syntax.Body, func(n syntax.Node) bool {
			x, ok := n.(syntax.Expr)
			if !ok {
				return true
			}
			if t := p.Types[x]; t != nil {
				pos := prog.Syntax.File.Position(x.Pos())
				fmt.Fprintf(w, "  %d:%d  %s  :: %s\n", pos.Line, pos.Column, syntax.String(x), t)
			}
			return true
		})
	}
}

// DumpBPF prints each program's instructions, each run of them under
// the source line it came from, with the mechanism chosen and why.
func DumpBPF(w io.Writer, out *codegen.Output) {
	for _, p := range out.Programs {
		dumpProgram(w, out, p)
		if p.Fallback != nil {
			fmt.Fprintln(w, "fallback if the kernel refuses the first choice:")
			for _, q := range p.Fallback {
				dumpProgram(w, out, q)
			}
		}
	}
}

func dumpProgram(w io.Writer, out *codegen.Output, p *codegen.Program) {
	spec := p.Spec(out)
	fmt.Fprintf(w, "program %s: %s, %d targets, %s, %s: %s\n", p.Name, p.Targets[0].FullName(), len(p.Targets), spec.Type, p.Mechanism, p.Why)
	lastLine := 0
	slot := 0
	for _, ins := range spec.Instructions {
		if slot < len(p.Pos) && p.Pos[slot].IsValid() {
			pos, text := out.File.Locate(p.Pos[slot])
			if pos.Line != lastLine {
				fmt.Fprintf(w, "; %d: %s\n", pos.Line, text)
				lastLine = pos.Line
			}
		}
		if sym := ins.Symbol(); sym != "" {
			fmt.Fprintf(w, "%s:\n", sym)
		}
		fmt.Fprintf(w, "  %4d: %v\n", slot, ins)
		slot += int(ins.Width())
	}
}

// dumpMaps prints the maps as the kernel creates them, with the @map
// each holds, and the records the programs send through the ring
// buffer: what user space decodes.
func dumpMaps(w io.Writer, out *codegen.Output) {
	holds := map[string]string{}
	for _, m := range out.Maps {
		holds[m.Spec] = ", holding " + m.Display()
	}
	fmt.Fprintln(w, "kernel maps:")
	names := make([]string, 0, len(out.Collection.Maps))
	for name := range out.Collection.Maps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := out.Collection.Maps[name]
		size := fmt.Sprintf("key %d, value %d, %d entries", m.KeySize, m.ValueSize, m.MaxEntries)
		switch m.Type {
		case ebpf.RingBuf:
			size = fmt.Sprintf("%d bytes", m.MaxEntries)
		case ebpf.PerfEventArray:
			size = "a buffer per CPU"
		}
		if m.Flags != 0 {
			size += fmt.Sprintf(", flags %#x", m.Flags)
		}
		fmt.Fprintf(w, "  %s (%s): %s, %s%s\n", name, m.Name, m.Type, size, holds[name])
	}
	fmt.Fprintln(w, "ring buffer records:")
	for _, a := range out.Actions {
		where := ""
		if a.Pos.IsValid() {
			pos := out.File.Position(a.Pos)
			where = fmt.Sprintf(" at %d:%d", pos.Line, pos.Column)
		}
		fmt.Fprintf(w, "  %d: %s%s, %d bytes\n", a.ID, a.Kind, where, a.RecordSize())
	}
}

// configure returns opts with what the program's config block sets
// where opts (from the caller or the environment) leaves a setting
// unset.
func configure(opts *Options, s check.Settings) (*Options, error) {
	o := *opts
	for _, f := range []struct {
		key string
		to  *int
	}{
		{"max_strlen", &o.StrLen}, {"max_map_keys", &o.MapEntries}, {"max_probes", &o.MaxProbes},
	} {
		if v, ok := s.Int(f.key); ok && *f.to == 0 {
			*f.to = int(min(v, 1<<31))
		}
	}
	if v, ok := s.Int("perf_rb_pages"); ok && o.EventsSize == 0 {
		size, err := ringSize(int(min(v, 1<<20)))
		if err != nil {
			return nil, fmt.Errorf("perf_rb_pages: %w", err)
		}
		o.EventsSize = size
	}
	if o.MissingProbes == "" {
		o.MissingProbes, _ = s.Str("missing_probes")
	}
	if o.MissingProbes == "" && o.Compat != compat.V017 {
		o.MissingProbes = "error"
	}
	if o.StackMode == "" {
		o.StackMode, _ = s.Str("stack_mode")
	}
	if on, ok := s.Bool("unstable_tseries"); ok && !on && o.UnstableTSeries == "" {
		o.UnstableTSeries = "error"
	}
	if on, ok := s.Bool("unstable_typeinfo"); ok && on && o.UnstableTypeinfo == "" {
		o.UnstableTypeinfo = "enable"
	}
	return &o, nil
}
