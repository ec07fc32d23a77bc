package elfsym

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// nmSym is what binutils' nm reports for a symbol.
type nmSym struct {
	addr, size uint64
	typ        string
}

// runNM lists the defined function symbols ("T", "t", "W", "w", "i") of a
// file with nm, or skips the test where binutils is not installed.
func runNM(t *testing.T, args ...string) map[string]nmSym {
	t.Helper()
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skip("binutils nm is not installed")
	}
	out, err := exec.Command(nm, append([]string{"-S", "--defined-only"}, args...)...).Output()
	if err != nil {
		t.Fatalf("nm %v: %v", args, err)
	}
	syms := map[string]nmSym{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 4 || !strings.Contains("TtWwi", f[2]) {
			continue
		}
		addr, err1 := strconv.ParseUint(f[0], 16, 64)
		size, err2 := strconv.ParseUint(f[1], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("nm line %q", line)
		}
		name, _, _ := strings.Cut(f[3], "@") // nm -D appends @@VERSION
		syms[name] = nmSym{addr, size, f[2]}
	}
	return syms
}

// loadSegment is a PT_LOAD line of readelf -lW.
type loadSegment struct{ off, vaddr, filesz uint64 }

func runReadelfLoads(t *testing.T, path string) []loadSegment {
	t.Helper()
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("binutils readelf is not installed")
	}
	out, err := exec.Command(readelf, "-lW", path).Output()
	if err != nil {
		t.Fatalf("readelf -lW %s: %v", path, err)
	}
	var loads []loadSegment
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "LOAD" {
			continue
		}
		var seg loadSegment
		for i, dst := range []*uint64{&seg.off, &seg.vaddr, nil, &seg.filesz} {
			if dst == nil {
				continue
			}
			v, err := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
			if err != nil {
				t.Fatalf("readelf line %q", line)
			}
			*dst = v
		}
		loads = append(loads, seg)
	}
	return loads
}

func segmentOffset(loads []loadSegment, addr uint64) uint64 {
	for _, l := range loads {
		if addr >= l.vaddr && addr < l.vaddr+l.filesz {
			return addr - l.vaddr + l.off
		}
	}
	return 0
}

func libcPath(t *testing.T) string {
	t.Helper()
	p, err := Resolve("libc", 0)
	if err != nil {
		t.Skipf("no system libc: %v", err)
	}
	return p
}

