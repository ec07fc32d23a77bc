package main

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestBpftraceBehaviours runs programs whose standard output under -q is
// what bpftrace 0.17 prints for them here, and compares kinst's.
func TestBpftraceBehaviours(t *testing.T) {
	t.Parallel()
	tracing(t)
	tests := []struct {
		name, prog, stdout string
	}{
		// Any expression is a statement; ++ inside one still counts.
		{"expression statements",
			`BEGIN { @x = 1; @x++ + 1; curtask->pid; curtask->comm; (1, "a"); exit(); }`,
			"\n\n@x: 2\n"},
		{"ternary of calls",
			`BEGIN { nsecs ? printf("yes\n") : printf("no\n"); $z = 0; $z ? printf("yes\n") : printf("no\n"); $z ? @a++ : @b++; exit(); }`,
			"yes\nno\n\n\n\n@b: 1\n"}, // @a, empty, prints as a blank line
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kinst(t, "-q", "-e", tt.prog).want(t, 0, tt.stdout, "")
		})
	}
}

// A field read on its own is a statement, as in bpftrace's tools.
func TestFieldReadStatements(t *testing.T) {
	t.Parallel()
	tracing(t)
	prog := `tracepoint:syscalls:sys_enter_clock_nanosleep /pid == cpid/ { args->rqtp->tv_sec; @n = count(); }`
	kinst(t, "-q", "-e", prog, "-c", target(t)+" sleep 1").want(t, 0, "\n\n@n: 1\n", "")
	kinst(t, "--dry-run", "-e", `tracepoint:napi:napi_poll { args->napi->dev->name; }`).want(t, 0, "", "")
}

// A char[N] holding no NUL is N bytes long, as a string and as
// macaddr()'s argument: bpftrace 0.17 prints these lines for the first
// call of kinst_move, on a point whose y is 7 and whose name is "alpha".
// Its comparisons do not load in 0.17; kinst's see the same N bytes.
func TestFullCharArrays(t *testing.T) {
	t.Parallel()
	tracing(t)
	// A copy of its own: a uprobe fires in every process that runs
	// the file, and the other tests run it at the same time.
	bin := targetCopy(t)
	prog := `struct m { int x; short y0; char mac[6]; } struct n { int x, y; char s[4]; }
uprobe:` + bin + `:kinst_move {
	$m = (struct m *)arg0; $n = (struct n *)arg0;
	printf("%s %s|\n", macaddr($m->mac), $n->s);
	@k[macaddr($m->mac)] = macaddr($m->mac); @s[$n->s] = $n->s;
	@eq = ($n->s == "alph", $n->s == "alp", $n->s != "alphx", strncmp($n->s, "alphx", 5), strncmp($n->s, "alph", 4));
}`
	kinst(t, "-q", "-e", prog, "-c", bin+" move 1").want(t, 0, "00:00:61:6C:70:68 alph|\n\n\n"+
		"@eq: (1, 0, 1, 1, 0)\n"+
		"@k[00:00:61:6C:70:68]: 00:00:61:6C:70:68\n"+
		"@s[alph]: alph\n", "")
}

// A tuple lays a struct out as bytes and an array as its elements, as
// bpftrace 0.17 does: these sizes and values are what it prints for the
// first call of kinst_move (x 0, y 7, name "alpha"). A field of a struct
// packed so is read all the same.
func TestTupleLayout(t *testing.T) {
	t.Parallel()
	tracing(t)
	// A copy of its own: a uprobe fires in every process that runs
	// the file, and the other tests run it at the same time.
	bin := targetCopy(t)
	prog := `struct a { int a[4]; } struct p { int x; int y; } struct l { long x; } struct s { short a[3]; }
uprobe:` + bin + `:kinst_move {
	$a = (struct a *)arg0; $p = (struct p *)arg0; $l = (struct l *)arg0; $s = (struct s *)arg0;
	printf("%d %d %d %d %d %d\n", sizeof(((int32)1, $a->a)), sizeof(((int32)1, *$p)), sizeof(((int8)1, $a->a)),
		sizeof(((int8)1, *$l)), sizeof(((int8)1, $s->a)), sizeof((*$p, (int8)1)));
	$t = ((int8)1, *$l, (int8)2); print($t); print($t.1.x);
	@m[1] = ((int32)5, $a->a); @n = ((int8)1, *$p); @o = $t;
}`
	kinst(t, "-q", "-e", prog, "-c", bin+" move 1").want(t, 0, "20 12 20 9 8 9\n"+
		"(1, { .x = 30064771072 }, 2)\n30064771072\n\n\n"+
		"@m[1]: (5, [0,7,1752198241,97])\n"+
		"@n: (1, { .x = 0, .y = 7 })\n"+
		"@o: (1, { .x = 30064771072 }, 2)\n", "")
}

