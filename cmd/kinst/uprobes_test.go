package main

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/testenv"
)

// Uprobe blocks of one body share one uprobe.multi link, and each still
// counts exactly the calls of its own function: probe and func name the
// function that fired.
func TestMergedUprobeBlocks(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.UprobeMulti, testenv.Ringbuf)
	bin := target(t)
	prog := strings.NewReplacer("BIN", bin).Replace(`
uprobe:BIN:kinst_add { @[probe] = count(); @f[func] = count(); @all = count(); }
uprobe:BIN:kinst_greet { @[probe] = count(); @f[func] = count(); @all = count(); }
uretprobe:BIN:kinst_greet { @r = count(); }`)
	r := kinst(t, "-v", "-e", prog, "-c", "sh -c '"+bin+" add 1000 && "+bin+" greet a b'")
	want := "Attaching 3 probes...\n\n\n" +
		"@[uprobe:BIN:kinst_greet]: 2\n" +
		"@[uprobe:BIN:kinst_add]: 1000\n" +
		"@all: 1002\n" +
		"@f[kinst_greet]: 2\n" +
		"@f[kinst_add]: 1000\n" +
		"@r: 2\n"
	if want = strings.ReplaceAll(want, "BIN", bin); r.code != 0 || r.stdout != want {
		t.Errorf("exit status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	for _, line := range []string{
		"kinst: uprobe:" + bin + ":kinst_add (2 targets): uprobe.multi: one uprobe.multi link attaches all 2 functions\n",
		"kinst: detached 2 links in ",
	} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
		}
	}
}

// Updates a full map refuses are counted per map, exactly, and reported
// at exit: 20 calls with distinct arguments meet maps of 8 elements,
// where a map of 4 keys never fills and an existing key still updates.
func TestFullMapsReported(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := strings.NewReplacer("BIN", bin).Replace(`
uprobe:BIN:kinst_add { @c[arg0] = count(); @s[arg0] = arg0 * 10; @x = count(); @keep[arg0 % 4] = count(); }
uprobe:BIN:kinst_add /arg0 > 18/ { @s[1] = 0; @h[arg0] = hist(arg0); }`)
	var want strings.Builder
	want.WriteString("Attaching 2 probes...\n\n\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&want, "@c[%d]: 1\n", i)
	}
	want.WriteString("@h[19]: \n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
		"@h[20]: \n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n")
	for i := range 4 {
		fmt.Fprintf(&want, "@keep[%d]: 5\n", i)
	}
	want.WriteString("@s[1]: 0\n")
	for i := 2; i <= 8; i++ {
		fmt.Fprintf(&want, "@s[%d]: %d\n", i, i*10)
	}
	want.WriteString("@x: 20\n")
	kinstEnv(t, []string{"KINST_MAP_KEYS_MAX=8"}, "-e", prog, "-c", bin+" add 20").want(t, 0, want.String(),
		"kinst: warning: map @c was full: 12 updates dropped; it holds at most 8 (set KINST_MAP_KEYS_MAX for more)\n"+
			"kinst: warning: map @s was full: 12 updates dropped; it holds at most 8 (set KINST_MAP_KEYS_MAX for more)\n")
}

