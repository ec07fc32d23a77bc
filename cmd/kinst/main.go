// Command kinst instruments a live Linux kernel: it compiles programs in
// bpftrace's language to BPF in-process and runs them.
//
// Usage:
//
//	kinst [options] -e PROGRAM [ARGS...]
//	kinst [options] FILE [ARGS...]
//	kinst -l [PATTERN]
//	kinst -l -e PROGRAM | FILE
//	kinst features
//	kinst INSTRUMENT [options]
//	kinst help [INSTRUMENT]
//
// Run "kinst -h" for the options.
//
// Signals: SIGINT or SIGTERM before the probes are attached ends kinst
// at once, as it ends any process; after, it stops the run (rolling back
// an attach in progress), runs END and prints the maps; a second one (no
// sooner than a second after the first, so that timeout(1)'s signal to
// the process and then to its group does not cut the maps short), or one
// while the run already ends, ends kinst at once. SIGUSR1 runs the
// self:signal:SIGUSR1 probes (and prints the maps in the 0.17 mode) and
// tracing goes on.
//
// Exit status: 0 when the run ends normally or by a first signal once
// attached; 1 when compiling, loading, attaching, the -c command or
// writing the output fails (one sentence says which), or when a test or
// benchmark failed under --test or --bench; 2 for a usage
// error or a malformed setting in the environment (BPFTRACE_STRLEN=x);
// death by the signal (status 128+N in a shell) when a signal
// ends kinst at once, and by SIGPIPE when standard output is a pipe
// closed early.
package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	api "kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/export/pprof"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/instruments"
	"kinst.dev/kinst/internal/hint"
	"kinst.dev/kinst/internal/inject"
	"kinst.dev/kinst/internal/spell"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "features" {
		return features(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "help" {
		return help(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "completion" {
		return completion(args[1:], stdout, stderr)
	}
	if len(args) > 0 {
		if c := instruments.Lookup(args[0]); c != nil {
			err := c.Run(context.Background(), args[1:], stdout, stderr)
			if errors.Is(err, instruments.ErrHelp) {
				return 0
			}
			if errors.Is(err, instruments.ErrUsage) {
				fmt.Fprintf(stderr, "kinst %s: %s\n", c.Name, strings.TrimPrefix(err.Error(), instruments.ErrUsage.Error()+": "))
				return 2
			}
			return report(err, false, stderr)
		}
	}
	fs := flag.NewFlagSet("kinst", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// -d and -k changed meaning in bpftrace 0.26 (-d takes the stages to
	// print; -k covers reads, and -kk is gone), so the release is needed
	// before the options are read.
	mode, modeErr := compatOf(args)
	var (
		prog    = fs.String("e", "", "")
		list    = fs.Bool("l", false, "")
		command = fs.String("c", "", "")
		format  = fs.String("f", "text", "")
		outFile = fs.String("o", "", "")
		quiet   = fs.Bool("q", false, "")
		verbose = fs.Bool("v", false, "")
		dump    = fs.String("dump", "", "")
		dryRun  = fs.Bool("dry-run", false, "")
		unsafe  = fs.Bool("unsafe", false, "")
		mech    = fs.String("attach", "", "")
		buffer  = fs.String("B", "", "")
		info    = fs.Bool("info", false, "")
		noWarn  = fs.Bool("no-warnings", false, "")
		pid     pidFlag
		checks  = countFlag{tooMany: "-k may be given at most twice: -k checks helpers other than reads, -kk all of them"}
		debug   = countFlag{tooMany: "-d may be given at most twice: -d prints the compiled program, -dd its maps and records too"}
		stages  stageList
		help    bool
		showVer bool
		incDirs stringList
		incs    stringList
		dbgDirs stringList
		noFeat  stringList
		promAt  = fs.String("prometheus", "", "")
		emitELF = fs.String("emit-elf", "", "")
		emitIR  = fs.String("emit-llvm", "", "")
		compatV = fs.String("compat", "", "")
		filter  = fs.String("probe-filter", "", "")
		funcs   = fs.String("traceable-functions", "", "")
	)
	// bpftrace 0.26's test engine passes --verify-llvm-ir to every run;
	// kinst has no LLVM IR to verify, and its BPF goes to the verifier
	// in any case. --btf is a no-op in bpftrace too.
	fs.Bool("verify-llvm-ir", false, "")
	fs.Bool("btf", false, "")
	fs.Var(&incDirs, "I", "")
	fs.Var(&incs, "include", "")
	fs.Var(&pid, "p", "")
	fs.Var(&dbgDirs, "debuginfo", "")
	fs.Var(&noFeat, "no-feature", "")
	// The kernel activates USDT semaphores (ref_ctr_offset) in every
	// process the uprobes reach, which is file-based activation; before
	// Linux 4.20, kinst raises them itself in every process mapping the
	// file when asked to.
	fileActivation := fs.Bool("usdt-file-activation", false, "")
	fs.Var(&checks, "k", "")
	if mode == compat.V017 {
		fs.Var(&debug, "d", "")
	} else {
		fs.Var(&stages, "d", "")
		fs.Var(&stages, "debug", "")
	}
	fs.BoolVar(&help, "h", false, "")
	fs.BoolVar(&showVer, "V", false, "")
	// bpftrace 0.26's long names of one-letter options.
	for long, short := range map[string]string{
		"cmd": "c", "output": "o", "pid": "p", "list": "l", "quiet": "q", "verbose": "v",
		"warnings": "k", "help": "h", "version": "V",
	} {
		fs.Var(fs.Lookup(short).Value, long, "")
	}
	for name, why := range refusedOptions {
		fs.Func(name, "", func(string) error { return errors.New(why) })
	}
	var runMode modeFlag
	if mode == compat.V017 {
		fs.Func("mode", "", func(string) error { return errors.New(refused017["mode"]) })
		for _, name := range []string{"test", "bench"} {
			fs.BoolFunc(name, "", func(string) error { return errors.New(refused017[name]) })
		}
	} else {
		fs.Var(&runMode, "mode", "")
		fs.BoolFunc("test", "", runMode.alias("test", "test"))
		fs.BoolFunc("bench", "", runMode.alias("bench", "bench"))
	}
	fs.BoolFunc("fmt", "", runMode.alias("fmt", "format"))
	rest, err := parseArgs(fs, args)
	var usage *usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "kinst: %v\n", usage)
		printUsage(stderr)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	case help:
		printUsage(stdout)
		return 0
	case showVer:
		printVersion(stdout)
		return 0
	case *info:
		return printInfo(stdout, stderr)
	case modeErr != nil:
		fmt.Fprintf(stderr, "kinst: %v\n", modeErr)
		return 2
	}
	if mode != compat.V017 {
		switch {
		case checks.n > 1:
			fmt.Fprintf(stderr, "kinst: -kk has been deprecated: a single -k warns of failed helpers, probe reads included\n")
			return 2
		case checks.n == 1 && *noWarn:
			fmt.Fprintf(stderr, "kinst: -k, --warnings conflicts with --no-warnings\n")
			return 2
		case checks.n == 1:
			// 0.26's -k covers the reads 0.17's -k left out.
			checks.n = 2
		}
	}
	if *filter != "" {
		if _, err := regexp.Compile(*filter); err != nil {
			fmt.Fprintf(stderr, "kinst: invalid --probe-filter regex '%s': %v\n", *filter, err)
			return 2
		}
	}
	for _, f := range splitList(noFeat) {
		if !slices.Contains(api.NoFeatures, f) {
			fmt.Fprintf(stderr, "kinst: --no-feature can only have values '%s', not '%s'\n", strings.Join(api.NoFeatures, ","), f)
			return 2
		}
	}
	if *funcs != "" {
		if err := kernel.UseTraceableFunctions(*funcs); err != nil {
			fmt.Fprintf(stderr, "kinst: --traceable-functions: %v\n", err)
			return 2
		}
	}
	for _, d := range dbgDirs {
		elfsym.AddDebugDirs(strings.Split(d, ":")...)
	}
	if *emitIR != "" {
		fmt.Fprintf(stderr, "kinst: --emit-llvm: kinst compiles to BPF without LLVM, so there is no LLVM IR to write; --emit-elf FILE writes the compiled programs\n")
		return 2
	}
	buffering, err := api.ParseBuffering(*buffer)
	if err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	// -l with a program (-e, or a file that exists) lists the probes it
	// would attach to, once it has compiled; otherwise its argument is
	// a search pattern.
	listProgram := false
	if *list {
		if *prog == "" && (len(rest) == 0 || !isFile(rest[0])) {
			pattern := ""
			if len(rest) > 0 {
				pattern = rest[0]
			}
			if mode == compat.Current && !*noWarn && looksLikeFile(pattern) {
				fmt.Fprintf(stderr, "kinst: warning: %s looks like a file name, but there is no such file: it is taken as a search pattern\n", pattern)
			}
			return listProbes(pattern, attach.ListOptions{Verbose: *verbose, Pid: int(pid), Compat: mode}, stdout, stderr)
		}
		listProgram = true
	}
	switch *format {
	case "text", "json":
	case "pprof":
		if *outFile == "" {
			fmt.Fprintf(stderr, "kinst: -f pprof writes a binary profile: give -o FILE\n")
			return 2
		}
		if runMode.set {
			fmt.Fprintf(stderr, "kinst: -f pprof writes the maps at exit, which --test and --bench do not print\n")
			return 2
		}
	default:
		fmt.Fprintf(stderr, "kinst: invalid output format %q: use text, json or pprof\n", *format)
		return 2
	}
	if !pipeline.ValidStage(*dump) {
		fmt.Fprintf(stderr, "kinst: unknown stage in --dump %q: use ast, types, bpf, maps or all, or several separated by commas\n", *dump)
		return 2
	}
	// -d and -dd are bpftrace's dry runs with debug output, on stdout;
	// --dump prints stages on stderr and goes on.
	dumpStages, dumpTo := *dump, stderr
	if len(stages) > 0 {
		dumpStages = strings.Join(append(stages, dumpStages), ",")
	}
	if debug.n > 0 {
		dumpStages, dumpTo = "ast,types,bpf", stdout
		if debug.n > 1 {
			dumpStages += ",maps"
		}
		if *dump != "" {
			dumpStages += "," + *dump
		}
	}
	if *mech != "" {
		if _, err := codegen.ParseMechanism(*mech); err != nil {
			fmt.Fprintf(stderr, "kinst: --attach: %v\n", err)
			return 2
		}
	}
	name, src, params, err := source(*prog, rest)
	if err != nil && debug.n > 0 && errors.Is(err, os.ErrNotExist) && rest[0] != "" && pipeline.ValidStage(rest[0]) {
		fmt.Fprintf(stderr, "kinst: -d takes no stage, as in bpftrace: print stage %s with --dump %s\n", rest[0], rest[0])
		return 2
	}
	if err != nil && *prog == "" && errors.Is(err, os.ErrNotExist) && isWord(rest[0]) {
		fmt.Fprintf(stderr, "kinst: %s\n", noInstrument("instrument or file", rest[0]))
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	var argv []string
	if isSet(fs, "c") && *command == "" {
		fmt.Fprintf(stderr, "kinst: -c needs a command\n")
		return 2
	}
	if *command != "" {
		if argv, err = session.SplitCommand(*command); err != nil {
			fmt.Fprintf(stderr, "kinst: -c: %v\n", err)
			return 2
		}
	}
	if err := inject.Check(); err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	opts := &api.Options{
		Params:       params,
		Pid:          int(pid),
		Unsafe:       *unsafe,
		Mechanism:    *mech,
		HelperChecks: checks.n,
		Warnings:     stderr,
		Command:      argv,
		Environment:  true,
		IncludeDirs:  incDirs,
		Includes:     incs,
		Debug:        dumpTo,
		DebugStages:  strings.Trim(dumpStages, ","),
		ProbeFilter:  *filter,
		NoFeatures:   splitList(noFeat),
		Verbose:      *verbose,
		Stderr:       stderr,
		Compat:       *compatV,

		FileActivation: *fileActivation,
	}
	if *noWarn {
		opts.Warnings = nil
	} else {
		opts.Warn = hint.Warn(stderr)
	}
	if !*quiet && isTerminal(stderr) {
		opts.Progress = stderr
	}
	p, err := api.Compile(name, src, opts)
	if err != nil {
		return report(err, *verbose, stderr)
	}
	if listProgram {
		return listProgramProbes(p, attach.ListOptions{Verbose: *verbose, Pid: int(pid), Compat: mode}, stdout, stderr)
	}
	if *emitELF != "" {
		if code := writeELF(*emitELF, p, stderr); code != 0 || debug.n == 0 {
			return code
		}
	}
	if debug.n > 0 {
		return 0
	}
	var stackMaps []string
	if *format == "pprof" {
		if stackMaps = stackKeyed(p); len(stackMaps) == 0 {
			fmt.Fprintf(stderr, "kinst: -f pprof: %v\n", pprof.ErrNoStacks)
			return 1
		}
	}
	w := stdout
	var outF *os.File
	if *outFile != "" {
		if outF, err = output.Create(*outFile); err != nil {
			fmt.Fprintf(stderr, "kinst: %v\n", err)
			return 1
		}
		defer outF.Close()
		w = outF
	}
	if *dryRun {
		return report(p.Load(), *verbose, stderr)
	}
	var srv *prom.Server
	if *promAt != "" {
		if srv, err = prom.Listen(*promAt); err != nil {
			fmt.Fprintf(stderr, "kinst: --prometheus: %v\n", err)
			return 1
		}
		defer srv.Close()
	}
	sigs := make(chan os.Signal, 4)
	ro := &api.RunOptions{
		Output:    w,
		JSON:      *format == "json",
		Buffering: buffering,
		Quiet:     *quiet,
		Stdout:    stdout,
		Signals:   sigs,
		Mode:      runMode.mode,
	}
	if stackMaps != nil {
		// The profile goes to -o; the other maps are printed.
		ro.Output = stdout
		ro.Observer = &exporter{profile: w, names: stackMaps, start: time.Now(), srv: srv}
	} else if srv != nil {
		ro.Observer = &exporter{srv: srv}
	}
	// Until now SIGINT and SIGTERM end kinst as they end any process:
	// nothing is in the kernel yet.
	defer session.CatchSignals(sigs)()
	r, err := p.StartWith(context.Background(), nil, ro)
	if err == nil {
		err = r.Wait()
	}
	// A file system may report a failed write only when the file is
	// closed.
	if outF != nil {
		if cerr := outF.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("-o: %w", cerr)
		}
	}
	return report(err, *verbose, stderr)
}

// help is "kinst help", which prints the usage, and "kinst help NAME",
// which prints what "kinst NAME -h" prints, on standard output.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printUsage(stdout)
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "kinst help: name one instrument\n")
		return 2
	case args[0] == "--man":
		writeManual(stdout)
		return 0
	}
	c := instruments.Lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "kinst help: %s\n", noInstrument("instrument", args[0]))
		return 2
	}
	c.Run(context.Background(), []string{"-h"}, stdout, stdout)
	return 0
}

