package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"kinst.dev/kinst/internal/testenv"
)

// parseArgs reads command lines as getopt_long reads bpftrace's.
func TestParseArgs(t *testing.T) {
	tests := []struct {
		args []string
		want string // the flags set, then "|" and the positional arguments
	}{
		{[]string{"-lv"}, "l=true v=true |"},
		{[]string{"-ve", "BEGIN {}"}, "e=BEGIN {} v=true |"},
		{[]string{"-qvf", "json", "prog.bt", "1"}, "f=json q=true v=true | prog.bt 1"},
		{[]string{"-fjson", "-p123"}, "f=json p=123 |"},
		{[]string{"prog.bt", "-q", "x"}, "q=true | prog.bt x"},
		{[]string{"-q", "--", "prog.bt", "-v"}, "q=true | prog.bt -v"},
		{[]string{"--attach=kprobe", "--unsafe", "-", "a"}, "attach=kprobe unsafe=true | - a"},
		{[]string{"--attach", "fentry", "-unsafe"}, "attach=fentry unsafe=true |"},
		{[]string{"-kk", "-e", "x"}, "e=x k=2 |"},
		{[]string{"-k", "-k"}, "k=2 |"},
		{[]string{"-I/usr/include", "--include", "linux/fs.h", "x.bt"}, "I=/usr/include include=linux/fs.h | x.bt"},
		{[]string{"-qI", "inc", "--include=a.h"}, "I=inc include=a.h q=true |"},
		{[]string{"--usdt-file-activation", "x.bt"}, "usdt-file-activation=true | x.bt"},
		{[]string{"-de", "BEGIN {}", "-d"}, "d=2 e=BEGIN {} |"},
		{[]string{"-d", "-kq", "x.bt", "ast"}, "d=1 k=1 q=true | x.bt ast"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		for _, b := range []string{"l", "v", "q", "unsafe", "usdt-file-activation"} {
			fs.Bool(b, false, "")
		}
		for _, s := range []string{"e", "f", "p", "attach", "I", "include"} {
			fs.String(s, "", "")
		}
		k, d := countFlag{tooMany: "three"}, countFlag{tooMany: "three"}
		fs.Var(&k, "k", "")
		fs.Var(&d, "d", "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		var set []string
		fs.Visit(func(f *flag.Flag) { set = append(set, f.Name+"="+f.Value.String()) })
		slices.Sort(set)
		got := strings.Join(set, " ") + " |"
		if len(pos) > 0 {
			got += " " + strings.Join(pos, " ")
		}
		if got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.args, got, tt.want)
		}
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.Bool("q", false, "")
	_, err := parseArgs(fs, []string{"-q", "--q"})
	if u := (*usageError)(nil); !errors.As(err, &u) || u.Error() != "unrecognized option '--q'" {
		t.Errorf("--q: got %v, want the usage error \"unrecognized option '--q'\": one-letter options take one dash", err)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-V", "--version"} {
		kinst(t, arg).want(t, 0, "kinst v"+version+"\n", "")
	}
}

// --info prints the system, the build and the kernel features that
// "kinst features" lists.
func TestInfo(t *testing.T) {
	t.Parallel()
	r := kinst(t, "--info")
	feats := kinst(t, "features")
	if r.code != 0 || feats.code != 0 {
		t.Fatalf("kinst --info: exit status %d, kinst features: %d\n%s%s", r.code, feats.code, r.stderr, feats.stderr)
	}
	head, table, ok := strings.Cut(r.stdout, "\nKernel features\n")
	if !ok || table != feats.stdout {
		t.Errorf("kinst --info does not end with \"Kernel features\" and the features table:\n%s", r.stdout)
	}
	for _, want := range []string{"System\n  OS: Linux ", "\n  Arch: ", "\nBuild\n  version: v" + version + "\n  Go: go"} {
		if !strings.Contains(head, want) {
			t.Errorf("kinst --info lacks %q:\n%s", want, head)
		}
	}
}

// -p of a process that has ended is refused before anything compiles,
// and so is the instruments' --pid.
func TestPidNoSuchProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", pid, "-e", "BEGIN {}"}, "kinst: pid " + pid + ": no such process\n"},
		{[]string{"count", "--pid", pid, "syscall:getppid"}, "kinst count: pid " + pid + ": no such process\n"},
		{[]string{"profile", "--pid", pid}, "kinst profile: pid " + pid + ": no such process\n"},
		{[]string{"latency", "--pid", pid, "syscall:read"}, "kinst latency: pid " + pid + ": no such process\n"},
		{[]string{"trace", "--pid", pid, "syscall:read"}, "kinst trace: pid " + pid + ": no such process\n"},
		{[]string{"break", "--pid", pid, "--core", "c", "--unsafe"}, "kinst break: pid " + pid + ": no such process\n"},
	} {
		kinst(t, tc.args...).want(t, 2, "", tc.want)
	}
}

