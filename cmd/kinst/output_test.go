package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// The environment of a run in each mode: 0.26.1's, the default, and
// 0.17's.
var (
	current = []string{"KINST_COMPAT="}
	v017    = []string{"KINST_COMPAT=0.17"}
)

// TestAttachedMessage: 0.17 says "Attaching N probes..." on standard
// output before attaching and __BPFTRACE_NOTIFY_PROBES_ATTACHED on
// standard error; 0.26.1 says "Attached N probes" on standard error once
// attached, counting each tracepoint and each begin and end probe, then
// the notify line on standard output. -q drops the first line only; -o
// sends neither to the file. 0.26.1 attaches the probes even when begin
// called exit().
func TestAttachedMessage(t *testing.T) {
	testenv.Require(t, testenv.Ringbuf, testenv.Tracepoint)
	const prog = `tracepoint:syscalls:sys_enter_getpid, tracepoint:syscalls:sys_enter_getppid { } begin { printf("hi\n"); exit(); } end { }`
	notify := "__BPFTRACE_NOTIFY_PROBES_ATTACHED="
	for _, tc := range []struct {
		name           string
		env            []string
		args           []string
		stdout, stderr string
	}{
		{"0.17", v017, nil, "Attaching 4 probes...\nhi\n\n\n", "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"},
		{"0.17 quiet", v017, []string{"-q"}, "hi\n\n\n", "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"},
		{"0.26.1", current, nil, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\nhi\n\n\n", "Attached 4 probes\n"},
		{"0.26.1 quiet", current, []string{"-q"}, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\nhi\n\n\n", ""},
		{"0.26.1 json", current, []string{"-f", "json"},
			"{\"type\": \"attached_probes\", \"count\": 4, \"data\": {\"probes\": 4}}\n__BPFTRACE_NOTIFY_PROBES_ATTACHED\n{\"type\": \"printf\", \"data\": \"hi\\n\"}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinstEnv(t, append(tc.env, notify), append(tc.args, "-e", prog)...).want(t, 0, tc.stdout, tc.stderr)
		})
	}

	// With -o, 0.17 writes its line into the file and the blank lines to
	// standard output; 0.26.1 writes the blank lines into the file.
	dir := t.TempDir()
	for _, tc := range []struct {
		name                 string
		env                  []string
		file, stdout, stderr string
	}{
		{"0.17", v017, "Attaching 1 probe...\nhi\n@x: 1\n", "\n\n", ""},
		{"0.26.1", current, "hi\n\n\n@x: 1\n", "", "Attached 1 probe\n"},
	} {
		t.Run("file "+tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			kinstEnv(t, tc.env, "-o", path, "-e", `begin { @x = 1; printf("hi\n"); exit(); }`).want(t, 0, tc.stdout, tc.stderr)
			if data, err := os.ReadFile(path); err != nil || string(data) != tc.file {
				t.Errorf("file %q (%v), want %q", data, err, tc.file)
			}
		})
	}
}