// An attach point that names nothing on this system is left out of a
// probe whose other attach points exist, with one warning at it, as
// bpftrace's tools expect of a function renamed between releases; a
// probe none of whose attach points exist is an error at each.
func TestAbsentAttachPointLeftOut(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	// A copy of its own: its calls must not reach the other tests'
	// probes on the shared target, which count every call.
	bin := targetCopy(t)
	prog := strings.ReplaceAll("uprobe:BIN:kinst_add,\n  uprobe:BIN:kinst_nothing /pid == cpid/ { @ = count() }", "BIN", bin)
	kinst(t, "-e", prog, "-c", bin+" add 7").want(t, 0, "Attaching 1 probe...\n\n\n@: 7\n",
		"-e:2:3: warning: no matches for uprobe "+bin+":kinst_nothing: no such function; left out of the probe\n"+
			"  uprobe:"+bin+":kinst_nothing /pid == cpid/ { @ = count() }\n"+
			"  ^"+strings.Repeat("~", len("uprobe::kinst_nothing")+len(bin)-1)+"\n")
	kinst(t, "--no-warnings", "-e", prog, "-c", bin+" add 7").want(t, 0, "Attaching 1 probe...\n\n\n@: 7\n", "")

	prog = strings.ReplaceAll("uprobe:BIN:kinst_nothing, uprobe:BIN:kinst_nada { @ = count() }", "BIN", bin)
	r := kinst(t, "-e", prog, "-c", bin+" add 7")
	first := "-e:1:1: no matches for uprobe " + bin + ":kinst_nothing: no such function\n"
	second := "-e:1:" + fmt.Sprint(len("uprobe::kinst_nothing, ")+len(bin)+1) + ": no matches for uprobe " + bin + ":kinst_nada: no such function (did you mean kinst_add?)\n"
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, first) || !strings.Contains(r.stderr, second) {
		t.Errorf("exit status %d, stdout %q, stderr:\n%s\nwant status 1 and an error at each attach point", r.code, r.stdout, r.stderr)
	}
}

// glibc 2.34 moved pthread_create out of libpthread.so.0, which only
// loads libc.so.6 now; threadsnoop.bt still probes libpthread. kinst
// probes the function where the dynamic linker finds it for the
// library, and says so.
func TestUprobeInLoadedLibrary(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := gccBuild(t, "testdata/threads.c", "-O1")
	pthread, err := elfsym.Resolve("libpthread", 0)
	if err != nil {
		t.Skip(err)
	}
	f, err := elfsym.Open(pthread)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup("pthread_create"); err == nil {
		t.Skipf("%s defines pthread_create itself (glibc before 2.34)", pthread)
	}
	libc, err := elfsym.Resolve("libc.so.6", 0)
	if err != nil {
		t.Fatal(err)
	}
	prog := "uprobe:libpthread:pthread_create /pid == cpid/ { @ = count() }"
	kinst(t, "-e", prog, "-c", bin+" 5").want(t, 0, "Attaching 1 probe...\n\n\n@: 5\n",
		"-e:1:1: warning: "+pthread+" has no function pthread_create; probing the one in "+libc+", a library it loads\n"+
			prog+"\n^"+strings.Repeat("~", len("uprobe:libpthread:pthread_create")-1)+"\n")
	// Named under both libraries, as a portable script would, the
	// function still fires once a call.
	prog = "uprobe:libpthread:pthread_create,\n uprobe:libc:pthread_create /pid == cpid/ { @ = count() }"
	r := kinst(t, "-e", prog, "-c", bin+" 5")
	if want := "-e:2:2: warning: uprobe:libc:pthread_create names nothing the probe's earlier attach points do not; probed once\n"; r.code != 0 || r.stdout != "Attaching 1 probe...\n\n\n@: 5\n" || !strings.Contains(r.stderr, want) {
		t.Errorf("exit status %d, stdout:\n%s\nstderr:\n%s\nwant @: 5 and the warning %q", r.code, r.stdout, r.stderr, want)
	}
	// A program's libraries are not searched: its uprobe would fire in
	// every process.
	r = kinst(t, "-e", "uprobe:"+bin+":pthread_create { }")
	if want := "-e:1:1: no matches for uprobe " + bin + ":pthread_create: no such function\n"; r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("exit status %d, stderr:\n%s\nwant status 1 and\n%s", r.code, r.stderr, want)
	}
}

