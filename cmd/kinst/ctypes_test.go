package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// Declared types beyond what bpftrace 0.17 accepts: typedefs in the
// program and array indexes computed at run time. The workload's
// nanosleep passes {0, 2600000}, whose bytes the union overlays.
func TestDeclaredTypesVariableIndex(t *testing.T) {
	t.Parallel()
	tracing(t)
	prog := `typedef unsigned short u16_t;
struct pair { int lo; int hi; };
typedef union { struct pair p[2]; u16_t h[2][4]; } words_t;
tracepoint:syscalls:sys_enter_nanosleep /tid == cpid/ {
	$w = (words_t *)args->rqtp;
	$i = 0;
	while ($i < 4) {
		printf("%d %d\n", $w->h[1][$i], $w->p[$i / 2].lo);
		$i++;
	}
	$j = 1;
	print($w->p[$j]);
	@[$w->h[$j]] = sizeof(words_t);
}`
	kinst(t, "-q", "-e", prog, "-c", workload(t)+" nanosleep 1 2600").want(t, 0,
		"44096 0\n39 0\n0 2600000\n0 2600000\n{ .lo = 2600000, .hi = 0 }\n\n\n@[[-21440,39,0,0]]: 16\n", "")
}

// naptime.bt, as Debian ships it, reads args->rqtp->tv_sec: the format
// file declares rqtp a struct __kernel_timespec *, which BTF types. The
// tool traces every process; the workload's three sleeps of 1.0037 s,
// a length nothing else here sleeps, must show as 1.003 each, in one
// process whose parent is kinst.
func TestNaptimeTool(t *testing.T) {
	t.Parallel()
	tracing(t)
	const tool = "/usr/sbin/naptime.bt"
	if _, err := os.Stat(tool); err != nil {
		t.Skipf("%s is not installed (Debian's bpftrace package ships it): %v", tool, err)
	}
	w := workload(t)
	r := kinst(t, tool, "-c", w+" nanosleep 3 1003700")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	head := "Attaching 2 probes...\nTracing sleeps. Hit Ctrl-C to end.\nTIME     PPID   PCOMM            PID    COMM             SECONDS"
	if got := strings.Join(lines[:min(3, len(lines))], "\n"); got != head {
		t.Fatalf("output starts\n%s\nwant\n%s", got, head)
	}
	// time() and printf() are separate events, so under load another
	// CPU's time() may land between this line's two parts: match the
	// printf part alone.
	line := regexp.MustCompile(`(?:^|:\d\d )(\d+) +(\S+) +(\d+) +(\S+) +1\.003$`)
	pids := map[string]bool{}
	n := 0
	for _, l := range lines[3:] {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		pids[m[3]] = true
		if m[2] != comm(testenv.Kinst(t)) || m[4] != comm(w) {
			t.Errorf("line %q: want parent %s and command %s", l, comm(testenv.Kinst(t)), comm(w))
		}
	}
	if n != 3 || len(pids) != 1 {
		t.Errorf("%d sleeps of 1.003 s in %d processes, want 3 in 1; stderr:\n%s", n, len(pids), r.stderr)
	}
}

// Pointer minus pointer counts elements, as in C (bpftrace 0.17 refuses
// it), and ++ and += on a map holding a pointer step by the pointee.
func TestPointerDifference(t *testing.T) {
	t.Parallel()
	tracing(t)
	prog := `struct pair { int lo; int hi; };
tracepoint:syscalls:sys_enter_nanosleep /tid == cpid/ {
	$p = (int32 *)args->rqtp;
	$q = $p + 3;
	$r = (struct pair *)$p;
	$s = $r + 1;
	@m = $p;
	@m++;
	@m += 2;
	printf("%d %d %d %d %d\n", $q - $p, $p - $q, $s - $r, (uint64)$s - (uint64)$r, *@m);
	delete(@m);
}`
	kinst(t, "-q", "-e", prog, "-c", workload(t)+" nanosleep 1 2600").want(t, 0, "3 -3 1 8 0\n\n\n\n", "")
}