func TestOpenLibc(t *testing.T) {
	path := libcPath(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dyn := runNM(t, "-D", path)
	loads := runReadelfLoads(t, path)
	for _, name := range []string{"malloc", "free", "getppid", "nanosleep"} {
		want, ok := dyn[name]
		if !ok {
			t.Fatalf("nm -D does not list %s", name)
		}
		s, err := f.Lookup(name)
		if err != nil {
			t.Errorf("Lookup(%s): %v", name, err)
			continue
		}
		if s.Name != name || s.Addr != want.addr || s.Size != want.size || s.Offset != segmentOffset(loads, want.addr) {
			t.Errorf("Lookup(%s) = %+v; nm says addr %#x size %d, readelf puts it at offset %#x",
				name, s, want.addr, want.size, segmentOffset(loads, want.addr))
		}
		off, err := f.SymbolOffset(name, 4)
		if err != nil || off != s.Offset+4 {
			t.Errorf("SymbolOffset(%s, 4) = %#x, %v; want %#x", name, off, err, s.Offset+4)
		}
		if _, err := f.SymbolOffset(name, s.Size); err == nil {
			t.Errorf("SymbolOffset(%s, %d) beyond the function succeeded", name, s.Size)
		}
		sym, symOff, ok := f.Symbolize(s.Addr + 2)
		if !ok || symOff != 2 || sym.Addr != s.Addr {
			t.Errorf("Symbolize(%s+2) = %+v+%d, %v", name, sym, symOff, ok)
		}
	}
	_, err = f.Lookup("mallc")
	if !errors.Is(err, ErrNoSymbol) || err.Error() != "no such function: mallc in "+path+" (did you mean malloc?)" {
		t.Errorf("Lookup(mallc) error = %v", err)
	}
	_, err = f.Lookup("kinst_nothing_like_this")
	if !errors.Is(err, ErrNoSymbol) || err.Error() != "no such function: kinst_nothing_like_this in "+path {
		t.Errorf("Lookup(kinst_nothing_like_this) error = %v", err)
	}
}

// TestSymbolsLibc compares the glob listing with nm's view of libc and of
// its separate debug file when one is installed.
func TestSymbolsLibc(t *testing.T) {
	path := libcPath(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := runNM(t, "-D", path)
	if f.DebugPath != "" {
		for name, s := range runNM(t, f.DebugPath) {
			want[name] = s
		}
	}
	var names []string
	for name := range want {
		if strings.HasPrefix(name, "mallo") && !strings.Contains(name, ".part.") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var got []string
	for _, s := range f.Symbols("mallo*") {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, names) {
		t.Errorf("Symbols(mallo*) = %v, nm lists %v", got, names)
	}
}

// TestSymbolsMatchBpftrace compares listings with bpftrace's, where the
// reference peer is installed.
func TestSymbolsMatchBpftrace(t *testing.T) {
	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and bpftrace")
	}
	for _, target := range []string{"libc", "/bin/true"} {
		path, err := Resolve(target, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bpftrace, "-l", "uprobe:"+target+":*").Output()
		if err != nil {
			t.Fatalf("bpftrace -l: %v", err)
		}
		var want []string
		for line := range strings.Lines(string(out)) {
			want = append(want, strings.TrimPrefix(strings.TrimSpace(line), "uprobe:"+path+":"))
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range f.Symbols("*") {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d symbols, bpftrace lists %d; first difference at %d", target, len(got), len(want), firstDiff(got, want))
		}
	}
}

func TestOpenGoBinary(t *testing.T) {
	bin := testenv.Build(t, "./elfsym/testdata/target")
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Lookup("main.leaf")
	if err != nil {
		t.Fatal(err)
	}
	nm := runNM(t, bin)
	loads := runReadelfLoads(t, bin)
	want := nm["main.leaf"]
	if s.Addr != want.addr || s.Size != want.size || s.Offset != segmentOffset(loads, want.addr) {
		t.Errorf("Lookup(main.leaf) = %+v; nm: addr %#x size %d; readelf offset %#x", s, want.addr, want.size, segmentOffset(loads, want.addr))
	}
	if addr, ok := f.OffsetAddr(s.Offset); !ok || addr != s.Addr {
		t.Errorf("OffsetAddr(%#x) = %#x, %v; want %#x", s.Offset, addr, ok, s.Addr)
	}
	if got, off, ok := f.Symbolize(s.Addr + 5); !ok || got.Name != "main.leaf" || off != 5 {
		t.Errorf("Symbolize(main.leaf+5) = %s+%d, %v", got.Name, off, ok)
	}
	if got := f.Symbols("main.l*"); len(got) != 1 || got[0].Name != "main.leaf" {
		t.Errorf("Symbols(main.l*) = %+v", got)
	}
	if _, _, ok := f.Symbolize(1); ok {
		t.Error("Symbolize(1) found a function")
	}
}

// TestPartialInlining builds a C program whose compiler splits a function
// into a .part fragment, which listing must hide and symbolization name.
func TestPartialInlining(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "part.c")
	prog := `#include <stdio.h>
volatile int sink;
static int work(int x) {
	if (__builtin_expect(x < 0, 1)) return 0;
	for (int i = 0; i < x; i++) { sink += i * x; if (sink % 7 == 3) printf("%d\n", sink); }
	for (int i = 0; i < x; i++) { sink ^= i; if (sink % 11 == 3) puts("x"); }
	return sink;
}
int f1(int x) { return work(x) + 1; }
int f2(int x) { return work(x) + 2; }
int main(int argc, char **argv) { return f1(argc) + f2(-argc); }
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "part")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	part, err := f.Lookup("work.part.0")
	if err != nil {
		t.Skipf("this gcc did not split work: %v", err)
	}
	var names []string
	for _, s := range f.Symbols("*") {
		names = append(names, s.Name)
	}
	want := []string{"_fini", "_init", "_start", "deregister_tm_clones", "f1", "f2", "frame_dummy", "main", "register_tm_clones"}
	if !slices.Equal(names, want) && !slices.Equal(names, append([]string{"__do_global_dtors_aux"}, want...)) {
		t.Errorf("Symbols(*) = %v, want %v", names, want)
	}
	if s, off, ok := f.Symbolize(part.Addr + 1); !ok || s.Name != "work.part.0" || off != 1 {
		t.Errorf("Symbolize in work.part.0 = %s+%d, %v", s.Name, off, ok)
	}
	nm := runNM(t, bin)
	if nm["f1"].addr != mustLookup(t, f, "f1").Addr || nm["work.part.0"].size != part.Size {
		t.Errorf("f1 or work.part.0 differ from nm: %+v %+v", nm["f1"], nm["work.part.0"])
	}
}

func mustLookup(t *testing.T, f *File, name string) Symbol {
	t.Helper()
	s, err := f.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPrefer(t *testing.T) {
	syms := []Symbol{
		{Name: "__GI_getppid", bind: 0},
		{Name: "getppid", bind: 2},
		{Name: "__getppid", bind: 0},
		{Name: "__libc_malloc", bind: 1},
		{Name: "malloc", bind: 1},
	}
	slices.SortFunc(syms, prefer)
	var got []string
	for _, s := range syms {
		got = append(got, s.Name)
	}
	want := []string{"malloc", "__libc_malloc", "getppid", "__getppid", "__GI_getppid"}
	if !slices.Equal(got, want) {
		t.Errorf("preference order = %v, want %v", got, want)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("/nonexistent/kinst"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) error = %v", err)
	}
	// Shorter than an ELF header, and longer: debug/elf reports the
	// first as an EOF, the second by the bytes in place of the magic.
	for _, text := range []string{"#!/bin/sh\n", "#define N 1\n" + strings.Repeat("/* a header, not a program */\n", 8)} {
		notELF := filepath.Join(t.TempDir(), "script")
		if err := os.WriteFile(notELF, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(notELF); !errors.Is(err, ErrNotELF) || err.Error() != notELF+" is not an ELF file" {
			t.Errorf("Open of %d bytes of text: error = %v", len(text), err)
		}
	}
}
