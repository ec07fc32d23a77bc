package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"kinst.dev/kinst/internal/testenv"
)

// The kernel stacks of 1000 getppid calls go to the profile, with the
// comm as a label; the map without stacks prints as text.
func TestPprofFormat(t *testing.T) {
	t.Parallel()
	tracing(t)
	w := workload(t)
	file := filepath.Join(t.TempDir(), "calls.pb.gz")
	prog := `tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[kstack, comm] = count(); @n = count(); }`
	kinst(t, "-f", "pprof", "-o", file, "-e", prog, "-c", w+" getppid 1000").want(t, 0, "Attaching 1 probe...\n\n\n@n: 1000\n", "")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || *p.SampleType[0] != (profile.ValueType{Type: "samples", Unit: "count"}) {
		t.Errorf("sample types %v, want samples/count", p.SampleType)
	}
	var total int64
	empty := 0
	for _, s := range p.Sample {
		total += s.Value[0]
		if got := s.Label["key1"]; !slices.Equal(got, []string{comm(w)}) {
			t.Errorf("sample labels %v, want key1 %s", s.Label, comm(w))
		}
		if len(s.Location) == 0 {
			empty++
			continue
		}
		var names []string
		for _, l := range s.Location {
			if l.Mapping == nil || l.Mapping.File != "[kernel.kallsyms]" || len(l.Line) != 1 {
				t.Fatalf("location %v is not a symbolized kernel address", l)
			}
			names = append(names, l.Line[0].Function.Name)
		}
		if !slices.Contains(names, "do_syscall_64") {
			t.Errorf("stack %v does not pass through do_syscall_64", names)
		}
	}
	if total != 1000 {
		t.Errorf("samples add up to %d, want 1000", total)
	}
	switch {
	case empty > 0 && empty == len(p.Sample):
		// 6.1 hands a syscall tracepoint's program the user registers
		// of the call, from which no kernel stack unwinds.
		t.Skip("this kernel gives syscall tracepoints no kernel stack: the stacks are not checked")
	case empty > 0:
		t.Errorf("%d of %d samples have no stack", empty, len(p.Sample))
	}
}

func TestPprofErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.pb.gz")
	missing := filepath.Join(dir, "none", "p.pb.gz")
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-f", "pprof", "-e", "profile:hz:99 { @[kstack] = count(); }"}, 2, "kinst: -f pprof writes a binary profile: give -o FILE\n"},
		{[]string{"-f", "pprof", "-o", file, "-e", "BEGIN { @[comm] = count(); }"}, 1, "kinst: -f pprof: no map is keyed by kstack or ustack\n"},
		{[]string{"-f", "pprof", "-o", missing, "-e", "profile:hz:99 { @[kstack] = count(); }"}, 1, "kinst: open " + missing + ": no such file or directory\n"},
		{[]string{"-f", "svg", "-e", "BEGIN { }"}, 2, "kinst: invalid output format \"svg\": use text, json or pprof\n"},
	}
	for _, tt := range tests {
		kinst(t, tt.args...).want(t, tt.code, "", tt.stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s: %v", file, err)
	}
}

// The user stacks of a -c command resolve though the maps that hold them
// are printed once the command has exited: its mappings are read while
// it runs, as kinst profile reads each process's when it first samples it.
func TestCommandUstackResolved(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := targetCopy(t)
	prog := "uprobe:" + bin + ":kinst_add { @[ustack(1)] = count() }"
	// In the default mode; the 0.17 mode leaves them unknown, as
	// bpftrace 0.17 does.
	// The default mode's show_debug_info adds the source line.
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", prog, "-c", bin+" add 10").want(t, 0, "\n\n@[\n    kinst_add+0"+targetLine(t, 58)+"\n]: 10\n", "Attached 1 probe\n")

	file := filepath.Join(t.TempDir(), "add.pb.gz")
	kinst(t, "-f", "pprof", "-o", file, "-e", prog, "-c", bin+" add 10").want(t, 0, "Attaching 1 probe...\n", "")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Sample {
		for _, l := range s.Location {
			for _, line := range l.Line {
				got = append(got, fmt.Sprintf("%s %d", line.Function.Name, s.Value[0]))
			}
		}
	}
	if want := []string{"kinst_add 10"}; !slices.Equal(got, want) {
		t.Errorf("the profile's functions are %q, want %q", got, want)
	}
}
