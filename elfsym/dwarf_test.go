package elfsym

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

const dwarfSrc = `
struct point { int x, y; char name[8]; unsigned flags : 3; struct point *next; };
__attribute__((noinline)) int move(struct point *p, long dx, const char *why) { __asm__ volatile(""); return p->x + (int)dx + why[0]; }
int main(void) { struct point p = {1, 2, "a", 1, 0}; return move(&p, 3, "x") == 0; }
`

// TestDebugFuncs reads a function's parameters and a struct from DWARF:
// in the binary itself, in a separate file found by .gnu_debuglink, and
// not at all once stripped.
func TestDebugFuncs(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy is not installed")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	if err := os.WriteFile(src, []byte(dwarfSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(gcc, "-O1", "-g", "-o", bin, src)
	check := func(path string) {
		t.Helper()
		d, err := OpenDebug(path)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := d.Funcs("mov*")
		if err != nil || len(fs) != 1 {
			t.Fatalf("Funcs(mov*) = %v, %v; want move", fs, err)
		}
		var got []string
		for _, p := range fs[0].Params {
			got = append(got, p.Type.String()+" "+p.Name)
		}
		want := []string{"*struct point p", "long int dx", "*const char why"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("move's parameters are %q, want %q", got, want)
		}
		if st, err := d.Type("struct", "point"); err != nil {
			t.Error(err)
		} else if st.Size() != 32 {
			t.Errorf("struct point has %d bytes, want 32", st.Size())
		}
		if _, err := d.Type("struct", "nope"); err == nil {
			t.Error("struct nope was found")
		}
	}
	check(bin)
	// Split the debug information off, as distributions do.
	run(objcopy, "--only-keep-debug", bin, bin+".debug")
	run(objcopy, "--strip-debug", "--add-gnu-debuglink="+bin+".debug", bin, bin+".stripped")
	check(bin + ".stripped")
	run(objcopy, "--strip-debug", bin, bin+".bare")
	if _, err := OpenDebug(bin + ".bare"); !errors.Is(err, ErrNoDebugInfo) {
		t.Errorf("OpenDebug of a stripped binary: %v, want ErrNoDebugInfo", err)
	}

	// A debug file in a folder of its own is found once --debuginfo
	// names the folder, relative to the binary's.
	if err := os.Mkdir(filepath.Join(dir, "dbg"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(objcopy, "--strip-debug", "--add-gnu-debuglink="+bin+".debug", bin, bin+".moved")
	if err := os.Rename(bin+".debug", filepath.Join(dir, "dbg", "p.debug")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDebug(bin + ".moved"); !errors.Is(err, ErrNoDebugInfo) {
		t.Errorf("OpenDebug before --debuginfo: %v, want ErrNoDebugInfo", err)
	}
	defer func(saved []string) { debugDirs = saved }(debugDirs)
	AddDebugDirs("+dbg")
	check(bin + ".moved")
}

// TestDebugNoReturn lists the functions DWARF marks noreturn: the
// program's own, by C11's _Noreturn and GCC's attribute, and the C
// library's it calls, as declared in the headers.
func TestDebugNoReturn(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	const prog = `#include <stdlib.h>
__attribute__((noinline, noreturn)) void die(int c) { exit(c); }
__attribute__((noinline)) _Noreturn void fail(void) { abort(); }
__attribute__((noinline)) int back(int c) { __asm__ volatile(""); return c; }
int main(int argc, char **argv) { if (argc > 2) fail(); if (argc > 1) die(back(argc)); return 0; }
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	d, err := OpenDebug(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.NoReturn()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"abort", "die", "exit", "fail"}; !slices.Equal(got, want) {
		t.Errorf("NoReturn() = %q, want %q", got, want)
	}
}
