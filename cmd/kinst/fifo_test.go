package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// -o opens its file the same way in every command: a named pipe holds
// kinst until its reader comes, and then gets everything kinst -o FILE
// would have written, where a pipe opened for reading and writing would
// have let kinst run with nobody reading and lose the output.
func TestOutputNamedPipe(t *testing.T) {
	t.Parallel()
	tracing(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "x.bt")
	if err := os.WriteFile(prog, []byte(`BEGIN { printf("x\n"); @a = 1; exit(); }`), 0o644); err != nil {
		t.Fatal(err)
	}
	getppid := testenv.Workload(t) + " getppid 3"
	tests := []struct {
		name   string
		args   []string // -o FIFO comes first
		stdout string
		fifo   *regexp.Regexp
	}{
		{"-e", []string{"-e", `BEGIN { printf("x\n"); @a = 1; exit(); }`}, "\n\n", regexp.MustCompile(`^Attaching 1 probe...\nx\n@a: 1\n$`)},
		{"file", []string{prog}, "\n\n", regexp.MustCompile(`^Attaching 1 probe...\nx\n@a: 1\n$`)},
		{"latency", []string{"latency", "-c", getppid, "syscall:getppid"}, "", regexp.MustCompile(`^@oncpu\[syscall:getppid\]: count 3, average \d+, total \d+\n`)},
		{"count", []string{"count", "-c", getppid, "syscall:getppid"}, "", regexp.MustCompile(`^\d\d:\d\d:\d\d\nFUNCTION +CALLS\ngetppid +3\n\n$`)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fifo := filepath.Join(dir, "fifo"+string(rune('0'+i)))
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			args := tt.args
			if len(args) > 0 && (args[0] == "latency" || args[0] == "count") {
				args = append([]string{args[0], "-o", fifo}, args[1:]...)
			} else {
				args = append([]string{"-o", fifo}, args...)
			}
			r := start(t, args...)
			select {
			case <-r.done:
				t.Fatalf("kinst ended (%v) with nobody reading %s\nstderr:\n%s", r.err, fifo, &r.stderr)
			case <-time.After(300 * time.Millisecond):
			}
			// Opened without waiting for a writer, a pipe kinst has let go
			// of reads as empty rather than holding the test.
			f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			data, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			res := r.wait(t)
			res.want(t, 0, tt.stdout, "")
			if !tt.fifo.Match(data) {
				t.Errorf("%s got %q, want %v", fifo, data, tt.fifo)
			}
		})
	}
}