// Uprobe arguments by name from the target's DWARF: integers, strings
// and a struct pointer with a char array, bitfields and a pointer to
// another struct; kinst_move alternates between a and b.
func TestUprobeDWARFArgs(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := strings.NewReplacer("BIN", bin).Replace(`
uprobe:BIN:kinst_move {
	printf("%d %d %s %d %d %d\n", args->dx, args->p->x, args->p->name, args->p->flags, args->p->level, args->p->next != 0);
	@[args->p->name, args->p->y] = sum(args->dx);
}
uprobe:BIN:kinst_move /args->p->next != 0/ { print(*args->p->next); }`)
	kinst(t, "-q", "-e", prog, "-c", bin+" move 4").want(t, 0,
		"1 0 alpha 5 17 0\n"+
			"2 100 beta 2 31 1\n"+
			"{ .x = 1, .y = 7, .name = alpha, .flags = 5, .level = 17, .next = 0 }\n"+
			"3 1 alpha 5 17 0\n"+
			"4 102 beta 2 31 1\n"+
			"{ .x = 4, .y = 7, .name = alpha, .flags = 5, .level = 17, .next = 0 }\n"+
			"\n\n@[alpha, 7]: 4\n@[beta, -1]: 6\n", "")
	prog = "uprobe:" + bin + ":kinst_add { @add = sum(args->a + args->b); }"
	kinst(t, "-q", "-e", prog, "-c", bin+" add 3").want(t, 0, "\n\n@add: -6\n", "")
	// Casts in a uprobe take the binary's types before the kernel's.
	prog = "uprobe:" + bin + ":kinst_move { $p = (struct kinst_point *)arg0; printf(\"%s %d %d\\n\", $p->name, $p->level, sizeof(struct kinst_point)); }"
	kinst(t, "-q", "-e", prog, "-c", bin+" move 2").want(t, 0, "alpha 17 32\nbeta 31 32\n\n\n", "")
}

// A uprobe's args as a whole, in bpftrace 0.26.1's mode, is a record
// of the arguments: printed, stored, a map key, in tuples (where it
// starts at an odd byte) and read back by field.
func TestUprobeArgsWhole(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := "uprobe:" + bin + `:kinst_add { print(args); @[args] = count(); @last = args; @t[(1, "x", args)] = (args, "y"); $a = args; @b = sum($a.b); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", bin+" add 2").want(t, 0,
		"{ .a = 1, .b = -2 }\n"+
			"{ .a = 2, .b = -4 }\n"+
			"\n\n"+
			"@[{ .a = 1, .b = -2 }]: 1\n"+
			"@[{ .a = 2, .b = -4 }]: 1\n"+
			"@b: -6\n"+
			"@last: { .a = 2, .b = -4 }\n"+
			"@t[1, x, { .a = 1, .b = -2 }]: ({ .a = 1, .b = -2 }, y)\n"+
			"@t[1, x, { .a = 2, .b = -4 }]: ({ .a = 2, .b = -4 }, y)\n", "")
}

// A trampoline's args as a whole is built from its words alike:
// do_nanosleep(t, mode) with mode HRTIMER_MODE_REL, 1.
func TestFentryArgsWhole(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Fentry, testenv.Ringbuf)
	prog := `fentry:do_nanosleep /tid == cpid/ { $a = args; @[(uint64)$a.mode] = count(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", workload(t)+" nanosleep 3 1000").want(t, 0, "\n\n@[1]: 3\n", "")
}

// A binary without DWARF, and an offset past the entry, give located
// errors that say why args is missing.
func TestUprobeArgsErrors(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe)
	bin := target(t)
	tests := []struct{ prog, want string }{
		{"uprobe:" + bin + ":kinst_move+4 { @ = args->dx }",
			"args is not available for uprobe:" + bin + ":kinst_move+4: past the entry of kinst_move its registers no longer hold the arguments"},
		{"uprobe:" + bin + ":kinst_move { @ = args->nope }", "struct kinst_move_args has no field nope"},
	}
	// The guests have no objcopy: the stripped case runs where one is.
	stripped := filepath.Join(t.TempDir(), "stripped")
	if out, err := exec.Command("objcopy", "--strip-debug", bin, stripped).CombinedOutput(); err == nil {
		tests = append(tests, struct{ prog, want string }{"uprobe:" + stripped + ":kinst_move { @ = args->dx }",
			"args is not available for uprobe:" + stripped + ":kinst_move: " + stripped + ": no DWARF debug information (build it with -g)"})
	} else {
		t.Logf("objcopy --strip-debug: %v\n%s", err, out)
	}
	for _, tt := range tests {
		r := kinst(t, "--dry-run", "-e", tt.prog)
		if r.code != 1 || !strings.Contains(r.stderr, "-e:1:") || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant a located error saying %q", tt.prog, r.code, r.stderr, tt.want)
		}
	}
}

