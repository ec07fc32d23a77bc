package main

import (
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"-run", "begin,bogus"}, `bench: unknown item "bogus" in -run: use size,begin,header,tracepoint,latency,event,printf,soak,syscalls,probes,bigmap`},
		{[]string{"-n", "-1"}, "bench: -n, -events, -printf-events and -soak-rate must be positive, -soak at least 1s"},
		{[]string{"-soak", "500ms"}, "bench: -n, -events, -printf-events and -soak-rate must be positive, -soak at least 1s"},
		{[]string{"-soak-rate", "0"}, "bench: -n, -events, -printf-events and -soak-rate must be positive, -soak at least 1s"},
		{[]string{"extra"}, `bench: unexpected arguments ["extra"]`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		var out, errs strings.Builder
		if code := mainBench(tt.args, &out, &errs); code != 2 {
			t.Errorf("%q: exit status %d, want 2", tt.args, code)
		}
		if !strings.Contains(errs.String(), tt.msg) {
			t.Errorf("%q: standard error %q, want %q", tt.args, errs.String(), tt.msg)
		}
	}
}

func TestSelectItems(t *testing.T) {
	sel, err := selectItems(" event ,printf")
	if err != nil {
		t.Fatal(err)
	}
	if len(sel) != 2 || !sel["event"] || !sel["printf"] {
		t.Errorf("selected %v, want event and printf", sel)
	}
	all, err := selectItems("")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if all[it.name] == it.long {
			t.Errorf("item %s selected by default: %v, want %v", it.name, all[it.name], !it.long)
		}
	}
	if long, err := selectItems("soak"); err != nil || !long["soak"] {
		t.Errorf(`selectItems("soak") = %v, %v; want soak`, long, err)
	}
}

func TestSetDefault(t *testing.T) {
	for _, tt := range []struct {
		v     int
		short bool
		want  int
	}{{0, false, 20}, {0, true, 5}, {3, true, 3}, {7, false, 7}} {
		v := tt.v
		if setDefault(&v, tt.short, 20, 5); v != tt.want {
			t.Errorf("setDefault(%d, short %v) = %d, want %d", tt.v, tt.short, v, tt.want)
		}
	}
}

func TestIsKinstModule(t *testing.T) {
	for gomod, want := range map[string]bool{
		"module kinst.dev/kinst\n\ngo 1.26.0\n": true,
		"// c\nmodule kinst.dev/kinst\n":        true,
		"module kinst.dev/kinst/bench\n":        false,
		"module example.com/other\n":            false,
		"go 1.26.0\n":                           false,
	} {
		if got := isKinstModule([]byte(gomod)); got != want {
			t.Errorf("isKinstModule(%q) = %v, want %v", gomod, got, want)
		}
	}
}

func TestComm(t *testing.T) {
	for path, want := range map[string]string{
		"/work/main/bin/workload":       "workload",
		"workload":                      "workload",
		"/tmp/a_very_long_binary_name_": "a_very_long_bin",
	} {
		if got := comm(path); got != want {
			t.Errorf("comm(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestBenchKinst runs every timed item once with small workloads against
// kinst alone. It checks the harness end to end, not kinst's speed: the
// figures must be there, whatever they are.
func TestBenchKinst(t *testing.T) {
	testenv.Root(t)
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	kinst := testenv.Kinst(t)
	workload := testenv.Workload(t)
	// The soak's map of milliseconds fills up in its first tenth of a
	// second, so that its refused updates are counted.
	t.Setenv("KINST_MAP_KEYS_MAX", "100")
	var out, errs strings.Builder
	code := mainBench([]string{"-n", "1", "-bpftrace", "none", "-kinst", kinst, "-workload", workload,
		"-events", "20000", "-printf-events", "2000", "-soak", "2s", "-soak-rate", "20000",
		"-run", "begin,header,tracepoint,latency,event,printf,soak,syscalls"}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit status %d\n%s\n%s", code, out.String(), errs.String())
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Split(line, "  "); len(f) > 1 {
			rows[f[0]] = f
		}
	}
	for _, name := range []string{
		"BEGIN { exit(); } wall",
		"BEGIN { exit(); } peak RSS",
		"#include <sys/socket.h> BEGIN wall",
		"openat count -c /bin/true wall",
		"openat count -c /bin/true peak RSS",
		"sys_enter_* count -c /bin/true wall",
		"-c command exit after tool start",
		"maps printed after -c command exit",
		"tool exit after -c command exit",
		"@[comm] = count() cost per event",
		"printf events delivered per second",
		"printf events lost, reported",
		"printf events missing, unreported",
		"soak events generated per second",
		"soak printf events delivered per second",
		"soak printf events lost, reported",
		"soak printf events missing, unreported",
		"soak @calls = count() short of events",
		"soak full-map updates dropped, reported",
		"soak map updates missing, unreported",
		"soak RSS at the start of the stream",
		"soak RSS at the end of the stream",
		"soak RSS largest",
		"soak RSS growth after the first 10%",
	} {
		if _, ok := rows[name]; !ok {
			t.Errorf("no row %q in\n%s", name, out.String())
		}
	}
	// 2000 records fit in kinst's ring buffer many times over, and 20,000
	// a second are a small part of what its reader takes: none may go
	// missing, and every event and update is delivered or reported.
	for _, name := range []string{"printf events lost, reported", "printf events missing, unreported",
		"soak printf events lost, reported", "soak printf events missing, unreported",
		"soak @calls = count() short of events", "soak map updates missing, unreported"} {
		if f := strings.Fields(strings.TrimPrefix(strings.Join(rows[name], "  "), name)); len(f) < 2 || f[0] != "0" || f[1] != "-" {
			t.Errorf("row %q: kinst and bpftrace columns %q, want 0 and -", name, f)
		}
	}
	// Two seconds of milliseconds are 2,000 keys, far over 100.
	if f := strings.Fields(strings.TrimPrefix(strings.Join(rows["soak full-map updates dropped, reported"], "  "), "soak full-map updates dropped, reported")); len(f) < 1 || f[0] == "0" {
		t.Errorf("no full-map updates reported dropped: %q", f)
	}
	for _, note := range []string{"note: getppid() without a tool: ", "note: load average (1 minute) ", "note: soak kinst: resident memory every 10% of the run: "} {
		if !strings.Contains(out.String(), note) {
			t.Errorf("no %q in\n%s", note, out.String())
		}
	}
}