// A uprobe on a file that is not ELF says so, where debug/elf gives
// the bytes it found in place of the magic number.
func TestUprobeNotELF(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	text := filepath.Join(t.TempDir(), "header.h")
	if err := os.WriteFile(text, []byte("#define N 1\n"+strings.Repeat("/* a header, not a program */\n", 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"uprobe:" + text + ":main { }", "uretprobe:" + text + ":main { }"} {
		caret := "^" + strings.Repeat("~", strings.Index(prog, " {")-1)
		kinst(t, "-e", prog).want(t, 1, "", fmt.Sprintf("-e:1:1: %s is not an ELF file\n%s\n%s\n", text, prog, caret))
	}
}

// A uprobe's address, in hexadecimal or decimal as bpftrace takes it,
// must fall in a function unless --unsafe: the ELF header, at the start
// of the first loadable segment, is in none.
func TestUprobeAddressOutsideFunctions(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := targetCopy(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			header = p.Vaddr
			break
		}
	}
	for _, spec := range []string{strconv.FormatUint(header, 10), fmt.Sprintf("%#x", header)} {
		prog := "uprobe:" + bin + ":" + spec + " { }"
		kinst(t, "-e", prog).want(t, 1, "", fmt.Sprintf("-e:1:1: could not resolve address: %s:%#x (no function holds it; --unsafe probes it all the same)\n%s\n^%s\n",
			bin, header, prog, strings.Repeat("~", len(prog)-len(" { }")-1)))
	}
}

// A function of size 0 gives no bounds to check the probe against: it
// is refused unless --unsafe, as bpftrace 0.26.1 refuses it.
func TestUprobeZeroSize(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := targetCopy(t)
	prog := "uprobe:" + bin + ":frame_dummy { exit(); }"
	kinst(t, "-e", prog).want(t, 1, "", "-e:1:1: could not determine boundary for frame_dummy (symbol has size 0): --unsafe probes it all the same, at the risk of corrupting the process\n"+
		prog+"\n^"+strings.Repeat("~", len(prog)-len(" { exit(); }")-1)+"\n")
	// The C runtime runs frame_dummy at start.
	kinst(t, "--unsafe", "-e", prog, "-c", bin+" add 1").want(t, 0, "Attaching 1 probe...\n\n\n", "")
}

// A return probe on the entry point overwrites argc, where a called
// function has its return address: wildcards leave out the functions
// that never return (the entry point, and those DWARF or the C runtime
// declare noreturn), so that trace and latency of uprobe:BIN:* leave
// the program its arguments, and an explicit uretprobe on one is
// refused. kinst_add is called only when the target sees its arguments.
func TestNoReturnGetsNoReturnProbe(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := targetCopy(t)
	run := bin + " add 3"

	r := kinst(t, "trace", "-f", "json", "-q", "-c", run, "uprobe:"+bin+":*start*", "uprobe:"+bin+":kinst_add")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct{ Event, Function string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, e.Event+" "+e.Function)
	}
	want := []string{"entry _start", "entry __libc_start_main_impl", "entry __libc_start_main", "entry __libc_start_call_main",
		"entry kinst_add", "exit kinst_add", "entry kinst_add", "exit kinst_add", "entry kinst_add", "exit kinst_add"}
	if r.code != 0 || !slices.Equal(got, want) {
		t.Errorf("trace: exit status %d, events\n%q\nwant\n%q\nstderr:\n%s", r.code, got, want, r.stderr)
	}

	r = kinst(t, "latency", "-c", run, "uprobe:"+bin+":*start*", "uprobe:"+bin+":kinst_add")
	if wall := "@wall[uprobe:" + bin + ":kinst_add]: count 3,"; r.code != 0 || !strings.Contains(r.stdout, wall) || strings.Contains(r.stdout, "start") {
		t.Errorf("latency: exit status %d, want %q and no start function in stdout:\n%s\nstderr:\n%s", r.code, wall, r.stdout, r.stderr)
	}

	prog := strings.ReplaceAll("uretprobe:BIN:*start* { @r = count() } uprobe:BIN:kinst_add { @a = count() }", "BIN", bin)
	kinst(t, "-e", prog, "-c", run).want(t, 0, "Attaching 4 probes...\n\n\n@a: 3\n@r: 0\n", "")

	prog = "uretprobe:" + bin + ":_start { }"
	kinst(t, "-e", prog).want(t, 1, "", "-e:1:1: _start in "+bin+" never returns (it is the entry point, which nothing calls): a uretprobe on it would never fire\n"+
		prog+"\n^"+strings.Repeat("~", len(prog)-5)+"\n")
}

