package elfsym

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLibraryRank(t *testing.T) {
	tests := []struct {
		name, base string
		want       int
	}{
		{"libc", "libc.so.6", 2},
		{"libc", "libc.so", 1},
		{"libc", "libc-2.31.so", 1},
		{"libc", "libcap.so.2", 0},
		{"libc", "libc.so.6.debug", 2},
		{"libc.so.6", "libc.so.6", 3},
		{"libc.so.6", "libc.so.6.1", 0},
		{"libc.so", "libc.so.6", 0},
		{"libm", "libm.so.6", 2},
		{"libpthread", "libpthread-2.31.so", 1},
		{"libpthread", "libpthread-2.31.so.x", 0},
	}
	for _, tt := range tests {
		if got := libraryRank(tt.name, tt.base); got != tt.want {
			t.Errorf("libraryRank(%q, %q) = %d, want %d", tt.name, tt.base, got, tt.want)
		}
	}
}

// ldconfigPath returns the path `ldconfig -p` gives for a soname.
func ldconfigPath(t *testing.T, soname string) string {
	t.Helper()
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		t.Skip("no ldconfig to compare with")
	}
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(out)) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), " (")
		if ok && name == soname && strings.Contains(rest, "x86-64") {
			_, path, _ := strings.Cut(rest, " => ")
			return path
		}
	}
	t.Skipf("ldconfig -p lists no x86-64 %s", soname)
	return ""
}

func TestResolveLibraries(t *testing.T) {
	want := ldconfigPath(t, "libc.so.6")
	for _, name := range []string{"libc", "libc.so.6"} {
		got, err := Resolve(name, 0)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	_, err := Resolve("libkinst_nosuch", 0)
	if !errors.Is(err, ErrNotFound) || !strings.HasPrefix(err.Error(), "resolve libkinst_nosuch: no such binary or library: not in the ld.so cache or /lib64, ") {
		t.Errorf("Resolve(libkinst_nosuch) error = %v", err)
	}
}

func TestResolvePrograms(t *testing.T) {
	// Independently: the first $PATH directory holding an executable true.
	want := ""
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "true")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			want = p
			break
		}
	}
	if want == "" {
		t.Skip("no true program on $PATH")
	}
	if got, err := Resolve("true", 0); err != nil || got != want {
		t.Errorf("Resolve(true) = %q, %v; want %q", got, err, want)
	}
	if got, err := Resolve(want, 0); err != nil || got != want {
		t.Errorf("Resolve(%q) = %q, %v; a path names itself", want, got, err)
	}
	// With a process in kinst's own mount namespace, a path is the same
	// file for both (another namespace is tested in cmd/kinst); a
	// relative one stays kinst's.
	self := os.Getpid()
	if got, err := Resolve(want, self); err != nil || got != want {
		t.Errorf("Resolve(%q, %d) = %q, %v; want %[1]q", want, self, got, err)
	}
	if got, err := Resolve("./resolve_test.go", self); err != nil || got != "./resolve_test.go" {
		t.Errorf("Resolve(./resolve_test.go, %d) = %q, %v", self, got, err)
	}
	if got, err := Resolve("./resolve_test.go", 0); err != nil || got != "./resolve_test.go" {
		t.Errorf("Resolve(./resolve_test.go) = %q, %v; a relative path names itself", got, err)
	}
	tests := []struct{ target, want string }{
		{"", "resolve uprobe target: no such binary or library: empty name"},
		{"kinst_no_such_program", "resolve kinst_no_such_program: no such binary or library: not a program on $PATH"},
		{"/nonexistent/prog", "resolve /nonexistent/prog: no such binary or library: stat /nonexistent/prog: no such file or directory"},
		{"/", "resolve /: no such binary or library: not a regular file"},
	}
	for _, tt := range tests {
		_, err := Resolve(tt.target, 0)
		if !errors.Is(err, ErrNotFound) || err.Error() != tt.want {
			t.Errorf("Resolve(%q) error = %v, want %q", tt.target, err, tt.want)
		}
	}
}

func TestDirLibrary(t *testing.T) {
	dir := t.TempDir()
	elfBytes, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"libfoo.so":      []byte("/* GNU ld script */\nINPUT(libfoo.so.1)\n"),
		"libfoo.so.1":    elfBytes,
		"libfoo-2.3.so":  elfBytes,
		"libfoobar.so.1": elfBytes,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := libDirs
	libDirs = []string{filepath.Join(dir, "missing"), dir}
	defer func() { libDirs = saved }()
	tests := map[string]string{
		"libfoo":      "libfoo.so.1", // versioned soname beats the linker script
		"libfoo.so.1": "libfoo.so.1",
		"libfoobar":   "libfoobar.so.1",
		"libfoo.so":   "", // the exact name is a linker script, not ELF
	}
	for name, want := range tests {
		got, ok := dirLibrary(name)
		if want == "" {
			if ok {
				t.Errorf("dirLibrary(%q) = %q, want nothing", name, got)
			}
			continue
		}
		if !ok || got != filepath.Join(dir, want) {
			t.Errorf("dirLibrary(%q) = %q, %v; want %s", name, got, ok, want)
		}
	}
}
