package attach_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// A function a shared library lacks is looked for in what it loads,
// breadth first and beside it, among exported symbols only; a program's
// libraries are not searched.
func TestLoadedByLibrary(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build shared libraries")
	}
	dir := t.TempDir()
	build := func(out, src string, args ...string) {
		t.Helper()
		cmd := exec.Command(gcc, append([]string{"-O1", "-fPIC", "-x", "c", "-", "-o", filepath.Join(dir, out), "-L" + dir, "-Wl,--no-as-needed"}, args...)...)
		cmd.Stdin = strings.NewReader(src)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", out, err, b)
		}
	}
	// liba loads libb, which loads libc2 (and liba again: a cycle).
	build("libc2.so", "int deep(void) { return 3; }", "-shared", "-Wl,-soname,libc2.so")
	build("liba.so", "int own(void) { return 0; }", "-shared", "-Wl,-soname,liba.so")
	build("libb.so", `int foo(void) { return 1; }
__attribute__((noinline, used)) static int local(void) { return 2; }
int call(void) { return local(); }`, "-shared", "-Wl,-soname,libb.so", "-lc2", "-la")
	build("liba.so", "int own(void) { return 0; }", "-shared", "-Wl,-soname,liba.so", "-lb")
	build("prog", "int foo(void); int main(void) { return foo(); }", "-la", "-lb")

	liba := filepath.Join(dir, "liba.so")
	tests := []struct {
		lib, fn string
		path    string // where the target is found
		err     string
	}{
		{liba, "own", liba, ""},
		{liba, "foo", filepath.Join(dir, "libb.so"), ""},
		{liba, "deep", filepath.Join(dir, "libc2.so"), ""},
		{liba, "local", "", "no matches for uprobe " + liba + ":local: no such function"},
		{liba, "nowhere", "", "no matches for uprobe " + liba + ":nowhere: no such function"},
		{filepath.Join(dir, "prog"), "foo", "", "no matches for uprobe " + filepath.Join(dir, "prog") + ":foo: no such function"},
	}
	for _, tt := range tests {
		src := "uprobe:" + tt.lib + ":" + tt.fn + " { }"
		prog, err := syntax.Parse("t", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		r := &attach.Resolver{}
		targets, err := r.Resolve(prog.Probes[0].Points[0])
		if tt.err != "" {
			if err == nil || err.Error() != tt.err || !errors.Is(err, check.ErrNoTarget) {
				t.Errorf("%s: %v, %v; want the error %q, marked ErrNoTarget", src, targets, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		got := targets[0].Attach.(attach.Uprobe).Path
		warned := targets[0].Warning != ""
		if got != tt.path || warned != (tt.path != tt.lib) {
			t.Errorf("%s: probes %s (warning %q), want %s", src, got, targets[0].Warning, tt.path)
		}
	}
}