// A function the kernel puts no uprobe on (a lock prefix) is left out of
// a wildcard with a warning naming it, and the others are probed. The
// kernel looks at the instruction once a process maps the file: one
// sleeps meanwhile.
func TestUprobeRefusedLeftOut(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := gccBuild(t, "testdata/locked.c", "-O1")
	startSleeping(t, bin)
	prog := "uprobe:" + bin + ":kinst_* { @[func] = count() }"
	kinst(t, "-e", prog, "-c", bin).want(t, 0, "Attaching 2 probes...\n\n\n@[kinst_plain]: 5\n",
		"kinst: warning: 1 of the 2 targets of uprobe:"+bin+":kinst_* could not be attached and are left out: kinst_locked; "+
			"the first: attach uprobe:"+bin+":kinst_locked: the kernel cannot put a uprobe on its instruction: operation not supported\n")
}

// TestProbeAsString: in the 0.26.1 mode probe compares as a string, and
// strcontains() and strncmp() search it, as bpftrace 0.26.1 makes it the
// name of the attach point that fired; a probe of several attach points
// tells them apart.
func TestProbeAsString(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := targetCopy(t)
	prog := "uprobe:" + bin + ":kinst_add, uprobe:" + bin + ":main { if (probe == \"uprobe:" + bin + ":kinst_add\") { @add = count(); } " +
		"if (strcontains(probe, \":main\")) { @main = count(); } if (strncmp(probe, \"uprobe:\", 7) == 0) { @all = count(); } } " +
		"uprobe:" + bin + ":main { @one = probe != \"uprobe:" + bin + ":main\"; }"
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", bin+" add 3").want(t, 0, "\n\n@add: 3\n@all: 4\n@main: 1\n@one: false\n", "")
}

// TestBigStrings: bpftrace 0.26.1 sets no bound on max_strlen; kinst
// takes strings up to 64 KiB, in scratch memory that is each CPU's slice
// of an array once a per-CPU map value (32 KiB) is too small, and names
// the probe whose values together need more.
func TestBigStrings(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	word := strings.Repeat("X", 5555)
	env := []string{"KINST_COMPAT=", "BPFTRACE_MAX_STRLEN=9999"}
	prog := "uprobe:" + bin + `:kinst_greet { @[str(arg0)] = count(); printf("%s\n", str(arg0)); print((1, (2, str(arg0)))); }`
	kinstEnv(t, env, "-q", "-e", prog, "-c", bin+" greet "+word).want(t, 0,
		word+"\n(1, (2, "+word+"))\n\n\n@["+word+"]: 1\n", "")
	// The key and the value, then the loop's pair and its print: more
	// than 32 KiB.
	prog = "uprobe:" + bin + `:kinst_greet { @m[str(arg0)] = str(arg0); for ($kv : @m) { print($kv); } }`
	kinstEnv(t, env, "-q", "-e", prog, "-c", bin+" greet "+word).want(t, 0,
		"("+word+", "+word+")\n\n\n@m["+word+"]: "+word+"\n", "")
	kinstEnv(t, []string{"KINST_COMPAT=", "BPFTRACE_MAX_STRLEN=40000"}, "-q", "-e", prog, "-c", bin+" greet "+word).want(t, 1, "",
		"-e:1:1: probe needs 160008 bytes of scratch memory; kinst allows 65536\n"+prog+"\n^"+strings.Repeat("~", len(prog)-1)+"\n")
}