// TestMapsByMode prints the same maps in both modes and both formats.
func TestMapsByMode(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { @d[1, "a b"] = 1; @u = (uint64)-1; @s = stats(5); @a = avg(4); @e[1] = 1; delete(@e[1]);
	@c = count(); clear(@c); @l = lhist(1100, 0, 2048, 512); @k = lhist(1100, 0, 4096, 1024); @h = hist(5);
	@x[1] = 5; print(@x[1]); printf("hi\n"); exit(); }`
	for _, tc := range []struct {
		name   string
		env    []string
		format string
		stdout string
	}{
		{"0.17", v017, "text", "5\nhi\n\n\n" +
			"@a: 4\n\n" +
			"@c: 0\n" +
			"@d[1, a b]: 1\n" +
			"\n" +
			"@h: \n[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@k: \n[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@l: \n[1K, 1536)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@s: count 1, average 5, total 5\n\n" +
			"@u: 18446744073709551615\n" +
			"@x[1]: 5\n"},
		{"0.26.1", current, "text", "5\nhi\n\n\n" +
			"@a: 4\n" +
			"@d[1, a b]: 1\n" +
			"@h:\n[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@k:\n[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@l:\n[1024, 1536)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@s: { .count = 1, .average = 5, .total = 5 }\n" +
			"@u: 18446744073709551615\n" +
			"@x[1]: 5\n"},
		{"0.17 json", v017, "json", `{"type": "value", "data": 5}` + "\n" +
			`{"type": "printf", "data": "hi\n"}` + "\n\n\n" +
			`{"type": "stats", "data": {"@a": 4}}` + "\n" +
			`{"type": "map", "data": {"@c": 0}}` + "\n" +
			`{"type": "map", "data": {"@d": {"1,a b": 1}}}` + "\n" +
			`{"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1}]}}` + "\n" +
			`{"type": "hist", "data": {"@k": [{"min": 1024, "max": 2047, "count": 1}]}}` + "\n" +
			`{"type": "hist", "data": {"@l": [{"min": 1024, "max": 1535, "count": 1}]}}` + "\n" +
			`{"type": "stats", "data": {"@s": {"count": 1, "average": 5, "total": 5}}}` + "\n" +
			`{"type": "map", "data": {"@u": 18446744073709551615}}` + "\n" +
			`{"type": "map", "data": {"@x": {"1": 5}}}` + "\n"},
		{"0.26.1 json", current, "json", `{"type": "value", "data": 5}` + "\n" +
			`{"type": "printf", "data": "hi\n"}` + "\n" +
			`{"type": "stats", "data": {"@a": 4}}` + "\n" +
			`{"type": "map", "data": {"@d": {"1,ab": 1}}}` + "\n" +
			`{"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1}]}}` + "\n" +
			`{"type": "hist", "data": {"@k": [{"min": 1024, "max": 2047, "count": 1}]}}` + "\n" +
			`{"type": "hist", "data": {"@l": [{"min": 1024, "max": 1535, "count": 1}]}}` + "\n" +
			`{"type": "stats", "data": {"@s": {"count": 1, "average": 5, "total": 5}}}` + "\n" +
			`{"type": "map", "data": {"@u": "18446744073709551615"}}` + "\n" +
			`{"type": "map", "data": {"@x": {"1": 5}}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinstEnv(t, tc.env, "-q", "-f", tc.format, "-e", prog).want(t, 0, tc.stdout, "")
		})
	}
}

// TestHelperErrorByMode: a failed helper under -k is a warning on
// standard error in both modes, in each release's words, located where
// each release locates it; in JSON it is an object in the output, in
// each release's shape.
func TestHelperErrorByMode(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { @a[1] = 1; @a[2] = 2; exit(); }`
	// 0.17 locates an update at its '=', 0.26.1 marks the statement.
	caret017 := prog + "\n" + strings.Repeat(" ", 25) + "^\n"
	full := "kinst: warning: map @a was full: 1 update dropped; it holds at most 1 (set KINST_MAP_KEYS_MAX for more)\n"
	for _, tc := range []struct {
		name           string
		env            []string
		format         string
		stdout, stderr string
	}{
		{"0.17", v017, "text", "\n\n@a[1]: 1\n",
			"-e:1:26: WARNING: Failed to map_update_elem: Argument list too long (-7)\n" + caret017 + full},
		{"0.17 json", v017, "json",
			`{"type": "helper_error", "helper": "map_update_elem", "retcode": -7, "line": 1, "col": 26}` + "\n\n\n" +
				`{"type": "map", "data": {"@a": {"1": 1}}}` + "\n", full},
		{"0.26.1", current, "text", "\n\n@a[1]: 1\n",
			"stdin:1:20-29: WARNING: Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`\n" +
				"Additional Info - helper: map_update_elem, retcode: -7\n" + prog + "\n" + strings.Repeat(" ", 19) + strings.Repeat("~", 9) + "\n" + full},
		{"0.26.1 json", current, "json",
			`{"type": "helper_error", "msg": "Argument list too long", "helper": "map_update_elem", "retcode": -7, "filename": "stdin", "line": 1, "col": 20}` + "\n" +
				`{"type": "map", "data": {"@a": {"1": 1}}}` + "\n", full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinstEnv(t, append(tc.env, "BPFTRACE_MAP_KEYS_MAX=1"), "-q", "-k", "-f", tc.format, "-e", prog).want(t, 0, tc.stdout, tc.stderr)
		})
	}
}

