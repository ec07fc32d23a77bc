package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

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
