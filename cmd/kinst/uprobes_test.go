package main

import (
	"fmt"
	"strings"
	"testing"

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
