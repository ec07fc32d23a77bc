package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// Compile errors name FILE:LINE:COL, quote the source line and point at
// the fault with a caret; kinst exits 1 and attaches nothing (stdout stays
// empty: not even the Attaching line).
func TestCompileErrors(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	tests := []struct {
		name   string
		args   []string
		root   bool // the checker reads tracefs
		stderr string
	}{
		{"syntax in a file", []string{"testdata/syntax.bt"}, false,
			"testdata/syntax.bt:4:15: expected ')', found '{'\n" +
				"  if (@x == 1 {\n" +
				"              ^\n"},
		{"type in a file, tab kept", []string{"testdata/type.bt"}, false,
			"testdata/type.bt:4:7: invalid operation: int64 + string[2] (strings support only == and !=)\n" +
				"\t$y = @x + \"s\";\n" +
				"\t     ^~~~~~~~\n"},
		{"assignment to a bare name", []string{"-e", "BEGIN { x = 1 }"}, false,
			"-e:1:9: cannot assign to this expression: only maps (@x) and variables ($x) take assignments\n" +
				"BEGIN { x = 1 }\n" +
				"        ^\n"},
		{"two errors in one line", []string{"-e", `BEGIN { "unterminated }`}, false,
			"-e:1:9: string not terminated\n" +
				"BEGIN { \"unterminated }\n" +
				"        ^~~~~~~~~~~~~~~\n" +
				"-e:1:24: expected ';' or '}' after statement, found end of program\n" +
				"BEGIN { \"unterminated }\n" +
				"                       ^\n"},
		{"unknown probe type", []string{"-e", "BEGIN { @ = 1 } @"}, false,
			"-e:1:17: unknown probe type \"@\"\n" +
				"BEGIN { @ = 1 } @\n" +
				"                ^\n" +
				"-e:1:18: expected '{' or a /predicate/, found end of program\n" +
				"BEGIN { @ = 1 } @\n" +
				"                 ^\n"},
		{"malformed declaration", []string{"-e", "struct s { int x int y; }; BEGIN { }"}, false,
			"-e:1:18: expected ';' after field, found 'int'\n" +
				"struct s { int x int y; }; BEGIN { }\n" +
				"                 ^~~\n"},
		{"unknown field type", []string{"-e", "struct s {\n\tstruct nope *p;\n\tnope_t q;\n}; BEGIN { }"}, false,
			"-e:3:2: unknown type nope_t\n" +
				"\tnope_t q;\n" +
				"\t^~~~~~\n"},
		{"array index out of bounds", []string{"-e", "struct s { int a[2]; }; BEGIN { @ = ((struct s *)0)->a[2]; }"}, false,
			"-e:1:37: the index 2 is out of bounds for array of size 2\n" +
				"struct s { int a[2]; }; BEGIN { @ = ((struct s *)0)->a[2]; }\n" +
				"                                    ^~~~~~~~~~~~~~~~~~~~~\n"},
		{"float member read", []string{"-e", "struct s { int a; float f; }; BEGIN { @ = ((struct s *)0)->f; }"}, false,
			"-e:1:43: cannot read a float: floating-point values are not supported\n" +
				"struct s { int a; float f; }; BEGIN { @ = ((struct s *)0)->f; }\n" +
				"                                          ^~~~~~~~~~~~~~~~~~\n"},
		{"map kind changes", []string{"-e", "BEGIN { @x = count(); @x = 1; }"}, false,
			"-e:1:23: @x holds count values; cannot assign int64\n" +
				"BEGIN { @x = count(); @x = 1; }\n" +
				"                      ^~\n"},
		{"unknown function", []string{"-e", "BEGIN { foo(); }"}, false,
			"-e:1:9: unknown function foo\n" +
				"BEGIN { foo(); }\n" +
				"        ^~~\n"},
		{"printf arguments", []string{"-e", `BEGIN { printf("%d\n"); }`}, false,
			"-e:1:9: printf(): not enough arguments for format string (0 supplied, 1 expected)\n" +
				"BEGIN { printf(\"%d\\n\"); }\n" +
				"        ^~~~~~~~~~~~~~\n"},
		{"variable used before assignment", []string{"-e", "BEGIN { $x; }"}, false,
			"-e:1:9: variable $x is used before it is assigned\n" +
				"BEGIN { $x; }\n" +
				"        ^~\n"},
		{"unknown tracepoint", []string{"-e", "tracepoint:syscalls:sys_enter_nope { }"}, true,
			"-e:1:1: no matches for tracepoint syscalls:sys_enter_nope; kinst -l 'tracepoint:syscalls:*' lists the syscalls tracepoints\n" +
				"tracepoint:syscalls:sys_enter_nope { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
		{"unknown tracepoint category", []string{"-e", "tracepoint:nope:* { }"}, true,
			"-e:1:1: no tracepoint matches nope:*; kinst -l 'tracepoint:*' lists them\n" +
				"tracepoint:nope:* { }\n" +
				"^~~~~~~~~~~~~~~~~\n"},
		{"unknown tracepoint field", []string{"-e", "tracepoint:syscalls:sys_enter_openat { @ = args->nope; }"}, true,
			"-e:1:44: struct syscalls_sys_enter_openat_args has no field nope (did you mean mode?)\n" +
				"tracepoint:syscalls:sys_enter_openat { @ = args->nope; }\n" +
				"                                           ^~~~~~~~~~\n"},
		{"unknown software event", []string{"-e", "software:nope:1 { }"}, false,
			"-e:1:1: unknown software event \"nope\"; kinst -l 'software:*' lists them\n" +
				"software:nope:1 { }\n" +
				"^~~~~~~~~~~~~~~\n"},
		{"software event count", []string{"-e", "s:faults:0 { }"}, false,
			"-e:1:1: software count \"0\" must be a positive whole number\n" +
				"s:faults:0 { }\n" +
				"^~~~~~~~~~\n"},
		{"software event count out of range", []string{"-e", "software:page-faults:99999999999999999999999 { }"}, false,
			"-e:1:1: software count \"99999999999999999999999\" is out of range: at most 9223372036854775807\n" +
				"software:page-faults:99999999999999999999999 { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
		{"interval out of range", []string{"-e", "interval:s:10000000000 { }"}, false,
			"-e:1:1: interval rate \"10000000000\" is out of range: at most 9223372036\n" +
				"interval:s:10000000000 { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~\n"},
		{"positional parameter missing in a probe", []string{"-e", "interval:ms:$1 { }"}, false,
			"-e:1:1: interval:ms:$1 uses positional parameter $1, but 0 were given\n" +
				"interval:ms:$1 { }\n" +
				"^~~~~~~~~~~~~~\n"},
		{"uprobe address outside the file", []string{"-e", "uprobe:/bin/true:0x99999999 { }"}, false,
			"-e:1:1: could not resolve address: /bin/true:0x99999999 (no loadable segment holds it)\n" +
				"uprobe:/bin/true:0x99999999 { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
		{"watchpoint length", []string{"-e", "watchpoint:0x1000:3:w { }"}, false,
			"-e:1:1: watchpoint length \"3\" must be 1, 2, 4 or 8\n" +
				"watchpoint:0x1000:3:w { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~\n"},
		{"watchpoint mode", []string{"-e", "watchpoint:0x1000:8:rx { }"}, false,
			"-e:1:1: watchpoint mode \"rx\" mixes execution with reads or writes, which one debug register cannot watch\n" +
				"watchpoint:0x1000:8:rx { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~\n"},
		{"watchpoint on an argument without a process", []string{"-e", "watchpoint:f+arg0:8:w { }"}, false,
			"-e:1:1: watchpoint on a function's argument watches a process: give -p PID or -c CMD\n" +
				"watchpoint:f+arg0:8:w { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~\n"},
		{"watchpoint on an argument out of reach", []string{"-e", "asyncwatchpoint:f+arg6:8:w { }", "-c", "/bin/true"}, false,
			"-e:1:1: asyncwatchpoint argument arg6 is out of reach: x86-64 passes arg0 to arg5 in registers\n" +
				"asyncwatchpoint:f+arg6:8:w { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
		{"watchpoint on a missing function", []string{"-e", "watchpoint:nope+arg0:8:w { }", "-c", "/bin/true"}, false,
			"-e:1:1: no such function: nope in /bin/true\n" +
				"watchpoint:nope+arg0:8:w { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~\n"},
		{"unwatch of a string", []string{"-e", `BEGIN { unwatch("x"); }`}, false,
			"-e:1:17: unwatch() takes an address, not string[2]\n" +
				"BEGIN { unwatch(\"x\"); }\n" +
				"                ^~~\n"},
		{"unknown iterator", []string{"-e", "iter:nope { }"}, true,
			"-e:1:1: this kernel has no iterator nope; kinst -l 'iter:*' lists them\n" +
				"iter:nope { }\n" +
				"^~~~~~~~~\n"},
		{"core() in BEGIN", []string{"--unsafe", "-e", `BEGIN { core("/tmp/c"); }`}, false,
			"-e:1:9: core() has no process to dump in BEGIN\n" +
				"BEGIN { core(\"/tmp/c\"); }\n" +
				"        ^~~~~~~~~~~~~~\n"},
		{"core() path not a literal", []string{"--unsafe", "-e", `interval:s:1 { core(comm); }`}, false,
			"-e:1:21: core() takes the core file's path as a string literal\n" +
				"interval:s:1 { core(comm); }\n" +
				"                    ^~~~\n"},
		{"iter with -p", []string{"-p", self, "-e", "iter:task { }"}, false,
			"-e:1:1: iter probes take no -p: they walk every object; test the process in a predicate instead, as /ctx.task.tgid == " + self + "/ in a task iterator\n" +
				"iter:task { }\n" +
				"^~~~~~~~~\n"},
		{"uprobe on a missing binary", []string{"-e", "uprobe:/nonexistent/bin:f { }"}, true,
			"-e:1:1: resolve /nonexistent/bin: no such binary or library: stat /nonexistent/bin: no such file or directory\n" +
				"uprobe:/nonexistent/bin:f { }\n" +
				"^~~~~~~~~~~~~~~~~~~~~~~~~\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.root {
				testenv.Require(t, testenv.Tracepoint)
			}
			kinst(t, tt.args...).want(t, 1, "", tt.stderr)
		})
	}
}

// A program read from standard input is named "stdin" in errors.
func TestCompileErrorFromStdin(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testenv.Kinst(t), "-")
	cmd.Stdin = strings.NewReader("BEGIN {\n  @x = 1 + ;\n}\n")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || len(out) != 0 {
		t.Fatalf("kinst - = %v, stdout %q; want exit status 1 and no output", err, out)
	}
	want := "stdin:2:12: expected expression, found ';'\n" +
		"  @x = 1 + ;\n" +
		"           ^\n"
	if got := string(ee.Stderr); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}

// A probe type the kernel forbids is refused at compile time with one
// sentence saying why, before anything is loaded or attached. Each case
// runs only where independent evidence says the kernel forbids it: its
// configuration for kprobes, a refused load for fentry.
func TestForbiddenProbeTypes(t *testing.T) {
	t.Parallel()
	testenv.Root(t)
	t.Run("kprobe", func(t *testing.T) {
		t.Parallel()
		cfg, err := kernel.LoadConfig()
		if err != nil {
			t.Skipf("no kernel configuration to say whether kprobes exist: %v", err)
		}
		if !cfg.Disabled("CONFIG_KPROBES") {
			t.Skipf("%s enables CONFIG_KPROBES", cfg.Source)
		}
		const why = "kprobes are not available: this kernel was built without CONFIG_KPROBES"
		kinst(t, "-e", "kprobe:do_nanosleep { @ = count(); }").want(t, 1, "",
			"-e:1:1: "+why+"; the tracepoint tracepoint:syscalls:sys_enter_nanosleep covers the same event\n"+
				"kprobe:do_nanosleep { @ = count(); }\n"+
				"^~~~~~~~~~~~~~~~~~~\n")
		kinst(t, "-e", "kretprobe:vfs_* { @ = count(); }").want(t, 1, "",
			"-e:1:1: kretprobes are not available: this kernel was built without CONFIG_KPROBES\n"+
				"kretprobe:vfs_* { @ = count(); }\n"+
				"^~~~~~~~~~~~~~~\n")
	})
	t.Run("hardware", func(t *testing.T) {
		t.Parallel()
		st := kernel.Probe(kernel.FeatPerfHardware)
		if st.Available {
			t.Skip("this machine counts hardware events")
		}
		kinst(t, "-e", "hardware:cycles:1000 { }").want(t, 1, "",
			"-e:1:1: "+st.Reason+"\n"+
				"hardware:cycles:1000 { }\n"+
				"^~~~~~~~~~~~~~~~~~~~\n")
	})
	t.Run("fentry", func(t *testing.T) {
		t.Parallel()
		if err := loadFentry(); !errors.Is(err, unix.EPERM) {
			t.Skipf("this kernel does not refuse fentry programs with EPERM (loading one: %v)", err)
		}
		const why = "fentry programs are refused by this kernel's policy (EPERM)"
		for _, prog := range []string{"fentry:do_nanosleep { @ = count(); }", "kfunc:do_nanosleep { @ = count(); }"} {
			kinst(t, "-e", prog).want(t, 1, "",
				"-e:1:1: "+why+"; the tracepoint tracepoint:syscalls:sys_enter_nanosleep covers the same event\n"+
					prog+"\n"+
					"^"+strings.Repeat("~", strings.Index(prog, " ")-1)+"\n")
		}
	})
}

// loadFentry loads the smallest fentry program, as evidence of whether
// the kernel allows them.
func loadFentry() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceFEntry,
		AttachTo:     "do_nanosleep",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err == nil {
		prog.Close()
	}
	return err
}

