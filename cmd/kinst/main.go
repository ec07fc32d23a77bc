// Command kinst instruments a live Linux kernel: it compiles programs in
// bpftrace's language to BPF in-process and runs them.
//
// Usage:
//
//	kinst [options] -e PROGRAM [ARGS...]
//	kinst [options] FILE [ARGS...]
//	kinst -l [PATTERN]
//	kinst features
//
// Run "kinst -h" for the options.
//
// Signals: SIGINT or SIGTERM before the probes are attached ends kinst
// at once, as it ends any process; after, it stops the run (rolling back
// an attach in progress), runs END and prints the maps; a second one, or
// one while the run already ends, ends kinst at once. SIGUSR1 prints the
// maps and tracing goes on.
//
// Exit status: 0 when the run ends normally or by a first signal once
// attached; 1 when compiling, loading, attaching, the -c command or
// writing the output fails (one sentence says which); 2 for a usage
// error; death by the signal (status 128+N in a shell) when a signal
// ends kinst at once, and by SIGPIPE when standard output is a pipe
// closed early.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/export/pprof"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/instruments"
	"kinst.dev/kinst/internal/inject"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/runtime"
	"kinst.dev/kinst/syntax"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "features" {
		return features(args[1:], stdout, stderr)
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
		help    bool
		showVer bool
		incDirs stringList
		incs    stringList
		promAt  = fs.String("prometheus", "", "")
		emitELF = fs.String("emit-elf", "", "")
		emitIR  = fs.String("emit-llvm", "", "")
	)
	fs.Var(&incDirs, "I", "")
	fs.Var(&incs, "include", "")
	fs.Var(&pid, "p", "")
	// The kernel activates USDT semaphores (ref_ctr_offset) in every
	// process the uprobes reach, which is file-based activation; before
	// Linux 4.20, kinst raises them itself in every process mapping the
	// file when asked to.
	fileActivation := fs.Bool("usdt-file-activation", false, "")
	fs.Var(&checks, "k", "")
	fs.Var(&debug, "d", "")
	for _, name := range []string{"h", "help"} {
		fs.BoolVar(&help, name, false, "")
	}
	for _, name := range []string{"V", "version"} {
		fs.BoolVar(&showVer, name, false, "")
	}
	rest, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "kinst: %s\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
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
	}
	if *emitIR != "" {
		fmt.Fprintf(stderr, "kinst: --emit-llvm: kinst compiles to BPF without LLVM, so there is no LLVM IR to write; --emit-elf FILE writes the compiled programs\n")
		return 2
	}
	buffering, err := runtime.ParseBuffering(*buffer)
	if err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	if *list {
		pattern := ""
		if len(rest) > 0 {
			pattern = rest[0]
		}
		if *prog != "" {
			pattern = *prog
		}
		return listProbes(pattern, *verbose, int(pid), stdout, stderr)
	}
	var rf runtime.Format
	switch *format {
	case "text":
	case "json":
		rf = runtime.JSON
	case "pprof":
		if *outFile == "" {
			fmt.Fprintf(stderr, "kinst: -f pprof writes a binary profile: give -o FILE\n")
			return 2
		}
	default:
		fmt.Fprintf(stderr, "kinst: unknown output format %q: use text, json or pprof\n", *format)
		return 2
	}
	if !pipeline.ValidStage(*dump) {
		fmt.Fprintf(stderr, "kinst: unknown stage in --dump %q: use ast, types, bpf, maps or all, or several separated by commas\n", *dump)
		return 2
	}
	// -d and -dd are bpftrace's dry runs with debug output, on stdout;
	// --dump prints stages on stderr and goes on.
	stages, dumpTo := *dump, stderr
	if debug.n > 0 {
		stages, dumpTo = "ast,types,bpf", stdout
		if debug.n > 1 {
			stages += ",maps"
		}
		if *dump != "" {
			stages += "," + *dump
		}
	}
	var force codegen.Mechanism
	if *mech != "" {
		if force, err = codegen.ParseMechanism(*mech); err != nil {
			fmt.Fprintf(stderr, "kinst: --attach: %v\n", err)
			return 2
		}
	}
	name, src, params, err := source(*prog, rest)
	if err != nil && debug.n > 0 && errors.Is(err, os.ErrNotExist) && rest[0] != "" && pipeline.ValidStage(rest[0]) {
		fmt.Fprintf(stderr, "kinst: -d takes no stage, as in bpftrace: print stage %s with --dump %s\n", rest[0], rest[0])
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
		if argv, err = runtime.SplitCommand(*command); err != nil {
			fmt.Fprintf(stderr, "kinst: -c: %v\n", err)
			return 2
		}
	}
	var warnings io.Writer = stderr
	if *noWarn {
		warnings = nil
	}
	var program string
	if len(argv) > 0 {
		program = argv[0]
	}
	popts := &pipeline.Options{
		Command: program,
		Params:  params,
		Pid:     int(pid),
		Unsafe:  *unsafe,
		Cpid:    len(argv) > 0,
		Force:   force,
		Dump:    dumpTo,
		Stages:  stages,

		IncludeDirs:  incDirs,
		Includes:     incs,
		Warnings:     warnings,
		HelperChecks: checks.n,
	}
	ropts := &runtime.Options{
		Format:     rf,
		Stdout:     stdout,
		Stderr:     stderr,
		Quiet:      *quiet,
		Verbose:    *verbose,
		Command:    argv,
		Pid:        int(pid),
		Buffering:  buffering,
		NoWarnings: *noWarn,

		FileActivation: *fileActivation,
	}
	for _, fromEnv := range []func() error{popts.FromEnv, ropts.FromEnv} {
		if err := fromEnv(); err != nil {
			fmt.Fprintf(stderr, "kinst: %v\n", err)
			return 2
		}
	}
	if err := inject.Check(); err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	// Until the run catches signals, SIGINT and SIGTERM end kinst as
	// they end any process: nothing is in the kernel yet.
	inject.Delay(context.Background(), inject.Compile)
	out, err := pipeline.Compile(name, src, popts)
	if err != nil {
		return report(err, *verbose, stderr)
	}

	if *emitELF != "" {
		if code := writeELF(*emitELF, out, stderr); code != 0 || debug.n == 0 {
			return code
		}
	}
	if debug.n > 0 {
		return 0
	}
	var stackMaps []string
	if *format == "pprof" {
		if stackMaps = stackKeyed(out); len(stackMaps) == 0 {
			fmt.Fprintf(stderr, "kinst: -f pprof: %v\n", pprof.ErrNoStacks)
			return 1
		}
	}
	w := stdout
	if *outFile != "" {
		f, err := os.Create(*outFile)
		if err != nil {
			fmt.Fprintf(stderr, "kinst: %v\n", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	if *dryRun {
		return report(runtime.Load(out, &runtime.Options{Stderr: stderr, Verbose: *verbose}), *verbose, stderr)
	}
	ropts.Out = w
	// bpftrace prints the line when the variable is set, even empty.
	_, ropts.NotifyAttached = os.LookupEnv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")
	if *format == "pprof" {
		writeProfile(ropts, w, stdout, stackMaps)
	}
	if *promAt != "" {
		srv, err := prom.Listen(*promAt)
		if err != nil {
			fmt.Fprintf(stderr, "kinst: --prometheus: %v\n", err)
			return 1
		}
		defer srv.Close()
		srv.Feed(out, ropts)
	}
	return report(runtime.Run(context.Background(), out, ropts), *verbose, stderr)
}

// writeELF writes --emit-elf's object file, which is all a run with it
// does, as in bpftrace.
func writeELF(path string, out *codegen.Output, stderr io.Writer) int {
	var buf bytes.Buffer
	if err := pipeline.WriteELF(&buf, out); err != nil {
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
func stackKeyed(out *codegen.Output) []string {
	var names []string
	for _, m := range out.Maps {
		if slices.ContainsFunc(m.Keys, func(t *check.Type) bool { return t.Kind == check.Stack }) {
			names = append(names, m.Display())
		}
	}
	return names
}

// writeProfile makes the run write the maps called names as a pprof
// profile to w at exit, and print the others to stdout.
func writeProfile(opts *runtime.Options, w, stdout io.Writer, names []string) {
	start := time.Now()
	opts.Out = stdout
	opts.ExitMaps = func(maps []*output.Map) error {
		err := pprof.Write(w, maps, pprof.Options{Maps: names, Start: start, Duration: time.Since(start)})
		rest := slices.DeleteFunc(slices.Clone(maps), func(m *output.Map) bool { return slices.Contains(names, m.Name) })
		if err != nil || len(rest) == 0 {
			return err
		}
		io.WriteString(stdout, output.ExitSeparator)
		return output.NewText(stdout).Maps(rest)
	}
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
	if rest[0] == "-" {
		src, err = io.ReadAll(os.Stdin)
		return "stdin", src, rest[1:], err
	}
	src, err = os.ReadFile(rest[0])
	return rest[0], src, rest[1:], err
}

// report prints err as users should see it and returns the exit status.
func report(err error, verbose bool, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var list syntax.ErrorList
	var ve *runtime.VerifierError
	var ie *runtime.InterruptError
	switch {
	case errors.As(err, &ie):
		runtime.ExitBySignal(ie.Signal)
	case errors.As(err, &list):
		fmt.Fprintln(stderr, list.Detail())
	case errors.As(err, &ve):
		fmt.Fprintln(stderr, ve.Detail(verbose))
	default:
		fmt.Fprintf(stderr, "kinst: %v\n", strings.TrimSpace(err.Error()))
	}
	return 1
}