// -lv lists a binary's functions with their parameters from DWARF,
// spelled as bpftrace 0.17 spells them, except volatile pointees, which
// 0.17 lists as "<unknown type>*" (checked with kinst_fence and
// kinst_watch) and kinst spells out.
func TestListUprobeParams(t *testing.T) {
	t.Parallel()
	bin := target(t)
	want := strings.NewReplacer("BIN", bin).Replace(`uprobe:BIN:kinst_add
    long int a
    long int b
uprobe:BIN:kinst_fence
    volatile long int* c
uprobe:BIN:kinst_greet
    const char* word
uprobe:BIN:kinst_move
    struct kinst_point* p
    int dx
uprobe:BIN:kinst_phase
    int on
uprobe:BIN:kinst_stack
    long int a
    long int b
    long int c
    long int d
    long int e
    long int f
    long int g
    long int h
uprobe:BIN:kinst_watch
    volatile long int* a
    volatile int* b
`)
	r := kinst(t, "-lv", "uprobe:"+bin+":kinst_*")
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}

// TestFloatMembers: a declared struct with float and double members is
// laid out as C lays it out; printed whole, it shows the members kinst
// can print (bpftrace 0.17 prints nothing for such a print()), and in the
// 0.26.1 mode the floating-point ones as null.
func TestFloatMembers(t *testing.T) {
	t.Parallel()
	tracing(t)
	prog := `struct fl { float f; int hi; double nsec_bits; };
struct ts { int lo; float f; long nsec; };
tracepoint:syscalls:sys_enter_nanosleep /tid == cpid/ {
	$t = (struct ts *)args->rqtp;
	print(*$t);
	@[*$t] = sizeof(struct fl);
}`
	kinst(t, "-q", "-e", prog, "-c", workload(t)+" nanosleep 1 2600").want(t, 0,
		"{ .lo = 0, .nsec = 2600000 }\n\n\n@[{.lo=0,.nsec=2600000}]: 16\n", "")
	// bpftrace 0.26.1 shows them as null.
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", workload(t)+" nanosleep 1 2600").want(t, 0,
		"{ .lo = 0, .f = null, .nsec = 2600000 }\n\n\n@[{ .lo = 0, .f = null, .nsec = 2600000 }]: 16\n", "")
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-f", "json", "-e", prog, "-c", workload(t)+" nanosleep 1 2600").want(t, 0,
		`{"type": "value", "data": {"lo": 0, "f": null, "nsec": 2600000}}`+"\n"+`{"type": "map", "data": {"@": {"{.lo=0,.f=null,.nsec=2600000}": 16}}}`+"\n", "")
}

// TestModuleBTFCast casts to a struct only a module's BTF defines:
// plug_sched_data of sch_plug (net/sched/sch_plug.c, the same in 6.1
// and 6.12: two bools, then five u32 from offset 4, 20 bytes). Before
// the module is loaded the type is unknown; loaded, the workload's
// timespec {0, 2500000} reads through it at C's offsets. The test loads
// the module (vmrun packs it into the guests), and unloads it after
// unless it was loaded before.
func TestModuleBTFCast(t *testing.T) {
	tracing(t)
	testenv.Root(t)
	if _, err := os.Stat("/proc/modules"); err != nil {
		t.Skip("this kernel cannot load modules")
	}
	const module = "sch_plug"
	prog := `tracepoint:syscalls:sys_enter_nanosleep /tid == cpid/ {
	$p = (struct plug_sched_data *)args->rqtp;
	printf("%d %d %d %d\n", sizeof(struct plug_sched_data), $p->limit, $p->pkts_current_epoch, $p->pkts_last_epoch);
}`
	run := func() result { return kinst(t, "-q", "-e", prog, "-c", workload(t)+" nanosleep 1 2500") }
	if _, err := os.Stat("/sys/kernel/btf/" + module); err != nil {
		if r := run(); r.code == 0 || !strings.Contains(r.stderr, "-e:2:8: unknown type struct plug_sched_data\n") {
			t.Errorf("before %s is loaded: exit status %d, stderr:\n%s", module, r.code, r.stderr)
		}
		loadModule(t, module)
		t.Cleanup(func() {
			if err := unix.DeleteModule(module, unix.O_NONBLOCK); err != nil {
				t.Errorf("unload %s: %v", module, err)
			}
		})
		if _, err := os.Stat("/sys/kernel/btf/" + module); err != nil {
			t.Skipf("%s is loaded but has no BTF: the kernel was built without CONFIG_DEBUG_INFO_BTF_MODULES", module)
		}
	}
	run().want(t, 0, "20 0 2500000 0\n\n\n", "")
}
