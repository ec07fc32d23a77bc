package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// count --order-file writes the functions that ran, most called first
// and equals by name, one symbol a line: target add 7 calls kinst_add 7
// times, main and strtol (from atol) once; kinst_greet and kinst_phase,
// never called, are left out.
func TestCountOrderFile(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.UprobeMulti, testenv.Ringbuf)
	bin := target(t)
	file := filepath.Join(t.TempDir(), "order.txt")
	r := kinst(t, "count", "uprobe:"+bin+":kinst_*", "uprobe:"+bin+":main", "uprobe:"+bin+":strtol",
		"-c", bin+" add 7", "--order-file", file, "-f", "json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "kinst_add\nmain\nstrtol\n"; string(got) != want {
		t.Errorf("order file\n%s\nwant\n%s", got, want)
	}
}

func TestCountOrderFileErrors(t *testing.T) {
	t.Parallel()
	bin := target(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"kernel function", []string{"vfs_read"}, 2,
			"kinst count: --order-file: vfs_read is not a function of a user program: name uprobe:PATH:FUNC targets\n"},
		{"tracepoint", []string{"uprobe:" + bin + ":main", "syscall:read"}, 2,
			"kinst count: --order-file: syscall:read is not a function of a user program: name uprobe:PATH:FUNC targets\n"},
		{"two programs", []string{"uprobe:" + bin + ":main", "uprobe:/bin/true:main"}, 2,
			"kinst count: --order-file: the targets are in " + bin + " and /bin/true: a symbol ordering file is for the link of one program\n"},
		{"unwritable", []string{"uprobe:" + bin + ":main", "--order-file", filepath.Join(dir, "none", "order.txt")}, 1,
			"kinst: --order-file: open " + filepath.Join(dir, "none", "order.txt") + ": no such file or directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"count", "--order-file", filepath.Join(dir, "order.txt")}, tc.args...)
			kinst(t, args...).want(t, tc.code, "", tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "order.txt")); !os.IsNotExist(err) {
		t.Errorf("a refused command line left an order file: %v", err)
	}
}

// With uprobe:BIN:* on a dynamically linked build of target.c, whose own
// functions the wildcard covers (the C library's are in libc.so), the
// file starts with kinst_add, called 7 times, followed by the functions
// called once (main and the C runtime's start and end code) by name, and
// leaves out the functions never called.
func TestCountOrderFileWildcard(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.UprobeMulti, testenv.Ringbuf)
	bin := gccBuild(t, "testdata/target.c", "-O1")
	file := filepath.Join(t.TempDir(), "order.txt")
	r := kinst(t, "count", "uprobe:"+bin+":*", "-c", bin+" add 7", "--order-file", file, "-f", "json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	once := lines[1:]
	if lines[0] != "kinst_add" || !slices.Contains(once, "main") || !slices.IsSorted(once) ||
		slices.Contains(lines, "kinst_greet") || slices.Contains(lines, "kinst_phase") {
		t.Errorf("order file:\n%s", data)
	}
}