// The run under -p ends when its process exits, END running and the
// maps printing as at any end, as in bpftrace.
func TestPidExitEndsRun(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	proc := exec.Command("sleep", "20000")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	cmd := exec.Command(testenv.Kinst(t), "-p", strconv.Itoa(proc.Process.Pid), "-e", `BEGIN { @a = 1; } interval:s:100 { @b = count(); } END { @c = 2; }`)
	cmd.Env = append(os.Environ(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED=1")
	var stdout, stderr testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done, waitErr := background(t, cmd)
	for deadline := time.Now().Add(runTimeout); !strings.Contains(stderr.String(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("kinst did not attach within %v\nstderr:\n%s", runTimeout, stderr.String())
		}
	}
	proc.Process.Kill()
	proc.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("kinst -p still runs 10 s after its process exited\nstdout:\n%s", stdout.String())
	}
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, *waitErr)}
	res.want(t, 0, "Attaching 3 probes...\n\n\n@a: 1\n@b: 0\n@c: 2\n", "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n")
}

// Every -B mode prints the same output; only when it is written differs.
func TestBufferingModes(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf)
	prog := `BEGIN { printf("a\n"); printf("b\n"); @x = 1; exit(); }`
	for _, mode := range []string{"line", "full", "none"} {
		kinst(t, "-B", mode, "-e", prog).want(t, 0, "Attaching 1 probe...\na\nb\n\n\n@x: 1\n", "")
	}
	kinst(t, "-qB", "full", "-e", prog).want(t, 0, "a\nb\n\n\n@x: 1\n", "")
}

// BPFTRACE_NO_USER_SYMBOLS=1 prints user addresses in hex: the target
// is static and not position independent, so kinst_greet runs at the
// address its symbol gives. The target lingers so that, without the
// setting, its symbols can be read while it is alive.
func TestNoUserSymbols(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	sym := targetSymbol(t, "kinst_greet")
	prog := "uprobe:" + bin + `:kinst_greet { printf("%s\n", usym(reg("ip"))); }`
	kinstEnv(t, []string{"BPFTRACE_NO_USER_SYMBOLS=1"}, "-q", "-e", prog, "-c", bin+" linger 300 a").
		want(t, 0, "0x"+strconv.FormatUint(sym.Addr, 16)+"\n\n\n", "")
	for _, env := range []string{"BPFTRACE_NO_USER_SYMBOLS=0", "BPFTRACE_CACHE_USER_SYMBOLS=0"} {
		kinstEnv(t, []string{env}, "-q", "-e", prog, "-c", bin+" linger 300 a").
			want(t, 0, "kinst_greet\n\n\n", "")
	}
}

// BPFTRACE_MAX_PROBES bounds the probes a program attaches to, BEGIN
// included, as bpftrace counts them; nothing attaches past it.
func TestMaxProbes(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	prog := "tracepoint:syscalls:sys_enter_getpid, tracepoint:syscalls:sys_enter_getppid { } BEGIN { exit(); }"
	kinstEnv(t, []string{"BPFTRACE_MAX_PROBES=2"}, "-e", prog).want(t, 1, "",
		"kinst: too many probes: can't attach to 3 probes because it exceeds the current limit of 2 probes; "+
			"raise it with BPFTRACE_MAX_PROBES, but carefully: very many probes can slow the system down\n")
	kinstEnv(t, []string{"BPFTRACE_MAX_PROBES=3"}, "-e", prog).want(t, 0, "Attaching 3 probes...\n\n\n", "")
}

