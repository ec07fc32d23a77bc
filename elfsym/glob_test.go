package elfsym

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Glob keeps the directories as written, as glob(3) does and bpftrace
// names probes with: "./" and ".." stay, doubled slashes stay, and a
// wildcard passes over dot files unless the pattern's part starts with a
// dot.
func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"prog", "prog2", ".prog", "sub1/lib.so", "sub2/lib.so", "sub3/other"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	tests := []struct {
		pattern string
		want    []string
	}{
		{"./prog*", []string{"./prog", "./prog2"}},
		{"prog*", []string{"prog", "prog2"}},
		{"./.prog*", []string{"./.prog"}},
		{"./prog?", []string{"./prog2"}},
		{"./prog[0-9]", []string{"./prog2"}},
		{"sub1/../prog*", []string{"sub1/../prog", "sub1/../prog2"}},
		{".//prog*", []string{".//prog", ".//prog2"}},
		{"./sub*/lib.so", []string{"./sub1/lib.so", "./sub2/lib.so"}},
		{"sub*//*", []string{"sub1//lib.so", "sub2//lib.so", "sub3//other"}},
		{dir + "/prog*", []string{dir + "/prog", dir + "/prog2"}},
		{"./nope*", nil},
		{"./nope*/lib.so", nil},
	}
	for _, tt := range tests {
		got, err := Glob(tt.pattern)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Glob(%q) = %q, %v; want %q", tt.pattern, got, err, tt.want)
		}
	}
	if _, err := Glob("./prog[*"); err == nil {
		t.Errorf("Glob of a malformed pattern: no error")
	}
}

// With a process, "*" names the files it maps and nothing in the
// current directory; a pattern without a slash matches their base names.
func TestGlobFilesOfProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("not-mapped", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := GlobFiles("*", os.Getpid())
	if err != nil || !slices.Contains(files, exe) || slices.Contains(files, "not-mapped") {
		t.Errorf(`GlobFiles("*", self) = %q, %v; want the test binary %s and not the current directory's file`, files, err, exe)
	}
	files, err = GlobFiles(filepath.Base(exe)[:3]+"*", os.Getpid())
	if err != nil || !slices.Contains(files, exe) {
		t.Errorf("GlobFiles(%q, self) = %q, %v; want %s among them", filepath.Base(exe)[:3]+"*", files, err, exe)
	}
	// Without a process, "*" is the current directory's files.
	files, err = GlobFiles("*", 0)
	if err != nil || !slices.Equal(files, []string{"not-mapped"}) {
		t.Errorf(`GlobFiles("*", 0) = %q, %v; want [not-mapped]`, files, err)
	}
}
