package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd5b7e6000)\n" +
		"\tlibLLVM-14.so.1 => /lib/x86_64-linux-gnu/libLLVM-14.so.1 (0x00007f1e3a800000)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1e3a400000)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f1e4a1c4000)\n"
	got, err := parseLdd(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/lib/x86_64-linux-gnu/libLLVM-14.so.1",
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseLdd = %q, want %q", got, want)
	}
}

func TestParseLddMissing(t *testing.T) {
	_, err := parseLdd("\tlibbcc.so.0 => not found\n")
	if err == nil || err.Error() != "missing library: libbcc.so.0 => not found" {
		t.Errorf("err = %v, want the missing library named", err)
	}
}

func TestStaticFootprint(t *testing.T) {
	bin := testenv.Workload(t)
	fp, err := staticFootprint(bin)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fp.size != st.Size() || len(fp.libs) != 0 {
		t.Errorf("footprint %d bytes, libraries %q; want %d and none", fp.size, fp.libs, st.Size())
	}
}

func dynamicTrue(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ldd"); err != nil {
		t.Skip("no ldd on this machine")
	}
	path, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Skip("no /bin/true on this machine")
	}
	if out, _ := exec.Command("ldd", path).Output(); !strings.Contains(string(out), "libc.so") {
		t.Skipf("%s is not a dynamic executable here", path)
	}
	return path
}

func TestStaticFootprintOfDynamic(t *testing.T) {
	path := dynamicTrue(t)
	fp, err := staticFootprint(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(fp.libs, func(l string) bool { return strings.HasPrefix(l, "libc.so") }) ||
		!slices.ContainsFunc(fp.libs, func(l string) bool { return strings.Contains(l, "ld-linux") }) {
		t.Errorf("libraries of %s = %q, want its loader and libc", path, fp.libs)
	}
}

func TestDynamicFootprint(t *testing.T) {
	path := dynamicTrue(t)
	fp, err := dynamicFootprint(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := st.Size()
	seen := map[string]bool{}
	for _, l := range fp.libs {
		if seen[l] {
			t.Errorf("library %s counted twice", l)
		}
		seen[l] = true
		st, err := os.Lstat(l)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Mode().IsRegular() {
			t.Errorf("library %s is not a resolved file", l)
		}
		want += st.Size()
	}
	if fp.size != want {
		t.Errorf("footprint %d bytes, want %d: the executable and each library", fp.size, want)
	}
	if !slices.ContainsFunc(fp.libs, func(l string) bool { return strings.Contains(filepath.Base(l), "libc") }) ||
		!slices.ContainsFunc(fp.libs, func(l string) bool { return strings.Contains(l, "ld-linux") }) {
		t.Errorf("libraries of %s = %q, want its loader and libc", path, fp.libs)
	}
}