// -k reports failing map updates and deletions where they are written,
// -kk failing reads of memory too; without them, or with --no-warnings,
// nothing is reported. --no-warnings silences compile warnings too.
func TestHelperChecks(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf)
	maps := `BEGIN { @a[1] = 1; @a[2] = 2; delete(@a[5]); exit(); }`
	env := []string{"BPFTRACE_MAP_KEYS_MAX=1"}
	// 0.17 locates the update at its '='.
	mapWarnings := "-e:1:26: WARNING: Failed to map_update_elem: Argument list too long (-7)\n" + maps + "\n" + strings.Repeat(" ", 25) + "^\n" +
		"-e:1:31: WARNING: Failed to map_delete_elem: No such file or directory (-2)\n" + maps + "\n" + strings.Repeat(" ", 30) + "^\n"
	// The count of updates a full map dropped comes at exit in any case.
	full := "kinst: warning: map @a was full: 1 update dropped; it holds at most 1 (set KINST_MAP_KEYS_MAX for more)\n"
	kinstEnv(t, env, "-q", "-e", maps).want(t, 0, "\n\n@a[1]: 1\n", full)
	kinstEnv(t, env, "-q", "-k", "-e", maps).want(t, 0, "\n\n@a[1]: 1\n", mapWarnings+full)
	kinstEnv(t, env, "-qkk", "-e", maps).want(t, 0, "\n\n@a[1]: 1\n", mapWarnings+full)
	kinstEnv(t, env, "-qk", "--no-warnings", "-e", maps).want(t, 0, "\n\n@a[1]: 1\n", "")
	kinst(t, "-q", "--no-warnings", "-e", "#warning careful\nBEGIN { exit(); }").want(t, 0, "\n\n", "")
	kinst(t, "-q", "-e", "#warning careful\nBEGIN { exit(); }").want(t, 0, "\n\n", "kinst: warning: -e:1:2: #warning careful\n")

	reads := `BEGIN { $x = *(uint64 *)0; printf("[%s]\n", str(0)); exit(); }`
	kinst(t, "-q", "-k", "-e", reads).want(t, 0, "[]\n\n\n", "")
	kinst(t, "-q", "-kk", "-e", reads).want(t, 0, "[]\n\n\n",
		"-e:1:14: WARNING: Failed to probe_read: Bad address (-14)\n"+reads+"\n"+strings.Repeat(" ", 13)+"^\n"+
			"-e:1:45: WARNING: Failed to probe_read_str: Bad address (-14)\n"+reads+"\n"+strings.Repeat(" ", 44)+"^\n")
}

// uaddr() gives the address of a variable in the probe's binary, typed
// by its size, as bpftrace 0.17 does: int64 * for kinst_watched (8
// bytes) and for buf (64 KiB, no integer size); reading through it
// reads the variable.
func TestUaddr(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT {
			addr[s.Name] = s.Value
		}
	}
	prog := "uprobe:" + bin + `:kinst_add { printf("%x %x %d %d\n", uaddr("kinst_watched"), uaddr("buf"), sizeof(*uaddr("buf")), *uaddr("kinst_watched")); }`
	kinst(t, "-q", "-e", prog, "-c", bin+" add 1").want(t, 0,
		strconv.FormatUint(addr["kinst_watched"], 16)+" "+strconv.FormatUint(addr["buf"], 16)+" 8 0\n\n\n", "")
}

// With -p, a uprobe's path is the traced process's: a process in another
// mount namespace, here one with a tmpfs over an empty directory of the
// host, is probed through /proc/PID/root, and the probe is named so, as
// bpftrace names it.
func TestUprobeInProcessMountNamespace(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	testenv.Kinst(t) // built before the target's clock starts
	dir := t.TempDir()
	inner := dir + "/kinst-target"
	pid := strconv.Itoa(inMountNamespace(t, inner,
		"mount -t tmpfs none "+dir+" && cp "+bin+" "+inner+" && exec "+inner+" later 5000 hello"))
	if _, err := os.Stat(inner); err == nil {
		t.Fatalf("%s is visible outside the namespace", inner)
	}
	prog := "uprobe:" + inner + `:kinst_greet { printf("%s %s\n", probe, str(arg0)); exit(); }`
	kinst(t, "-p", pid, "-e", prog).want(t, 0,
		"Attaching 1 probe...\nuprobe:/proc/"+pid+"/root"+inner+":kinst_greet hello\n\n\n", "")
}

