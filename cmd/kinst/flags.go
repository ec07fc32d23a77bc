package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	api "kinst.dev/kinst"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/instruments"
	"kinst.dev/kinst/session"
)

// version is kinst's release, set at link time with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `USAGE:
    kinst [options] filename [ARGS...]
    kinst [options] - <stdin input>
    kinst [options] -e 'program' [ARGS...]
    kinst -l [-v] [search]
    kinst -l [-v] -e 'program' | filename
    kinst features [-f text|json]
    kinst INSTRUMENT [options]
    kinst help [INSTRUMENT]
    kinst help --man
    kinst completion bash|zsh|fish

OPTIONS:
    -B MODE        output buffering mode ('line', 'full', 'none')
    -f FORMAT      output format ('text', 'json', 'pprof': the maps keyed by
                   kstack or ustack as a pprof profile in -o FILE)
    -o, --output FILE
                   redirect program output to FILE
    -e 'program'   execute this program
    -h, --help     show this help message
    -I DIR         add the directory to the include search path
    --include FILE add an #include file before preprocessing
    -l, --list [search]
                   list probes (-v adds argument types); with a
                   program, the probes it attaches to
    -p, --pid PID  restrict uprobes to process PID, and (not with --compat 0.17)
                   kernel probes, tracepoints and perf events
    -c, --cmd 'CMD'
                   run CMD under tracing; stop when it exits
    --probe-filter REGEX
                   attach only the probes whose names REGEX matches (and
                   BEGIN and END)
    --no-feature F[,F]
                   do not use kprobe_multi, kprobe_session or uprobe_multi
                   links although the kernel has them
    --traceable-functions FILE
                   read the traceable kernel functions from FILE, in the
                   form of available_filter_functions
    --debuginfo DIR[:DIR]
                   look for separate debug files in DIR too (relative to
                   the traced binary's folder if relative)
    --usdt-file-activation
                   activate usdt semaphores based on file path (always so
                   where the kernel has the uprobe reference counter)
    --unsafe       allow unsafe builtin functions: system(), signal(),
                   signal_thread(), override(), write_user(), core()
    -q, --quiet    keep messages quiet: no "Attached N probes" line
    --info         print information about kernel BPF support
    -k, --warnings warn when a helper or a probe read fails (0.17 mode:
                   -k warns of failing helpers except reads, -kk of all)
    -V, --version  kinst version
    --no-warnings  disable all warning messages
    --dry-run      compile and load into the kernel, then stop
    --prometheus ADDR
                   serve the maps as Prometheus metrics on http://ADDR/metrics
                   while running, instead of printing them at exit
    --compat VER   follow bpftrace 0.17's meanings and output where 0.26.1's
                   differ (VER 0.17; the default, 0.26, is bpftrace 0.26.1)
    --attach MECH  run kprobes and kretprobes as kprobe, kprobe.multi or fentry
                   (fexit for kretprobes) instead of the cheapest the kernel offers
    --mode MODE    run the test: probes (test) or the bench: probes (bench)
                   in place of the others; codegen, compiler-bench and format
                   are refused
    --test         run all test: probes (same as --mode test)
    --bench        run all bench: probes (same as --mode bench)

TROUBLESHOOTING OPTIONS:
    -v, --verbose  verbose messages: the verifier's log with load errors
    -d, --debug STAGE
                   print a compilation stage to stderr and go on: ast, types,
                   codegen (kinst's BPF), or all; several separated by commas
    -d, -dd        (0.17 mode) dry run printing the syntax tree, the types
                   and the BPF to stdout (-dd: the maps and records too)
    --dump STAGES  print compilation stages to stderr and go on: ast, types,
                   bpf, maps or all, or several separated by commas
    --emit-elf FILE
                   (dry run) write the compiled programs and maps to FILE as a
                   BPF ELF object that libbpf and cilium/ebpf load
    --emit-llvm FILE
                   refused: kinst compiles without LLVM (use --emit-elf)
    --aot, --fmt, --dwarf-pid
                   refused: kinst has no ahead-of-time build, no formatter,
                   and no DWARF unwinding

ENVIRONMENT:
    BPFTRACE_STRLEN             [default: 1024, 64 in the 0.17 mode] bytes per str() (at most 65536; or KINST_STRLEN, BPFTRACE_MAX_STRLEN)
    BPFTRACE_STR_TRUNC_TRAILER  [default: ..] ends a string cut short (not in the 0.17 mode)
    BPFTRACE_MAP_KEYS_MAX       [default: 4096] max keys in a map (or KINST_MAP_KEYS_MAX)
    BPFTRACE_CAT_BYTES_MAX      [default: 10240] maximum bytes read by cat builtin
    BPFTRACE_MAX_PROBES         [default: none] max number of probes
    BPFTRACE_LOG_SIZE           [default: 65536] first size of the verifier log in bytes (it grows)
    BPFTRACE_PERF_RB_PAGES      [default: none] pages per CPU for the ring buffer (a power of two)
    BPFTRACE_NO_USER_SYMBOLS    [default: 0] disable user symbol resolution
    BPFTRACE_CACHE_USER_SYMBOLS [default: 1] 0 or NONE reads a process's symbols afresh for every address;
                                PER_PROGRAM resolves an exited process's frames in the probed program
    BPFTRACE_BTF                [default: none] BTF file used in place of the kernel's types
    KINST_BUFFER_KB             [default: 2048] size of the ring buffer events travel in
    KINST_COMPAT                [default: 0.26] as --compat: 0.17 for bpftrace 0.17's meanings and output
    KINST_CACHE_DIR             [default: /var/cache/kinst for root, else ~/.cache/kinst] where the
                                macros of included headers are kept between runs; empty: nowhere

EXAMPLES:
kinst -l '*sleep*'
    list probes containing "sleep"
kinst -e 'tracepoint:syscalls:sys_enter_nanosleep { printf("PID %d sleeping...\n", pid); }'
    trace processes calling sleep
kinst -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'
    count syscalls by process name
`

// printUsage writes the usage and the instruments.
func printUsage(w io.Writer) {
	io.WriteString(w, usage)
	if cmds := instruments.Commands(); len(cmds) > 0 {
		fmt.Fprintln(w, "\nINSTRUMENTS (kinst NAME -h for their options):")
		for _, c := range cmds {
			fmt.Fprintf(w, "    %-10s %s\n", c.Name, c.Summary)
		}
	}
}

// A usageError is a command line getopt rejects; the usage follows the
// message, as in bpftrace.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseArgs parses args as getopt_long does for bpftrace: grouped
// one-letter switches (-lv), a value joined to its option (-p123) or in
// the next argument, --name and --name=value, options after the program
// file, and "--" ending them. Multi-letter options given with one dash
// (-unsafe) are accepted too. It returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(pos, args[i+1:]...), nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
			continue
		}
		long := strings.HasPrefix(a, "--")
		name := strings.TrimLeft(a, "-")
		if !long && len(name) > 1 && fs.Lookup(name) != nil {
			long = true
		}
		if long {
			name, val, hasVal := strings.Cut(name, "=")
			f := fs.Lookup(name)
			if f == nil || len(name) == 1 {
				return nil, usagef("unrecognized option '%s'", a)
			}
			if !isBool(f) && !hasVal {
				if i+1 == len(args) {
					return nil, usagef("option '--%s' requires an argument", name)
				}
				i++
				val = args[i]
			} else if !hasVal {
				val = "true"
			}
			if err := fs.Set(name, val); err != nil {
				return nil, err
			}
			continue
		}
		for j := 0; j < len(name); j++ {
			c := name[j : j+1]
			f := fs.Lookup(c)
			if f == nil {
				return nil, usagef("invalid option -- '%s'", c)
			}
			if isBool(f) {
				if err := fs.Set(c, "true"); err != nil {
					return nil, err
				}
				continue
			}
			val := name[j+1:]
			if val == "" {
				if i+1 == len(args) {
					return nil, usagef("option requires an argument -- '%s'", c)
				}
				i++
				val = args[i]
			}
			if err := fs.Set(c, val); err != nil {
				return nil, err
			}
			break
		}
	}
	return pos, nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// countFlag counts a switch given more than once, as -k and -kk, -d and
// -dd: at most twice.
type countFlag struct {
	n       int
	tooMany string // the error for a third time
}

func (c *countFlag) String() string   { return strconv.Itoa(c.n) }
func (c *countFlag) IsBoolFlag() bool { return true }
func (c *countFlag) Set(string) error {
	if c.n == 2 {
		return errors.New(c.tooMany)
	}
	c.n++
	return nil
}

// pidFlag is -p: a live process, checked as bpftrace checks it.
type pidFlag int

func (p *pidFlag) String() string { return strconv.Itoa(int(*p)) }
func (p *pidFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("pid '%s' is not a valid decimal number", s)
	}
	if n < 1 || n > pidMaxLimit {
		return fmt.Errorf("pid '%s' out of valid pid range [1,%d]", s, pidMaxLimit)
	}
	if err := session.CheckPid(int(n)); err != nil {
		return err
	}
	*p = pidFlag(n)
	return nil
}

// pidMaxLimit is the largest pid_max a 64-bit kernel accepts, the range
// bpftrace checks -p against.
const pidMaxLimit = 1 << 22

// printVersion prints what -V prints.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "kinst v%s\n", version)
}

// printInfo prints what --info prints: the system, the build, then the
// kernel features kinst detects.
func printInfo(stdout, stderr io.Writer) int {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		fmt.Fprintf(stdout, "System\n  OS: %s %s %s\n  Arch: %s\n\n",
			unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]),
			unix.ByteSliceToString(u.Version[:]), unix.ByteSliceToString(u.Machine[:]))
	}
	fmt.Fprintf(stdout, "Build\n  version: v%s\n  Go: %s\n\nKernel features\n", version, runtime.Version())
	return features(nil, stdout, stderr)
}

// refusedOptions are bpftrace 0.26's options with a value that kinst
// cannot honour, with the sentence that says so.
var refusedOptions = map[string]string{
	"aot":       "--aot: kinst compiles a program each time it runs and builds no ahead-of-time binary: run the script with kinst itself",
	"dwarf-pid": "--dwarf-pid: kinst does not unwind user stacks with DWARF",
}

// refused017 are the options the 0.17 mode refuses on top: bpftrace
// 0.17 has no test or bench mode, nor test: or bench: probes.
var refused017 = map[string]string{
	"mode":  "--mode: bpftrace 0.17 has no --mode; kinst runs test: and bench: probes in the default mode (--compat 0.26)",
	"bench": "--bench: bpftrace 0.17 has no bench mode; kinst runs bench: probes in the default mode (--compat 0.26)",
	"test":  "--test: bpftrace 0.17 has no test mode; kinst runs test: probes in the default mode (--compat 0.26)",
}

// refusedModes are the values of bpftrace 0.26.1's --mode that kinst
// cannot honour, with the sentence that says why.
var refusedModes = map[string]string{
	"codegen":        "kinst compiles to BPF without LLVM, so there is no LLVM IR to generate; --dry-run compiles and loads the program without running it",
	"compiler-bench": "kinst does not time the passes of its compiler; --dump prints what each produces",
	"format":         "kinst has no formatter for bpftrace programs",
}

// modeFlag is --mode, and the switches --test, --bench and --fmt that
// set it, read as bpftrace 0.26.1 reads them: --mode takes the last
// value given, while a switch conflicts with a mode given before it.
type modeFlag struct {
	mode api.Mode
	set  bool
}

func (m *modeFlag) String() string { return "" }

// Set reads --mode's value.
func (m *modeFlag) Set(s string) error {
	if why, ok := refusedModes[s]; ok {
		return fmt.Errorf("--mode %s: %s", s, why)
	}
	return m.choose(s)
}

// choose sets the mode s names.
func (m *modeFlag) choose(s string) error {
	switch s {
	case "test":
		m.mode = api.RunTests
	case "bench":
		m.mode = api.RunBenchmarks
	default:
		return errors.New("--mode can only be 'codegen', 'compiler-bench', 'bench', 'test' or 'format'")
	}
	m.set = true
	return nil
}

// alias returns the setter of the switch --name, which stands for
// --mode mode.
func (m *modeFlag) alias(name, mode string) func(string) error {
	return func(string) error {
		if m.set {
			return fmt.Errorf("--%s conflicts with existing --mode", name)
		}
		if why, ok := refusedModes[mode]; ok {
			return fmt.Errorf("--%s: %s", name, why)
		}
		return m.choose(mode)
	}
}

// compatOf finds the bpftrace release the command line asks for, in
// --compat or else KINST_COMPAT, before the options are parsed.
func compatOf(args []string) (compat.Version, error) {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "compat" {
			continue
		}
		if !hasVal && i+1 < len(args) {
			val = args[i+1]
		}
		v, err := compat.Parse(val)
		if err != nil {
			return v, fmt.Errorf("--compat: %w", err)
		}
		return v, nil
	}
	return compat.FromEnv()
}

// stageList is bpftrace 0.26's -d STAGE, given as often as wanted, each a
// comma-separated list: kinst prints the stages it has that match.
type stageList []string

// debugStages maps bpftrace's -d stages to kinst's --dump stages: kinst
// has BPF where bpftrace has LLVM IR, and its verifier log comes with
// -v.
var debugStages = map[string]string{
	"ast": "ast", "parse": "ast", "types": "types",
	"codegen": "bpf", "codegen-opt": "bpf", "dis": "bpf",
	"verifier": "", "libbpf": "", "all": "all",
}

func (l *stageList) String() string { return strings.Join(*l, ",") }

func (l *stageList) Set(s string) error {
	for _, st := range strings.Split(s, ",") {
		if st == "" {
			continue
		}
		d, ok := debugStages[st]
		if !ok {
			return fmt.Errorf("invalid option for -d: %s: use ast, types, codegen, dis, verifier, libbpf or all", st)
		}
		if d != "" {
			*l = append(*l, d)
		}
	}
	return nil
}

// splitList splits the comma-separated values of an option given any
// number of times.
func splitList(l stringList) []string {
	var out []string
	for _, s := range l {
		for _, v := range strings.Split(s, ",") {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