// Bad flags and settings are usage errors: exit status 2, one line
// saying what is wrong (and the usage for flags the parser rejects).
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	usage := usageText(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(data, []byte("BEGIN {}\x00\x01\x02"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    []string
		args   []string
		stderr string
	}{
		{"unknown flag", nil, []string{"--bogus"}, "kinst: unrecognized option '--bogus'\n" + usage},
		{"unknown switch", nil, []string{"-x", "-e", "BEGIN {}"}, "kinst: invalid option -- 'x'\n" + usage},
		{"unknown switch in a group", nil, []string{"-qx", "-e", "BEGIN {}"}, "kinst: invalid option -- 'x'\n" + usage},
		{"missing flag value", nil, []string{"-e"}, "kinst: option requires an argument -- 'e'\n" + usage},
		{"missing long flag value", nil, []string{"-e", "BEGIN {}", "--attach"}, "kinst: option '--attach' requires an argument\n" + usage},
		{"bad pid", nil, []string{"-p", "a1111", "-e", "BEGIN {}"}, "kinst: pid 'a1111' is not a valid decimal number\n"},
		{"pid out of range", nil, []string{"-p", "5000000", "-e", "BEGIN {}"}, "kinst: pid '5000000' out of valid pid range [1,4194304]\n"},
		{"pid zero", nil, []string{"-p0", "-e", "BEGIN {}"}, "kinst: pid '0' out of valid pid range [1,4194304]\n"},
		{"buffering mode", nil, []string{"-B", "lines", "-e", "BEGIN {}"}, "kinst: -B must be either 'line', 'full', or 'none', not \"lines\"\n"},
		{"three -k", nil, []string{"-kkk", "-e", "BEGIN {}"}, "kinst: -k may be given at most twice: -k checks helpers other than reads, -kk all of them\n"},
		{"cat bytes", []string{"BPFTRACE_CAT_BYTES_MAX=10k"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_CAT_BYTES_MAX=\"10k\" is not a number of bytes\n"},
		{"perf pages", []string{"BPFTRACE_PERF_RB_PAGES=3"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_PERF_RB_PAGES=\"3\" is not a power of two\n"},
		{"stack mode", []string{"BPFTRACE_STACK_MODE=hex"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_STACK_MODE=\"hex\": want bpftrace, raw, perf or build_id\n"},
		{"symbol cache", []string{"BPFTRACE_CACHE_USER_SYMBOLS=x"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_CACHE_USER_SYMBOLS=\"x\": want PER_PID, PER_PROGRAM, NONE, 1 or 0\n"},
		{"log size", []string{"BPFTRACE_LOG_SIZE=0"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_LOG_SIZE=\"0\" is not a positive number of bytes\n"},
		{"max probes", []string{"BPFTRACE_MAX_PROBES=-1"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_MAX_PROBES=\"-1\" is not a positive integer\n"},
		{"user symbols", []string{"BPFTRACE_NO_USER_SYMBOLS=yes"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_NO_USER_SYMBOLS=\"yes\": want 0 or 1\n"},
		{"no program", nil, nil, "kinst: no program: give -e PROGRAM or a file (kinst -h for help)\n"},
		{"missing file", nil, []string{"testdata/nonexistent.bt"}, "kinst: failed to open file 'testdata/nonexistent.bt': no such file or directory\n"},
		{"misspelt instrument", nil, []string{"latncy", "syscall:read"}, "kinst: no instrument or file latncy (did you mean latency?)\n"},
		{"unknown word", nil, []string{"frobnicate"}, "kinst: no instrument or file frobnicate: kinst -h lists the instruments\n"},
		{"help misspelt", nil, []string{"help", "cuont"}, "kinst help: no instrument cuont (did you mean count?)\n"},
		{"help two", nil, []string{"help", "count", "trace"}, "kinst help: name one instrument\n"},
		{"program file", nil, []string{testenv.Kinst(t)}, "kinst: " + testenv.Kinst(t) + " is an ELF executable, not a bpftrace program: to trace it, run it with -c or name it in a uprobe\n"},
		{"binary file", nil, []string{data}, "kinst: " + data + " is a binary file, not a bpftrace program\n"},
		{"output format", nil, []string{"-f", "xml", "-e", "BEGIN {}"}, "kinst: invalid output format \"xml\": use text, json or pprof\n"},
		{"dump stage", nil, []string{"--dump", "ast,nope", "-e", "BEGIN {}"}, "kinst: unknown stage in --dump \"ast,nope\": use ast, types, bpf, maps or all, or several separated by commas\n"},
		{"-d with a stage", nil, []string{"-d", "bpf", "prog.bt"}, "kinst: -d takes no stage, as in bpftrace: print stage bpf with --dump bpf\n"},
		{"three -d", nil, []string{"-ddd", "-e", "BEGIN {}"}, "kinst: -d may be given at most twice: -d prints the compiled program, -dd its maps and records too\n"},
		{"command quote", nil, []string{"-c", `"x`, "-e", "BEGIN {}"}, "kinst: -c: unterminated quote in command\n"},
		{"string length", []string{"KINST_STRLEN=abc"}, []string{"-e", "BEGIN {}"}, "kinst: KINST_STRLEN=\"abc\" is not a positive integer\n"},
		{"map size", []string{"BPFTRACE_MAP_KEYS_MAX=0"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_MAP_KEYS_MAX=\"0\" is not a positive integer\n"},
		{"string length too large", []string{"BPFTRACE_STRLEN=100000"}, []string{"-e", "BEGIN {}"}, "kinst: BPFTRACE_STRLEN=\"100000\" is more than 65536\n"},
		{"llvm", nil, []string{"--emit-llvm", "out", "-e", "BEGIN {}"}, "kinst: --emit-llvm: kinst compiles to BPF without LLVM, so there is no LLVM IR to write; --emit-elf FILE writes the compiled programs\n"},
		{"features format", nil, []string{"features", "-f", "xml"}, "kinst: invalid output format \"xml\": use text or json\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kinstEnv(t, tt.env, tt.args...).want(t, 2, "", tt.stderr)
		})
	}
}

// usageText is the usage kinst prints for -h and --help, to standard
// output with exit status 0, headed "USAGE:" as bpftrace's.
func usageText(t *testing.T) string {
	t.Helper()
	r := kinst(t, "-h")
	if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "USAGE:\n    kinst [options] filename [ARGS...]\n") {
		t.Fatalf("kinst -h: exit status %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	if long := kinst(t, "--help"); long.code != 0 || long.stdout != r.stdout {
		t.Fatalf("kinst --help: exit status %d, stdout:\n%s\nwant what -h prints", long.code, long.stdout)
	}
	return r.stdout
}

// "kinst help" prints the usage as -h does, and "kinst help NAME" what
// "kinst NAME -h" prints, both on standard output.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	kinst(t, "help").want(t, 0, usageText(t), "")
	own := kinst(t, "count", "-h")
	if own.code != 0 || !strings.HasPrefix(own.stderr, "usage: kinst count ") {
		t.Fatalf("kinst count -h: exit status %d, stderr:\n%s", own.code, own.stderr)
	}
	kinst(t, "help", "count").want(t, 0, own.stderr, "")
}

// A -c command that cannot start is an error before anything attaches.
func TestCommandNotFound(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint)
	missing := "/nonexistent/command"
	if _, err := os.Stat(missing); err == nil {
		t.Skipf("%s exists", missing)
	}
	kinst(t, "-e", "tracepoint:syscalls:sys_enter_getppid { @ = count(); }", "-c", missing+" arg").want(t, 1, "",
		"kinst: command "+missing+": exec: \""+missing+"\": stat "+missing+": no such file or directory\n")
}

// kaddr() of a kernel variable reads kallsyms: where the kernel lists
// variables there (the guests), the address is found; where it lists
// code only (this host), the error says so rather than that the
// variable does not exist.
func TestKaddrVariable(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf)
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		t.Skip(err)
	}
	prog := `BEGIN { printf("%d\n", kaddr("avenrun") != 0); exit(); }`
	r := kinst(t, "-q", "-e", prog)
	if _, ok := ks.Address("init_task"); ok {
		r.want(t, 0, "1\n\n\n", "")
		return
	}
	col := strings.Index(prog, `"avenrun"`) + 1
	want := fmt.Sprintf("-e:1:%d: kaddr(): failed to resolve kernel symbol: avenrun (no kernel symbol of that name: this kernel's kallsyms lists no variables, it was built without CONFIG_KALLSYMS_ALL)\n%s\n%s^%s\n",
		col, prog, strings.Repeat(" ", col-1), strings.Repeat("~", len(`"avenrun"`)-1))
	r.want(t, 1, "", want)
}

// A 65th program on one tracepoint meets the kernel's limit, which the
// error names rather than giving E2BIG's "argument list too long". The
// tracepoint is one nothing else traces.
func TestTracepointProgramLimit(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.PerfEvent)
	const probe = "tracepoint:syscalls:sys_enter_sethostname { @a = count(); }"
	prog := strings.Repeat(probe+"\n", 70) + "interval:ms:100 { exit(); }\n"
	file := filepath.Join(t.TempDir(), "many.bt")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	kinst(t, file).want(t, 1, "Attaching 71 probes...\n",
		file+":65:1: attach tracepoint:syscalls:sys_enter_sethostname: the kernel allows at most 64 BPF programs per tracepoint, this program's and other tools' together (E2BIG)\n"+
			probe+"\n^"+strings.Repeat("~", len("tracepoint:syscalls:sys_enter_sethostname")-1)+"\n")
}
