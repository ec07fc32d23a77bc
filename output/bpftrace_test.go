package output

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/compat"
)

// A bpftraceCase is a bpftrace 0.17 program and the Go code that prints
// the same thing through a Writer. Its golden files under testdata/bpftrace
// hold what bpftrace wrote to standard output, in text and JSON modes.
type bpftraceCase struct {
	name   string
	prog   string
	flags  []string // more bpftrace flags, such as -k
	env    []string
	probes uint64 // probes bpftrace attaches; 1 when 0
	// print writes what the program prints while it runs, and returns
	// the maps it holds at exit.
	print func(w *Writer) ([]*Map, error)
}

// bpftraceCases is filled by the cases_*_test.go files.
var bpftraceCases []bpftraceCase

func (c *bpftraceCase) goldenPath(json bool) string {
	if json {
		return filepath.Join("bpftrace", c.name+".json")
	}
	return filepath.Join("bpftrace", c.name+".txt")
}

// expected prints the case as kinst would: the attach line, what the
// program prints, the exit separator, the maps.
func (c *bpftraceCase) expected(t *testing.T, json bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewText(&buf, compat.V017)
	if json {
		w = NewJSON(&buf, compat.V017)
	}
	probes := c.probes
	if probes == 0 {
		probes = 1
	}
	if err := w.AttachedProbes(probes); err != nil {
		t.Fatal(err)
	}
	maps, err := c.print(w)
	if err != nil {
		t.Fatalf("printing: %v", err)
	}
	buf.WriteString(ExitSeparator)
	if err := w.Maps(maps); err != nil {
		t.Fatalf("printing maps: %v", err)
	}
	return buf.Bytes()
}

// haveBpftrace skips t unless bpftrace 0.17 can run here.
func haveBpftrace(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Skip("bpftrace is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("bpftrace needs root")
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "bpftrace v0.17.") {
		t.Skipf("want bpftrace v0.17, have %q (%v)", strings.TrimSpace(string(out)), err)
	}
	return path
}

// runBpftrace runs the case's program and returns its standard output.
func runBpftrace(t *testing.T, bpftrace string, c *bpftraceCase, json bool) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{}, c.flags...)
	if json {
		args = append(args, "-f", "json")
	}
	args = append(args, "-e", c.prog)
	cmd := exec.CommandContext(ctx, bpftrace, args...)
	cmd.Env = append(os.Environ(), c.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bpftrace %q: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// TestBpftraceGolden compares each case with what bpftrace 0.17 printed
// for it. With -update it runs bpftrace (as root) three times per case
// and mode, refusing output that varies between runs, and stores it.
func TestBpftraceGolden(t *testing.T) {
	for i := range bpftraceCases {
		c := &bpftraceCases[i]
		for _, json := range []bool{false, true} {
			mode := "text"
			if json {
				mode = "json"
			}
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				want := golden(t, c.goldenPath(json), func(t *testing.T) []byte {
					bpftrace := haveBpftrace(t)
					first := runBpftrace(t, bpftrace, c, json)
					for range 2 {
						if again := runBpftrace(t, bpftrace, c, json); !bytes.Equal(again, first) {
							t.Fatalf("bpftrace prints this case differently from run to run:\n%s\n---\n%s", first, again)
						}
					}
					return first
				})
				diffLines(t, c.name+" "+mode, c.expected(t, json), want)
			})
		}
	}
}

// TestBpftraceLive runs every case through the installed bpftrace and
// compares its output with ours directly, catching golden files that no
// longer match the reference.
func TestBpftraceLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bpftrace for every case")
	}
	bpftrace := haveBpftrace(t)
	for i := range bpftraceCases {
		c := &bpftraceCases[i]
		for _, json := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				diffLines(t, c.name, c.expected(t, json), runBpftrace(t, bpftrace, c, json))
			})
		}
	}
}