// isWord reports whether arg looks like an instrument's name rather
// than a file's: letters, digits, '-' and '_' only.
func isWord(arg string) bool {
	return arg != "" && strings.IndexFunc(arg, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0
}

// noInstrument says that no instrument (nor file, as what says) is
// called name, and which one was likely meant.
func noInstrument(what, name string) string {
	var names []string
	for _, c := range instruments.Commands() {
		names = append(names, c.Name)
	}
	if near := spell.Nearest(name, names); near != "" {
		return fmt.Sprintf("no %s %s (did you mean %s?)", what, name, near)
	}
	return fmt.Sprintf("no %s %s: kinst -h lists the instruments", what, name)
}

// writeELF writes --emit-elf's object file, which is all a run with it
// does, as in bpftrace.
func writeELF(path string, p *api.Program, stderr io.Writer) int {
	var buf bytes.Buffer
	if err := p.WriteELF(&buf); err != nil {
		fmt.Fprintf(stderr, "kinst: --emit-elf: %v\n", err)
		return 1
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "kinst: --emit-elf: %v\n", err)
		return 1
	}
	return 0
}

// stackKeyed names the maps with a kstack or ustack in their keys.
func stackKeyed(p *api.Program) []string {
	var names []string
	for _, m := range p.Maps() {
		if slices.ContainsFunc(m.Keys, func(k string) bool { return k == "kstack" || k == "ustack" }) {
			names = append(names, m.Name)
		}
	}
	return names
}