// ntop() takes a family known only at run time, and buffers compare with
// == and !=: bpftrace 0.17 prints these lines for the first call of
// kinst_move (x 0, y 7, name "alpha").
func TestRunTimeFamilyAndBufferEquality(t *testing.T) {
	t.Parallel()
	tracing(t)
	// A copy of its own: a uprobe fires in every process that runs
	// the file, and the other tests run it at the same time.
	bin := targetCopy(t)
	prog := `struct u { int x, y; uint8_t s[4]; } struct w { uint8_t a[16]; }
uprobe:` + bin + `:kinst_move {
	$u = (struct u *)arg0; $w = (struct w *)arg0; $af = 2; $af6 = $af + 8;
	printf("%s %s|%s|\n", ntop($af, $u->s), ntop($af6, $w->a), ntop($af + 1, 0x0100007f));
	$a = buf($u->s, 4); $b = buf(arg0 + 8, 4); $c = buf(arg0, 4);
	printf("%d %d %d\n", $a == $b, $a != $c, $a == $c);
	$d = buf("hi", 2); $e = buf("bye", 3); printf("%d %d\n", $d == $e, $d != $e);
}`
	kinst(t, "-q", "-e", prog, "-c", bin+" move 1").want(t, 0, "97.108.112.104 ::700:0:616c:7068:6100:0||\n1 1 0\n0 1\n\n\n", "")
}

// Positional parameters go wherever bpftrace takes them: in an attach
// point's provider, as constant strings through str(), and with a
// constant added inside str().
func TestParamsAsBpftrace(t *testing.T) {
	t.Parallel()
	tracing(t)
	prog := `BEG$1 { printf("%s|%s|%d\n", str($2 + 1), str(($2 + 5), 2), kaddr(str($3)) == kaddr("vfs_read")); exit(); }`
	kinst(t, "-q", "-e", prog, "IN", "hello", "vfs_read").want(t, 0, "ello||1\n\n\n", "")
	kinst(t, "-q", "-e", `BEGIN { printf("%s\n", str($1 + 6)); }`, "hello").want(t, 1, "",
		"-e:1:33: str($1 + N) reads from the Nth byte of $1, which has 5: N must be at most that, not 6\n"+
			`BEGIN { printf("%s\n", str($1 + 6)); }`+"\n"+
			"                                ^\n")
}

// bpftrace's banned kretprobes are refused on any kernel, whether it has
// kprobes or not, with bpftrace's reason; a kprobe on them is not.
func TestBannedKretprobes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ spec, name string }{
		{"_raw_spin_lock", "_raw_spin_lock"},
		{"_raw_spin_lock_irqsave", "_raw_spin_lock_irqsave"},
		{"_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irqrestore"},
		{"queued_spin_lock_slowpath", "queued_spin_lock_slowpath"},
		{"vmlinux:queued_spin_lock_slowpath", "queued_spin_lock_slowpath"},
		{"_raw_spin_*irq*", "_raw_spin_lock_irqsave"},
	} {
		prog := "kretprobe:" + tt.spec + " { }"
		kinst(t, "-e", prog).want(t, 1, "", "-e:1:1: error: kretprobe:"+tt.name+" can't be used as it might lock up your system.\n"+
			prog+"\n^"+strings.Repeat("~", len(prog)-5)+"\n")
	}
}

// TestPidFilter: in the 0.26.1 mode -p restricts tracepoints and kernel
// probes to the process, and opens software events for its threads
// alone; 0.17 counted every process there.
func TestPidFilter(t *testing.T) {
	testenv.Root(t)
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	pid := strconv.Itoa(busy.Process.Pid)
	prog := `tracepoint:raw_syscalls:sys_enter, software:cpu-clock:1000000 { @[pid] = count(); } interval:ms:300 { exit(); }`
	keys := func(mode []string) []string {
		r := kinstEnv(t, mode, "-q", "-p", pid, "-e", prog)
		if r.code != 0 {
			t.Fatalf("exit status %d, stderr:\n%s", r.code, r.stderr)
		}
		var ks []string
		for _, line := range strings.Split(r.stdout, "\n") {
			if k, _, ok := strings.Cut(line, "]: "); ok {
				ks = append(ks, strings.TrimPrefix(k, "@["))
			}
		}
		return ks
	}
	if ks := keys(current); len(ks) != 1 || ks[0] != pid {
		t.Errorf("0.26.1: processes counted %q, want only %s", ks, pid)
	}
	if ks := keys(v017); !slices.ContainsFunc(ks, func(k string) bool { return k != pid }) {
		t.Errorf("0.17: processes counted %q, want others than %s too", ks, pid)
	}
}
