package instruments

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

func TestAppendDuration(t *testing.T) {
	tests := []struct {
		ns   uint64
		want string
	}{
		{0, "0ns"},
		{999, "999ns"},
		{1000, "1.000us"},
		{12345, "12.345us"},
		{100_050, "100.050us"},
		{1_000_000, "1.000ms"},
		{3_210_987, "3.210ms"},
		{1_500_000_000, "1.500s"},
		{61_007_000_000, "61.007s"},
	}
	for _, tt := range tests {
		if got := string(appendDuration(nil, tt.ns)); got != tt.want {
			t.Errorf("appendDuration(%d) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}

// testLog is a trace log of two targets: a system call whose entries log
// typed arguments and a stack, and a wildcard of tracepoints. Its
// probes are those that send each kind of record.
func testLog(t testing.TB, json bool) (*traceLog, map[string]string) {
	tracepoint := func(cat, name string) *check.Target {
		return &check.Target{Provider: "tracepoint", Name: cat + ":" + name, Func: name, Attach: attach.Tracepoint{Category: cat, Name: name}}
	}
	specs := []*traceSpec{
		{
			probeTarget: probeTarget{Spec: "syscall:openat", Entry: "tracepoint:syscalls:sys_enter_openat", Exit: "tracepoint:syscalls:sys_exit_openat"},
			args: []traceArg{
				{"dfd", "args.dfd", signedValue}, {"filename", "str(args.filename)", stringValue},
				{"flags", "args.flags", unsignedValue}, {"buf", "args.buf", hexValue},
			},
			stack:  "kstack",
			retval: "args.ret",
			entry:  tracepoint("syscalls", "sys_enter_openat"),
			exit:   tracepoint("syscalls", "sys_exit_openat"),
		},
		{probeTarget: probeTarget{Spec: "tracepoint:sched:*", Entry: "tracepoint:sched:*"}},
	}
	format := "text"
	if json {
		format = "json"
	}
	_, records := traceProgram(&common{Format: format}, specs)
	clock := &wallClock{offset: 1_700_000_000_000_000_000 - 5_000_000_000}
	l := newTraceLog(clock, records, json)
	probes := map[string]string{}
	for point, rec := range records {
		if rec.target != nil {
			rec.fn = &probeFunc{probe: rec.target.FullName(), name: "openat", symbol: "__x64_sys_openat", addr: 0xffffffff81234560}
		} else if rec.kind == hitRecord {
			rec.targets = byName([]*check.Target{tracepoint("sched", "sched_wakeup"), tracepoint("sched", "sched_switch")})
		}
		kind := [...]string{headerRecord: "header", entryRecord: "entry", exitRecord: "exit", hitRecord: "hit"}[rec.kind]
		probes[kind] = point
	}
	return l, probes
}

// Values of the records testLog's program makes, 5.25s after the
// monotonic clock's start, which is 2023-11-14T22:13:15.25Z.
var (
	logCommon = values(uint64(5_250_000_001), uint64(1), uint64(4242), uint64(4243), "cat")
	logStack  = kinst.ValueOf([]kinst.Frame{{Addr: 0xffffffff81000010, Symbol: "do_sys_open", Offset: 16}, {Addr: 0xffffffff82000000}})
	logEntry  = append(append(values(), logCommon...), kinst.ValueOf(int64(1)),
		kinst.ValueOf(int64(-100)), kinst.ValueOf(`/tmp/a "b"`), kinst.ValueOf(uint64(524288)), kinst.ValueOf(uintptr(0xdead)), logStack)
	logExit = append(append(values(), logCommon...), values(int64(1), int64(-2), uint64(12345))...)
	logHit  = append(append(values(), logCommon...), values(int64(0), "tracepoint:sched:sched_switch")...)
)

// values are the Values of Go values.
func values(xs ...any) []kinst.Value {
	vals := []kinst.Value{}
	for _, x := range xs {
		vals = append(vals, kinst.ValueOf(x))
	}
	return vals
}

var ()

func TestTraceLogText(t *testing.T) {
	l, probes := testLog(t, false)
	var b strings.Builder
	for _, r := range []struct {
		kind string
		args []kinst.Value
	}{{"header", nil}, {"entry", logEntry}, {"exit", logExit}, {"hit", logHit}} {
		if err := l.printf(&b, probes[r.kind], r.args); err != nil {
			t.Fatalf("%s: %v", r.kind, err)
		}
	}
	at := time.Unix(1_700_000_000, 250_000_001).Format("15:04:05.000000000")
	want := "TIME               CPU     PID     TID COMM             CALL\n" +
		at + "   1    4242    4243 cat                -> openat (0xffffffff81234560) dfd=-100 filename=\"/tmp/a \\\"b\\\"\" flags=524288 buf=0xdead\n" +
		"        do_sys_open+16\n" +
		"        0xffffffff82000000\n" +
		at + "   1    4242    4243 cat                <- openat (0xffffffff81234560) = -2 (12.345us)\n" +
		at + "   1    4242    4243 cat              -- sched:sched_switch\n"
	if b.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", b.String(), want)
	}
	if l.events != 3 {
		t.Errorf("%d events counted, want 3", l.events)
	}
}

func TestTraceLogJSON(t *testing.T) {
	l, probes := testLog(t, true)
	var b strings.Builder
	for _, r := range []struct {
		kind string
		args []kinst.Value
	}{{"entry", logEntry}, {"exit", logExit}, {"hit", logHit}} {
		if err := l.printf(&b, probes[r.kind], r.args); err != nil {
			t.Fatalf("%s: %v", r.kind, err)
		}
	}
	at := time.Unix(1_700_000_000, 250_000_001).Format("2006-01-02T15:04:05.000000000Z07:00")
	head := `{"time": "` + at + `", "nsecs": 5250000001, "cpu": 1, "pid": 4242, "tid": 4243, "comm": "cat", `
	want := head + `"event": "entry", "function": "openat", "symbol": "__x64_sys_openat", "address": "0xffffffff81234560", "probe": "tracepoint:syscalls:sys_enter_openat", "depth": 1, ` +
		`"args": {"dfd": -100, "filename": "/tmp/a \"b\"", "flags": 524288, "buf": "0xdead"}, "stack": ["do_sys_open+16", "0xffffffff82000000"]}` + "\n" +
		head + `"event": "exit", "function": "openat", "symbol": "__x64_sys_openat", "address": "0xffffffff81234560", "probe": "tracepoint:syscalls:sys_exit_openat", "depth": 1, "retval": -2, "duration_ns": 12345}` + "\n" +
		head + `"event": "hit", "function": "sched:sched_switch", "probe": "tracepoint:sched:sched_switch", "depth": 0}` + "\n"
	if b.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
}

// TestTraceLogSeconds checks the wall time as it crosses seconds, which
// the log formats once each.
func TestTraceLogSeconds(t *testing.T) {
	l, probes := testLog(t, false)
	for _, ns := range []uint64{5_999_999_999, 6_000_000_000, 6_000_000_007, 5_000_000_000} {
		args := append([]kinst.Value{}, logExit...)
		args[recNsecs] = kinst.ValueOf(ns)
		var b strings.Builder
		if err := l.printf(&b, probes["exit"], args); err != nil {
			t.Fatal(err)
		}
		want := l.clock.Wall(ns).Format("15:04:05.000000000") + " "
		if !strings.HasPrefix(b.String(), want) {
			t.Errorf("at %d ns: %q, want it to start %q", ns, b.String(), want)
		}
	}
}

// TestTraceLogAllocs: logging an event allocates nothing.
func TestTraceLogAllocs(t *testing.T) {
	for _, json := range []bool{false, true} {
		l, probes := testLog(t, json)
		for kind, args := range map[string][]kinst.Value{"entry": logEntry, "exit": logExit, "hit": logHit} {
			n := testing.AllocsPerRun(100, func() {
				if err := l.printf(io.Discard, probes[kind], args); err != nil {
					t.Fatal(err)
				}
			})
			if n != 0 {
				t.Errorf("json %v: a %s record allocates %v times", json, kind, n)
			}
		}
	}
}

// BenchmarkTraceLog is the cost of rendering one entry and one exit.
func BenchmarkTraceLog(b *testing.B) {
	for _, json := range []bool{false, true} {
		b.Run(fmt.Sprintf("json=%v", json), func(b *testing.B) {
			l, probes := testLog(b, json)
			b.ReportAllocs()
			for b.Loop() {
				l.printf(io.Discard, probes["entry"], logEntry)
				l.printf(io.Discard, probes["exit"], logExit)
			}
		})
	}
}

func TestTraceLogBadRecord(t *testing.T) {
	l, probes := testLog(t, false)
	err := l.printf(io.Discard, "kprobe:vfs_read", values(int64(1)))
	if err == nil || err.Error() != `trace: a record of probe "kprobe:vfs_read", which sends none` {
		t.Errorf("unknown format: %v", err)
	}
	err = l.printf(io.Discard, probes["exit"], logExit[:3])
	if err == nil || err.Error() != "trace: a record of 3 values, want 8" {
		t.Errorf("short record: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	testenv.Root(t)
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		t.Skipf("no kernel addresses: %v", err)
	}
	getppid, _ := ks.Address("__x64_sys_getppid")
	vfsRead, _ := ks.Address("vfs_read")
	// Test binaries have no symbol table; the workload's has.
	bin := testenv.Workload(t)
	callee := elfSymbol(t, bin, "main.callee")
	resolved := func(point string) *check.Target {
		targets, err := resolvePoint(&attach.Resolver{}, point)
		if err != nil {
			t.Fatal(err)
		}
		return targets[0]
	}
	target := func(provider, name string, a any) *check.Target {
		return &check.Target{Provider: provider, Name: name, Func: name, Attach: a}
	}
	tests := []struct {
		target *check.Target
		want   probeFunc
	}{
		{resolved("tracepoint:syscalls:sys_enter_getppid"), probeFunc{"tracepoint:syscalls:sys_enter_getppid", "getppid", "__x64_sys_getppid", getppid, "syscalls:sys_enter_getppid"}},
		{resolved("tracepoint:syscalls:sys_exit_getppid"), probeFunc{"tracepoint:syscalls:sys_exit_getppid", "getppid", "__x64_sys_getppid", getppid, "syscalls:sys_exit_getppid"}},
		{resolved("tracepoint:sched:sched_switch"), probeFunc{probe: "tracepoint:sched:sched_switch", name: "sched:sched_switch", tracepoint: "sched:sched_switch"}},
		{target("kprobe", "vfs_read", attach.Kprobe{Symbol: "vfs_read"}), probeFunc{probe: "kprobe:vfs_read", name: "vfs_read", addr: vfsRead}},
		{target("kretprobe", "vfs_read", attach.Kprobe{Symbol: "vfs_read", Return: true}), probeFunc{probe: "kretprobe:vfs_read", name: "vfs_read", addr: vfsRead}},
		{target("fentry", "vfs_read", attach.Tracing{Symbol: "vfs_read"}), probeFunc{probe: "fentry:vfs_read", name: "vfs_read", addr: vfsRead}},
		{target("kprobe", "vfs_read+16", attach.Kprobe{Symbol: "vfs_read", Offset: 16}), probeFunc{probe: "kprobe:vfs_read+16", name: "vfs_read+16", addr: vfsRead + 16}},
		{target("kprobe", "no_such_function_kinst", attach.Kprobe{Symbol: "no_such_function_kinst"}), probeFunc{probe: "kprobe:no_such_function_kinst", name: "no_such_function_kinst"}},
		{resolved("uprobe:" + bin + ":main.callee"), probeFunc{probe: "uprobe:" + bin + ":main.callee", name: "main.callee", addr: callee}},
		{resolved("uprobe:" + bin + ":main.callee+4"), probeFunc{probe: "uprobe:" + bin + ":main.callee+4", name: "main.callee+4", addr: callee + 4}},
		{resolved(fmt.Sprintf("uprobe:%s:%#x", bin, callee)), probeFunc{probe: fmt.Sprintf("uprobe:%s:%#x", bin, callee), name: fmt.Sprintf("%#x", callee), addr: callee}},
		{resolved("uretprobe:" + bin + ":main.callee"), probeFunc{probe: "uretprobe:" + bin + ":main.callee", name: "main.callee", addr: callee}},
		{target("uprobe", "/nonexistent:f", attach.Uprobe{Path: "/nonexistent", Symbol: "f"}), probeFunc{probe: "uprobe:/nonexistent:f", name: "f"}},
		{resolved("interval:ms:10"), probeFunc{probe: "interval:ms:10", name: "interval:ms:10"}},
	}
	var d describer
	for _, tt := range tests {
		if got := d.describe(tt.target); *got != tt.want {
			t.Errorf("describe(%s) = %+v, want %+v", tt.target.FullName(), *got, tt.want)
		}
	}
}

func elfSymbol(t *testing.T, path, name string) uint64 {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no symbol %s in %s", name, path)
	return 0
}