// TestBeginOnlyEnds: 0.26.1 ends a program with only begin and end
// probes once begin has run; 0.17 traces on until a signal.
func TestBeginOnlyEnds(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { @x = 1; printf("Hello\n"); } end { printf("end\n"); }`
	kinstEnv(t, current, "-e", prog).want(t, 0, "Hello\nend\n\n\n@x: 1\n", "Attached 2 probes\n")

	cmd := exec.Command(testenv.Kinst(t), "-e", prog)
	cmd.Env = append(os.Environ(), v017...)
	var stdout, stderr testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done, waitErr := background(t, cmd)
	for deadline := time.Now().Add(runTimeout); !strings.Contains(stdout.String(), "Hello\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no Hello within %v\nstdout:\n%s\nstderr:\n%s", runTimeout, stdout.String(), stderr.String())
		}
	}
	select {
	case <-done:
		t.Fatalf("kinst ended (%v) without a signal in the 0.17 mode", *waitErr)
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, *waitErr)}
	res.want(t, 0, "Attaching 2 probes...\nHello\nend\n\n\n@x: 1\n", "")
}

// TestSignalUSR1Current: in the 0.26.1 mode SIGUSR1 has no action of its
// own: the maps are printed once, at the end. (TestSignalPrintsMaps is
// 0.17's.)
func TestSignalUSR1Current(t *testing.T) {
	testenv.Require(t, testenv.Ringbuf, testenv.PerfEvent)
	cmd := exec.Command(testenv.Kinst(t), "-e", `begin { @a = 1; @b[1, "x"] = 2; } interval:s:100 { @c = count(); }`)
	cmd.Env = append(os.Environ(), append(current, "__BPFTRACE_NOTIFY_PROBES_ATTACHED=")...)
	var stdout, stderr testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done, waitErr := background(t, cmd)
	for deadline := time.Now().Add(runTimeout); !strings.Contains(stdout.String(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not attached within %v\nstdout:\n%s\nstderr:\n%s", runTimeout, stdout.String(), stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	select {
	case <-done:
		t.Fatalf("kinst ended (%v) on SIGUSR1", *waitErr)
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, *waitErr)}
	res.want(t, 0, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n\n\n@a: 1\n@b[1, x]: 2\n", "Attached 2 probes\n")
}

// TestLostEventsCurrent: 0.26.1 says "Lost N events" on standard error,
// and its begin-only program ends once begin has run. (TestLostEvents is
// 0.17's.)
func TestLostEventsCurrent(t *testing.T) {
	tracing(t)
	const n = 1000
	prog := fmt.Sprintf(`begin { $i = 0; while ($i < %d) { printf("x %%d\n", $i); $i++; } }`, n)
	r := kinstEnv(t, append(current, "KINST_BUFFER_KB=4"), "-q", "-e", prog)
	out, ok := strings.CutSuffix(r.stdout, "\n\n")
	if r.code != 0 || !ok {
		t.Fatalf("exit status %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	got := lines(t, out)
	for i, line := range got {
		if want := fmt.Sprintf("x %d", i); line != want {
			t.Fatalf("line %d is %q, want %q", i+1, line, want)
		}
	}
	if want := fmt.Sprintf("Lost %d events\n", n-len(got)); r.stderr != want || len(got) == n {
		t.Errorf("%d lines printed, stderr %q; want %q", len(got), r.stderr, want)
	}
}

// TestLookupMiss: a map read whose key is absent is a helper error of
// map_lookup_elem, code 0, at each release's highest warning level: -k in
// 0.26.1, -kk in 0.17 (and not under 0.17's -k).
func TestLookupMiss(t *testing.T) {
	testenv.Root(t)
	const prog = `i:ms:1 { @[1] = 1; printf("%d\n", @[2]); exit(); }`
	caret := prog + "\n" + strings.Repeat(" ", 34) + "^\n"
	for _, tc := range []struct {
		name   string
		env    []string
		flag   string
		format string
		stdout string
		stderr string
	}{
		{"0.26.1", current, "-k", "text", "0\n\n\n@[1]: 1\n",
			"stdin:1:35-39: WARNING: Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0\n" +
				prog + "\n" + strings.Repeat(" ", 34) + "~~~~\n"},
		{"0.26.1 json", current, "-k", "json",
			`{"type": "helper_error", "msg": "Success", "helper": "map_lookup_elem", "retcode": 0, "filename": "stdin", "line": 1, "col": 35}` + "\n" +
				`{"type": "printf", "data": "0\n"}` + "\n" + `{"type": "map", "data": {"@": {"1": 1}}}` + "\n", ""},
		{"0.17 -kk", v017, "-kk", "text", "0\n\n\n@[1]: 1\n", "-e:1:35: WARNING: Failed to map_lookup_elem: 0\n" + caret},
		{"0.17 -k", v017, "-k", "text", "0\n\n\n@[1]: 1\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinstEnv(t, tc.env, "-q", tc.flag, "-f", tc.format, "-e", prog).want(t, 0, tc.stdout, tc.stderr)
		})
	}
}