// An exporter is the run's kinst.Observer for -f pprof and
// --prometheus: it writes the maps keyed by stacks as a profile at the
// end, and serves the maps to Prometheus while the run goes on.
type exporter struct {
	profile io.Writer // -f pprof's, or nil
	names   []string  // the maps it profiles
	start   time.Time
	srv     *prom.Server // --prometheus's, or nil
}

func (*exporter) Printf(io.Writer, string, string, []api.Value) (bool, error) { return false, nil }
func (*exporter) Record(io.Writer, api.Record) (bool, error)                  { return false, nil }

// Maps writes the profile and leaves the other maps to print; maps
// served to Prometheus are not printed.
func (e *exporter) Maps(_ io.Writer, maps []*api.Map) ([]*api.Map, error) {
	if e.profile == nil {
		return nil, nil
	}
	err := api.WriteProfile(e.profile, maps, api.ProfileOptions{Maps: e.names, Start: e.start, Duration: time.Since(e.start)})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(maps), func(m *api.Map) bool { return slices.Contains(e.names, m.Name) }), nil
}

func (e *exporter) Attached(r *api.Run) {
	if e.srv != nil {
		e.srv.Serve(r.WriteMetrics)
	}
}

// isTerminal reports whether w is a terminal, where a progress line
// may be rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// isSet reports whether the option called name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// stringList is an option that may be given many times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// source finds the program: -e, a file, or standard input for "-"; the
// remaining arguments are its positional parameters.
func source(prog string, rest []string) (name string, src []byte, params []string, err error) {
	if prog != "" {
		return "-e", []byte(prog), rest, nil
	}
	if len(rest) == 0 {
		return "", nil, nil, errors.New("no program: give -e PROGRAM or a file (kinst -h for help)")
	}
	name = rest[0]
	if name == "-" {
		name = "stdin"
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// bpftrace's words, which users search for.
		return "", nil, nil, fmt.Errorf("failed to open file '%s': %w", name, pe.Err)
	}
	if err != nil {
		return "", nil, nil, err
	}
	// The compiler would report every byte of a binary as a token.
	switch {
	case bytes.HasPrefix(src, []byte(elf.ELFMAG)):
		return "", nil, nil, fmt.Errorf("%s is an ELF %s, not a bpftrace program: to trace it, run it with -c or name it in a uprobe", name, elfKind(src))
	case bytes.IndexByte(src, 0) >= 0:
		return "", nil, nil, fmt.Errorf("%s is a binary file, not a bpftrace program", name)
	}
	return name, src, rest[1:], nil
}

// elfKind names what an ELF file is, by its type.
func elfKind(data []byte) string {
	if f, err := elf.NewFile(bytes.NewReader(data)); err == nil && (f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN) {
		return "executable"
	}
	return "file"
}

// report prints err as users should see it and returns the exit status,
// for kinst -e, kinst FILE and the instruments alike.
func report(err error, verbose bool, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var list syntax.ErrorList
	var ve *api.VerifierError
	var ie *api.InterruptError
	var ee *api.ExitError
	var fe *api.FailedError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &fe):
		// The results said which failed.
		return 1
	case errors.As(err, &ie):
		session.ExitBySignal(ie.Signal)
	case errors.As(err, &list):
		fmt.Fprintln(stderr, hint.List(list).Detail())
	case errors.As(err, &ve):
		fmt.Fprintln(stderr, ve.Detail(verbose))
	case errors.Is(err, api.ErrEnvironment):
		// A setting is as much the user's to fix as an option.
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "kinst: %v\n", strings.TrimSpace(hint.Text(err)))
	}
	return 1
}
