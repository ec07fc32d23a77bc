package attach_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// run runs kinst with args and returns its stdout and stderr; it fails t
// unless kinst exits with want.
func run(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(testenv.Kinst(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("kinst %q exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// target makes a file for the workload to open, so that a probe can
// tell the workload's opens from the Go runtime's own.
func target(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mechanismOf reads the mechanism -v reports for the probe named probe.
func mechanismOf(stderr, probe string) string {
	re := regexp.MustCompile(`kinst: ` + regexp.QuoteMeta(probe) + ` \(\d+ targets\): (\S+):`)
	m := re.FindAllStringSubmatch(stderr, -1)
	if m == nil {
		return ""
	}
	return m[len(m)-1][1]
}

// hasLine reports whether out has line as one of its lines.
func hasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestKprobeCounts counts the opens of a workload with a kprobe on
// do_sys_openat2 through every mechanism the kernel offers: each must
// count exactly, and the automatic choice must be the cheapest.
func TestKprobeCounts(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	path := target(t)
	const n = 300
	prog := fmt.Sprintf(`kprobe:do_sys_openat2 /pid == cpid && str(args.filename) == %q/ { @ = count(); }`, path)
	cmd := fmt.Sprintf("%s openat %d %s", testenv.Workload(t), n, path)
	auto := "kprobe"
	if kernel.Available(kernel.FeatFentry) {
		auto = "fentry"
	}
	tests := []struct {
		force string
		need  []testenv.Feature
		mech  string
	}{
		{"", nil, auto},
		{"kprobe", nil, "kprobe"},
		{"fentry", []testenv.Feature{testenv.Fentry}, "fentry"},
		{"kprobe.multi", []testenv.Feature{testenv.KprobeMulti}, "kprobe.multi"},
	}
	for _, tt := range tests {
		t.Run("attach="+tt.force, func(t *testing.T) {
			testenv.Require(t, tt.need...)
			args := []string{"-v", "-e", prog, "-c", cmd}
			if tt.force != "" {
				args = append([]string{"--attach", tt.force}, args...)
			}
			stdout, stderr := run(t, 0, args...)
			if want := fmt.Sprintf("@: %d", n); !hasLine(stdout, want) {
				t.Errorf("got\n%s\nwant the line %q", stdout, want)
			}
			if got := mechanismOf(stderr, "kprobe:do_sys_openat2"); got != tt.mech {
				t.Errorf("mechanism %q, want %q; stderr:\n%s", got, tt.mech, stderr)
			}
		})
	}
}

// TestReturnValues checks that kretprobe and fexit see the exact value
// a function returns, here ENOENT for a file that does not exist.
func TestReturnValues(t *testing.T) {
	testenv.Require(t, testenv.Kprobe, testenv.Kretprobe)
	missing := filepath.Join(t.TempDir(), "missing")
	const n = 200
	cmd := fmt.Sprintf("%s openat %d %s", testenv.Workload(t), n, missing)
	t.Run("kretprobe", func(t *testing.T) {
		// The entry marks the thread when it opens the file; the return
		// counts by value and clears the mark.
		prog := fmt.Sprintf(`kprobe:do_sys_openat2 /pid == cpid && str(args.filename) == %q/ { @open[tid] = 1; }
kretprobe:do_sys_openat2 /@open[tid] == 1/ { @ret[(int64)retval] = count(); delete(@open[tid]); }`, missing)
		stdout, _ := run(t, 0, "--attach", "kprobe", "-e", prog, "-c", cmd)
		if want := fmt.Sprintf("@ret[-2]: %d", n); !hasLine(stdout, want) {
			t.Errorf("got\n%s\nwant the line %q", stdout, want)
		}
	})
	t.Run("fexit", func(t *testing.T) {
		testenv.Require(t, testenv.Fexit)
		prog := fmt.Sprintf(`fexit:do_sys_openat2 /pid == cpid && str(args.filename) == %q/ { @ret[retval] = count(); }`, missing)
		stdout, _ := run(t, 0, "-e", prog, "-c", cmd)
		if want := fmt.Sprintf("@ret[-2]: %d", n); !hasLine(stdout, want) {
			t.Errorf("got\n%s\nwant the line %q", stdout, want)
		}
	})
}

// TestTypedArguments reads a file name through the typed arguments and
// follows struct pointers to the opened file's name.
func TestTypedArguments(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	path := target(t)
	cmd := fmt.Sprintf("%s openat 7 %s", testenv.Workload(t), path)
	prog := fmt.Sprintf(`kprobe:do_sys_openat2 /pid == cpid && str(args.filename) == %q/ { @name[str(args->filename), args.dfd] = count(); }
kprobe:vfs_open /pid == cpid && str(args.path->dentry->d_name.name) == "f"/ { @dentry[str(args.path->dentry->d_name.name)] = count(); @comm[str(((struct task_struct *)curtask)->comm)] = count(); }`, path)
	stdout, _ := run(t, 0, "-e", prog, "-c", cmd)
	for _, want := range []string{
		fmt.Sprintf("@name[%s, -100]: 7", path),
		"@dentry[f]: 7",
		"@comm[workload]: 7",
	} {
		if !hasLine(stdout, want) {
			t.Errorf("got\n%s\nwant the line %q", stdout, want)
		}
	}
}

// TestOffsetProbe probes the second instruction of a function: past the
// 5-byte call ftrace patches, itself after a 4-byte endbr64 on kernels
// built with IBT. The first offset that is an instruction boundary
// attaches; at the other the kernel refuses the probe.
func TestOffsetProbe(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	const n = 50
	cmd := fmt.Sprintf("%s getppid %d", testenv.Workload(t), n)
	for _, off := range []int{5, 9} {
		probe := fmt.Sprintf("kprobe:__x64_sys_getppid+%d", off)
		c := exec.Command(testenv.Kinst(t), "-v", "-e", probe+` /pid == cpid/ { @[probe] = count(); }`, "-c", cmd)
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			if !strings.Contains(stderr.String(), "the kernel refuses a kprobe at __x64_sys_getppid+") {
				t.Fatalf("%s: %v\n%s", probe, err, stderr.String())
			}
			continue
		}
		if want := fmt.Sprintf("@[%s]: %d", probe, n); !hasLine(stdout.String(), want) {
			t.Errorf("got\n%s\nwant the line %q", stdout.String(), want)
		}
		if got := mechanismOf(stderr.String(), probe); got != "kprobe" {
			t.Errorf("mechanism %q, want kprobe", got)
		}
		return
	}
	t.Fatal("no offset attached")
}

// TestOffsetInsideInstruction: an offset that is not an instruction
// boundary is refused when the program is checked, at the probe, with the
// kernel's reason.
func TestOffsetInsideInstruction(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	const prog = "kprobe:__x64_sys_getppid+1 { }"
	c := exec.Command(testenv.Kinst(t), "--dry-run", "-e", prog)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	want := "-e:1:1: the kernel refuses a kprobe at __x64_sys_getppid+0x1: not an instruction boundary as the kernel decodes the function, or inside its ftrace call site (EILSEQ)\n" +
		prog + "\n" +
		"^~~~~~~~~~~~~~~~~~~~~~~~~~\n"
	if err == nil || stderr.String() != want {
		t.Errorf("kinst --dry-run -e %q: %v, stderr:\n%s\nwant:\n%s", prog, err, stderr.String(), want)
	}
}

// TestWildcardCounts attaches every vfs_ function and counts exactly the
// writes a workload makes.
func TestWildcardCounts(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	const n = 321
	cmd := fmt.Sprintf("%s write %d 8", testenv.Workload(t), n)
	stdout, stderr := run(t, 0, "-v", "-e", `kprobe:vfs_* /pid == cpid/ { @[func] = count(); }`, "-c", cmd)
	if want := fmt.Sprintf("@[vfs_write]: %d", n); !hasLine(stdout, want) {
		t.Errorf("got\n%s\nwant the line %q", stdout, want)
	}
	want := "kprobe"
	if kernel.Available(kernel.FeatKprobeMulti) {
		want = "kprobe.multi"
	}
	if m := regexp.MustCompile(`\((\d+) targets\): (\S+):`).FindStringSubmatch(stderr); m == nil || m[2] != want {
		t.Errorf("mechanism: got %v, want %s; stderr:\n%s", m, want, stderr)
	}
}

// TestMergedKprobeBlocks runs kprobe blocks of one body on three
// functions each write passes through: where the kernel has
// kprobe.multi they share one program and one link, elsewhere each
// keeps its own, and either way every function counts every write,
// once. The kretprobe and the block of another body stay apart.
func TestMergedKprobeBlocks(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	const n = 257
	cmd := fmt.Sprintf("%s write %d 8", testenv.Workload(t), n)
	const prog = `
kprobe:vfs_write /pid == cpid/ { @[func] = count(); @all = count(); }
kprobe:ksys_write /pid == cpid/ { @[func] = count(); @all = count(); }
kprobe:__x64_sys_write /pid == cpid/ { @[func] = count(); @all = count(); }
kretprobe:vfs_write /pid == cpid/ { @r = count(); }
kprobe:vfs_write /pid == cpid/ { @other = count(); }`
	stdout, stderr := run(t, 0, "-v", "-e", prog, "-c", cmd)
	want := []string{
		"Attaching 5 probes...",
		fmt.Sprintf("@[vfs_write]: %d", n),
		fmt.Sprintf("@[ksys_write]: %d", n),
		fmt.Sprintf("@[__x64_sys_write]: %d", n),
		fmt.Sprintf("@all: %d", 3*n),
		fmt.Sprintf("@other: %d", n),
		fmt.Sprintf("@r: %d", n),
	}
	for _, line := range want {
		if !hasLine(stdout, line) {
			t.Errorf("no line %q in\n%s", line, stdout)
		}
	}
	if got := strings.Count(stdout, "\n@"); got != len(want)-1 {
		t.Errorf("%d map lines, want %d:\n%s", got, len(want)-1, stdout)
	}
	// Three links with the merge: kprobe.multi, and one each for the
	// kretprobe and the other body; five without.
	links, shared := 5, "kinst: kprobe:vfs_write (1 targets): "
	if kernel.Available(kernel.FeatKprobeMulti) {
		links, shared = 3, "kinst: kprobe:vfs_write (3 targets): kprobe.multi: one kprobe.multi link attaches all 3 functions\n"
	}
	for _, line := range []string{shared, fmt.Sprintf("kinst: detached %d links in ", links)} {
		if !strings.Contains(stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr)
		}
	}
}

// TestManyFunctions attaches a wildcard of about a thousand functions
// and reports how long attaching and detaching take.
func TestManyFunctions(t *testing.T) {
	testenv.Require(t, testenv.KprobeMulti)
	start := time.Now()
	_, stderr := run(t, 0, "-v", "-e", `kprobe:*alloc* { @ = count(); }`, "-c", testenv.Workload(t)+" getppid 0")
	total := time.Since(start)
	m := regexp.MustCompile(`\((\d+) targets\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no target count in\n%s", stderr)
	}
	attached := regexp.MustCompile(`attached \S+ in (\S+)`).FindStringSubmatch(stderr)
	detached := regexp.MustCompile(`detached \d+ links in (\S+)`).FindStringSubmatch(stderr)
	if attached == nil || detached == nil {
		t.Fatalf("no attach or detach time in\n%s", stderr)
	}
	t.Logf("%s functions: attached in %s, detached in %s, %v in all", m[1], attached[1], detached[1], total)
	if d, _ := time.ParseDuration(detached[1]); d > 10*time.Second {
		t.Errorf("detaching one kprobe.multi link took %v", d)
	}
}

// TestNothingLeftAttached stops kinst by SIGINT, SIGTERM and a failure
// half-way through attaching, and checks that no kprobe stays behind.
func TestNothingLeftAttached(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	dir, err := kernel.TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	probes := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "kprobe_events"))
		k, _ := os.ReadFile("/sys/kernel/debug/kprobes/list")
		return string(b) + string(k)
	}
	if p := probes(); p != "" {
		t.Fatalf("kprobes attached before the test:\n%s", p)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(testenv.Kinst(t), "--attach", "kprobe", "-e", `kprobe:vfs_read { @ = count(); } END { printf("end\n"); }`)
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(out.String(), "Attaching") || probes() == "" {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("kinst never attached; output:\n%s", out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("kinst after %v: %v", sig, err)
			}
			if !strings.Contains(out.String(), "end\n") {
				t.Errorf("END did not run; output:\n%s", out.String())
			}
			if p := probes(); p != "" {
				t.Errorf("kprobes left after %v:\n%s", sig, p)
			}
		})
	}
	t.Run("failure", func(t *testing.T) {
		// The second attach point cannot attach at an offset that is
		// not an instruction boundary; the first must be undone.
		_, stderr := run(t, 1, "--attach", "kprobe", "-e", `kprobe:vfs_read { @a = count(); } kprobe:vfs_write+1 { @b = count(); }`)
		if !strings.Contains(stderr, "vfs_write+1") {
			t.Errorf("the error does not name the probe:\n%s", stderr)
		}
		if p := probes(); p != "" {
			t.Errorf("kprobes left after a failed attach:\n%s", p)
		}
	})
}

// TestAmbiguousName puts a kprobe on a name kallsyms gives to several
// functions, two of them in the kernel proper, which the kernel refuses
// (Linux 6.5, and the stable kernels it was backported to): kinst must
// say why in words, not with the bare errno.
func TestAmbiguousName(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	funcs, err := kernel.FilterFunctions()
	if err != nil {
		t.Fatalf("ftrace's function list: %v", err)
	}
	syms, err := kernel.LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	name, n := "", 0
	for _, f := range funcs.Funcs {
		var all, proper int
		for _, s := range syms.ByName(f.Name) {
			if s.IsFunc() {
				all++
				if s.Module == "" {
					proper++
				}
			}
		}
		if f.Module == "" && proper > 1 {
			name, n = f.Name, all
			break
		}
	}
	if name == "" {
		t.Fatal("no function name of the kernel proper is listed twice by kallsyms and ftrace")
	}
	cmd := exec.Command(testenv.Kinst(t), "--attach", "kprobe", "-e", "kprobe:"+name+" { @ = count(); }", "-c", testenv.Workload(t)+" getppid 1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		if v, err := kernel.KernelVersion(); err == nil && !v.AtLeast(6, 5) {
			t.Skipf("Linux %v puts a kprobe on %s, a name %d functions share (no backport of 6.5's refusal)", v, name, n)
		}
		t.Fatalf("kinst attached a kprobe to %s, a name %d functions share", name, n)
	}
	want := fmt.Sprintf("%d kernel functions are named %s (at 0x", n, name)
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "the kernel puts a kprobe only on a name that is unique") {
		t.Errorf("stderr does not say the name is ambiguous (%q):\n%s", want, stderr.String())
	}
	if strings.Contains(stderr.String(), "cannot assign requested address") {
		t.Errorf("stderr gives the raw errno:\n%s", stderr.String())
	}
}

// TestRefused runs every kernel-function probe type this kernel forbids
// and expects its one-line reason, the source line and caret, exit
// status 1, and nothing attached. Where the kernel allows them all (the
// guests) there is nothing to test.
func TestRefused(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		prog    string
		feature kernel.Feature
	}{
		{"kprobe:vfs_read { @ = count(); }", kernel.FeatKprobe},
		{"kretprobe:vfs_read { @ = count(); }", kernel.FeatKretprobe},
		{"fentry:vfs_read { @ = count(); }", kernel.FeatFentry},
		{"kfunc:vfs_read { @ = count(); }", kernel.FeatFentry},
		{"fexit:vfs_read { @ = count(); }", kernel.FeatFexit},
		{"kretfunc:vfs_read { @ = count(); }", kernel.FeatFexit},
		{"fmod_ret:security_file_open { @ = count(); }", kernel.FeatFmodRet},
	}
	refused := 0
	for _, tt := range tests {
		st := kernel.Probe(tt.feature)
		if st.Available {
			continue
		}
		refused++
		t.Run(strings.Fields(tt.prog)[0], func(t *testing.T) {
			_, stderr := run(t, 1, "-e", tt.prog)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			caret := "^" + strings.Repeat("~", len(strings.Fields(tt.prog)[0])-1)
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "-e:1:1: "+st.Reason) || lines[1] != tt.prog || lines[2] != caret {
				t.Errorf("stderr:\n%s\nwant the reason %q, the program and %q", stderr, st.Reason, caret)
			}
		})
	}
	if refused == 0 {
		t.Skip("this kernel allows every kernel-function probe type")
	}
}

// TestRefusedIsUnsupported resolves each kernel-function probe type this
// kernel forbids: the error matches ErrUnsupported, as kinst's own
// unsupported probe types do.
func TestRefusedIsUnsupported(t *testing.T) {
	tests := []struct {
		prog    string
		feature kernel.Feature // FeatBTF, always there, for a probe type kinst lacks
	}{
		{"kprobe:vfs_read {}", kernel.FeatKprobe},
		{"fentry:vfs_read {}", kernel.FeatFentry},
		{"fexit:vfs_read {}", kernel.FeatFexit},
		{"iter:bpf_map_elem {}", kernel.FeatBTF},
	}
	for _, tt := range tests {
		if tt.feature != kernel.FeatBTF && kernel.Probe(tt.feature).Available {
			continue
		}
		prog, err := syntax.Parse("-e", []byte(tt.prog))
		if err != nil {
			t.Fatal(err)
		}
		_, err = (&attach.Resolver{}).Resolve(prog.Probes[0].Points[0])
		if !errors.Is(err, attach.ErrUnsupported) {
			t.Errorf("%s: got %v, want an error matching ErrUnsupported", tt.prog, err)
		}
	}
}

// TestUntraceableLeftOut names, beside vfs_write, a function kallsyms
// lists but ftrace does not and the kernel refuses kprobes in: like a
// function that does not exist, it is left out of the probe with the
// kernel's reason, and vfs_write counts every write. Alone, it is an
// error at resolve time, not a failed attach.
func TestUntraceableLeftOut(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	// Kernels with CONFIG_KPROBE_EVENTS_ON_NOTRACE allow the kprobe.
	errs, err := kernel.CheckKprobes("strncpy_from_user", []uint64{0})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], syscall.EINVAL) {
		t.Skipf("this kernel does not refuse a kprobe on strncpy_from_user with EINVAL: %v", errs[0])
	}
	const n = 13
	refusal := "the kernel refuses a kprobe at strncpy_from_user+0x0: strncpy_from_user is a function ftrace cannot trace, " +
		"and this kernel allows kprobe events only in traceable functions (EINVAL)"
	prog := "kprobe:vfs_write, kprobe:strncpy_from_user /pid == cpid/ { @ = count(); }"
	stdout, stderr := run(t, 0, "-e", prog, "-c", fmt.Sprintf("%s write %d 8", testenv.Workload(t), n))
	if want := fmt.Sprintf("@: %d", n); !hasLine(stdout, want) {
		t.Errorf("got\n%s\nwant the line %q", stdout, want)
	}
	want := "-e:1:19: warning: " + refusal + "; left out of the probe\n" + prog + "\n" +
		strings.Repeat(" ", 18) + "^" + strings.Repeat("~", len("kprobe:strncpy_from_user")-1) + "\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	_, stderr = run(t, 1, "--dry-run", "-e", "kprobe:strncpy_from_user { }")
	if want := "-e:1:1: " + refusal + "\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr:\n%s\nwant it to start %q", stderr, want)
	}
}
