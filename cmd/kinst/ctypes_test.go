package main

import "testing"

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
