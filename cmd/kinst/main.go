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
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/instruments"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/runtime"
	"kinst.dev/kinst/syntax"
)

const usage = `usage:
  kinst [options] -e PROGRAM [ARGS...]
  kinst [options] FILE|- [ARGS...]
  kinst -l [-v] [PATTERN]
  kinst features [-f text|json]

options:
  -e PROGRAM     run PROGRAM
  -l [PATTERN]   list probes matching PATTERN (-v adds argument types)
  -p PID         restrict uprobes to process PID
  -c CMD         run CMD under tracing; stop when it exits
  -f text|json   output format (default text)
  -o FILE        write output to FILE
  -q             quiet: no "Attaching N probes..." line
  -v             verbose: the verifier's log with load errors, types with -l
  -d STAGE       print a stage and continue: ast, types, bpf or all
  --dry-run      compile and load into the kernel, then stop
  --unsafe       allow system(), signal() and override()
  -I DIR         add DIR to the #include search path
  --include FILE read FILE before the program, as #include "FILE"
  --prometheus ADDR
                 serve the maps as Prometheus metrics on http://ADDR/metrics
                 while running, instead of printing them at exit
  --attach MECH  run kprobes and kretprobes as kprobe, kprobe.multi or fentry
                 (fexit for kretprobes) instead of the cheapest the kernel offers
  --usdt-file-activation
                 as bpftrace's: kinst always has the kernel raise USDT semaphores
                 in every process that maps the probed file, running or to come

environment:
  KINST_STRLEN (or BPFTRACE_STRLEN)            size of str() strings (default 64, at most 1024)
  KINST_MAP_KEYS_MAX (or BPFTRACE_MAP_KEYS_MAX)  elements per map (default 4096)
  KINST_BUFFER_KB                              size of the ring buffer events travel in (default 2048)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit status with an already printed message.
type exitError int

func (e exitError) Error() string { return "exit status " + strconv.Itoa(int(e)) }

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
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		if cmds := instruments.Commands(); len(cmds) > 0 {
			fmt.Fprintln(stderr, "\ninstruments (kinst NAME -h for their options):")
			for _, c := range cmds {
				fmt.Fprintf(stderr, "  %-10s %s\n", c.Name, c.Summary)
			}
		}
	}
	var (
		prog    = fs.String("e", "", "")
		list    = fs.Bool("l", false, "")
		pid     = fs.Int("p", 0, "")
		command = fs.String("c", "", "")
		format  = fs.String("f", "text", "")
		outFile = fs.String("o", "", "")
		quiet   = fs.Bool("q", false, "")
		verbose = fs.Bool("v", false, "")
		debug   = fs.String("d", "", "")
		dryRun  = fs.Bool("dry-run", false, "")
		unsafe  = fs.Bool("unsafe", false, "")
		mech    = fs.String("attach", "", "")
		_       = fs.Bool("usdt-file-activation", false, "")
		incDirs stringList
		incs    stringList
		promAt  = fs.String("prometheus", "", "")
	)
	fs.Var(&incDirs, "I", "")
	fs.Var(&incs, "include", "")
	// Options may follow the program file, as getopt allows; "--" ends
	// them, for parameters that start with a dash.
	rest, err := instruments.ParseFlags(fs, expandFlags(args))
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
		return listProbes(pattern, *verbose, *pid, stdout, stderr)
	}
	var rf runtime.Format
	switch *format {
	case "text":
	case "json":
		rf = runtime.JSON
	default:
		fmt.Fprintf(stderr, "kinst: unknown output format %q: use text or json\n", *format)
		return 2
	}
	if !pipeline.ValidStage(*debug) {
		fmt.Fprintf(stderr, "kinst: unknown stage %q for -d: use ast, types, bpf or all\n", *debug)
		return 2
	}
	var force codegen.Mechanism
	if *mech != "" {
		if force, err = codegen.ParseMechanism(*mech); err != nil {
			fmt.Fprintf(stderr, "kinst: --attach: %v\n", err)
			return 2
		}
	}
	name, src, params, err := source(*prog, rest)
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
	popts := &pipeline.Options{
		Params: params,
		Pid:    *pid,
		Unsafe: *unsafe,
		Cpid:   len(argv) > 0,
		Force:  force,
		Dump:   stderr,
		Stages: *debug,

		IncludeDirs: incDirs,
		Includes:    incs,
		Warnings:    stderr,
	}
	if err := popts.FromEnv(); err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 2
	}
	out, err := pipeline.Compile(name, src, popts)
	if err != nil {
		return report(err, *verbose, stderr)
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
	opts := &runtime.Options{
		Out:     w,
		Format:  rf,
		Stdout:  stdout,
		Stderr:  stderr,
		Quiet:   *quiet,
		Verbose: *verbose,
		Command: argv,
		Pid:     *pid,
	}
	if *promAt != "" {
		srv, err := prom.Listen(*promAt)
		if err != nil {
			fmt.Fprintf(stderr, "kinst: --prometheus: %v\n", err)
			return 1
		}
		defer srv.Close()
		srv.Feed(opts)
	}
	return report(runtime.Run(context.Background(), out, opts), *verbose, stderr)
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

// valueFlags are the options that take a value.
var valueFlags = map[string]bool{"e": true, "p": true, "c": true, "f": true, "o": true, "d": true, "attach": true, "I": true, "include": true, "prometheus": true}

// expandFlags splits grouped one-letter switches as getopt does, so
// that "-lv" means "-l -v" as in bpftrace.
func expandFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if dir, ok := strings.CutPrefix(a, "-I"); ok && dir != "" {
			out = append(out, "-I", dir) // -IDIR, as for a C compiler
			continue
		}
		// Switches may end in one option that takes a value, attached or
		// the next argument: "-lp PID", "-lvp PID", "-lp123".
		if lead := len(name) - len(strings.TrimLeft(name, "lvq")); !strings.HasPrefix(a, "--") && lead > 0 && lead < len(name) && valueFlags[name[lead:lead+1]] {
			for _, c := range name[:lead+1] {
				out = append(out, "-"+string(c))
			}
			if v := name[lead+1:]; v != "" {
				out = append(out, v)
			} else if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		if strings.HasPrefix(a, "--") || len(name) < 2 || strings.Trim(name, "lvq") != "" {
			out = append(out, a)
			if valueFlags[name] && !strings.Contains(name, "=") && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		for _, c := range name {
			out = append(out, "-"+string(c))
		}
	}
	return out
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
	var ee exitError
	switch {
	case errors.As(err, &list):
		fmt.Fprintln(stderr, list.Detail())
	case errors.As(err, &ve):
		fmt.Fprintln(stderr, ve.Detail(verbose))
	case errors.As(err, &ee):
		return int(ee)
	default:
		fmt.Fprintf(stderr, "kinst: %v\n", strings.TrimSpace(err.Error()))
	}
	return 1
}
