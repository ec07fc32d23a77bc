package output

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// -update rewrites the golden files under testdata from the reference
// implementations (bpftrace 0.17, glibc through gcc) instead of comparing.
var update = flag.Bool("update", false, "rewrite golden files from bpftrace and glibc")

// golden returns the golden file's contents, after rewriting it with
// generate when -update is set.
func golden(t *testing.T, name string, generate func(t *testing.T) []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		data := generate(t)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return data
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update as root with bpftrace 0.17 and gcc installed to create it)", err)
	}
	return data
}

// runC compiles a C program with gcc and returns its standard output.
func runC(t *testing.T, src string) []byte {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: cannot ask glibc")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "main")
	if out, err := exec.Command(gcc, "-w", "-o", bin, filepath.Join(dir, "main.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return out
}

// cString quotes s as a C string literal.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
			b.WriteString(`""`) // end the hex escape
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// diffLines fails t with the first differing line of got and want.
func diffLines(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	reported := 0
	for i := 0; (i < len(g) || i < len(w)) && reported < 10; i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			t.Errorf("%s: line %d differs:\n got: %q\nwant: %q\n(got %d lines, want %d)", what, i+1, gl, wl, len(g), len(w))
			reported++
		}
	}
}
