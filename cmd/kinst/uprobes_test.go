package main

import (
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