// path() reads a struct path with bpf_d_path, which the kernel allows in
// fentry programs of security_file_open; the host of the tests forbids
// fentry, so this runs in the guests.
func TestPathBuiltin(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Fentry, testenv.Ringbuf)
	file, err := filepath.Abs("testdata/syntax.bt")
	if err != nil {
		t.Fatal(err)
	}
	prog := `fentry:security_file_open /pid == cpid/ { $p = path(args->file->f_path); if ($p == "` + file + `") { @opens = count(); } }`
	kinst(t, "-q", "-e", prog, "-c", workload(t)+" openat 3 "+file).want(t, 0, "\n\n@opens: 3\n", "")
}

// BPFTRACE_BTF replaces the kernel's types: with a file that describes
// only an int, curtask is a plain integer and has no fields.
func TestBTFFile(t *testing.T) {
	t.Parallel()
	b, err := btf.NewBuilder([]btf.Type{&btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tiny.btf")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `BEGIN { printf("%d\n", curtask->pid); exit(); }`
	kinstEnv(t, []string{"BPFTRACE_BTF=" + file}, "--dry-run", "-e", prog).want(t, 1, "",
		"-e:1:24: uint64 has no fields: it is not a struct, a pointer to one or a tuple\n"+prog+"\n"+strings.Repeat(" ", 23)+"^~~~~~~~~~~~\n")
	kinstEnv(t, []string{"BPFTRACE_BTF=" + file + ".missing"}, "-e", prog).want(t, 2, "",
		"kinst: BPFTRACE_BTF: load BTF from "+file+".missing: open "+file+".missing: no such file or directory\n")
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		kinstEnv(t, []string{"BPFTRACE_BTF=/sys/kernel/btf/vmlinux"}, "--dry-run", "-e", prog).want(t, 0, "", "")
	}
}

// strcontains() loops over the haystack, so long haystacks load with short
// needles; with longer ones it runs through bpf_loop. (Without bpf_loop
// it says the search is past what the verifier accepts: codegen's
// TestSearchLoop.)
func TestStrcontainsSizes(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Loop)
	env := []string{"BPFTRACE_STRLEN=1024"}
	short := `tracepoint:syscalls:sys_enter_openat { if (strcontains(str(args->filename), "abc")) { @ = count(); } }`
	kinstEnv(t, env, "--dry-run", "-e", short).want(t, 0, "", "")
	long := `tracepoint:syscalls:sys_enter_openat { if (strcontains(str(args->filename), "/usr/lib/")) { @ = count(); } }`
	kinstEnv(t, env, "--dry-run", "-e", long).want(t, 0, "", "")
}

// Probes that need more descriptors than the open-file limit allows say
// so, with both numbers, whether loading (one program per probe) or
// attaching (one link per target of a wildcard) runs out first, rather
// than as a verifier refusal without a reason.
func TestOpenFileLimit(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.PerfEvent)
	var many strings.Builder
	for range 200 {
		many.WriteString("tracepoint:syscalls:sys_enter_getppid { @a = count(); }\n")
	}
	const limit = 150
	// A probe of its own for each of 120 syscalls tracepoints: 120
	// programs load within the limit, and their perf events exhaust it.
	// (One probe naming them all would attach as one raw_syscalls
	// program.)
	names, err := filepath.Glob(filepath.Join(tracefs(t), "events/syscalls/sys_enter_*"))
	if err != nil || len(names) < 120 {
		t.Fatalf("syscalls tracepoints: %d, %v", len(names), err)
	}
	var each strings.Builder
	for _, n := range names[:120] {
		fmt.Fprintf(&each, "tracepoint:syscalls:%s { @[probe] = count(); }\n", filepath.Base(n))
	}
	for _, tc := range []struct {
		name, prog string
		probes     int // 0: as many as the "Attaching" line says
	}{
		{"load", many.String(), 201},
		{"attach", each.String(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := tc.prog + "interval:ms:100 { exit(); }\n"
			cmd := exec.Command("sh", "-c", `ulimit -n `+strconv.Itoa(limit)+` && exec "$0" -e "$1"`, testenv.Kinst(t), prog)
			out, err := cmd.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1\nstdout:\n%s", err, out)
			}
			probes := tc.probes
			if probes == 0 {
				if _, err := fmt.Sscanf(string(out), "Attaching %d probes...\n", &probes); err != nil || 2*probes <= limit {
					t.Fatalf("stdout %q: want more than %d probes attaching", out, limit/2)
				}
			}
			want := fmt.Sprintf("kinst: %d probes exceed the open-file limit of %d (each takes a file descriptor or more): raise it with ulimit -n, or trace fewer\n", probes, limit)
			if got := string(ee.Stderr); got != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
