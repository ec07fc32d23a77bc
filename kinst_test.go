package kinst_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/internal/runhook"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/runtime"
	"kinst.dev/kinst/syntax"
)

// TestRecords sends every kind of record and expects each as a Go value.
func TestRecords(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	file := dir + "/f"
	if err := os.WriteFile(file, []byte("contents\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src    string
		unsafe bool
		want   []kinst.Record
	}{
		{`BEGIN { printf("%d %s %x\n", -5, "str", 255); exit() }`, false, []kinst.Record{
			&kinst.Printf{Format: "%d %s %x\n", Args: []any{int64(-5), "str", int64(255)}, Text: "-5 str ff\n"},
			&kinst.Exit{},
		}},
		{`BEGIN { print((1, "a")); print("s"); print(7); exit() }`, false, []kinst.Record{
			&kinst.Print{Value: []any{int64(1), "a"}},
			&kinst.Print{Value: "s"},
			&kinst.Print{Value: int64(7)},
			&kinst.Exit{},
		}},
		{`BEGIN { @m["x"] = 3; @m["y"] = 1; print(@m, 1, 1); clear(@m); print(@m); exit() }`, false, []kinst.Record{
			&kinst.PrintMap{Map: &kinst.Map{Name: "@m", Entries: []kinst.Entry{{Key: []any{"y"}, Value: int64(1)}, {Key: []any{"x"}, Value: int64(3)}}}, Top: 1, Div: 1},
			&kinst.PrintMap{Map: &kinst.Map{Name: "@m", Entries: []kinst.Entry{}}},
			&kinst.Exit{},
		}},
		{`BEGIN { cat("` + file + `"); exit() }`, false, []kinst.Record{
			&kinst.Cat{Path: file, Text: "contents\n"},
			&kinst.Exit{},
		}},
		{`BEGIN { system("echo %d", 42); exit() }`, true, []kinst.Record{
			&kinst.System{Command: "echo 42", Output: "42\n"},
			&kinst.Exit{},
		}},
		{`BEGIN { time("%%"); exit() }`, false, []kinst.Record{
			&kinst.Time{Text: "%"},
			&kinst.Exit{},
		}},
		{`END { printf("end\n") }`, false, []kinst.Record{
			&kinst.Printf{Format: "end\n", Text: "end\n"},
		}},
	}
	for _, tt := range tests {
		prog, err := kinst.Compile("test.bt", []byte(tt.src), &kinst.Options{Unsafe: tt.unsafe})
		if err != nil {
			t.Fatal(err)
		}
		var got []kinst.Record
		run, err := prog.Start(context.Background(), func(r kinst.Record) { got = append(got, r) })
		if err != nil {
			t.Fatal(err)
		}
		// Stopping a run that exit() ended does nothing more.
		if err := run.Stop(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.src, show(got), show(tt.want))
		}
	}
}

// TestHelperChecks reads through a bad pointer with HelperChecks: the
// failure is a warning with its source line, in the words of the release
// the program follows, and the records go on.
func TestHelperChecks(t *testing.T) {
	testenv.Root(t)
	src := `BEGIN { printf("%d\n", *(int64*)8); exit() }`
	caret := src + "\n" + strings.Repeat(" ", 23) + "^\n"
	for _, tc := range []struct{ compat, want string }{
		{"0.17", "k.bt:1:24: WARNING: Failed to probe_read: Bad address (-14)\n" + caret},
		{"", "k.bt:1:24: WARNING: Bad address\nAdditional Info - helper: probe_read, retcode: -14\n" + caret},
	} {
		var warnings strings.Builder
		prog, err := kinst.Compile("k.bt", []byte(src), &kinst.Options{HelperChecks: 2, Warnings: &warnings, Compat: tc.compat})
		if err != nil {
			t.Fatal(err)
		}
		var got []kinst.Record
		run, err := prog.Start(context.Background(), func(r kinst.Record) { got = append(got, r) })
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Wait(); err != nil {
			t.Fatal(err)
		}
		if warnings.String() != tc.want {
			t.Errorf("%q: warnings:\n%s\nwant:\n%s", tc.compat, warnings.String(), tc.want)
		}
		if len(got) != 2 || got[0].(*kinst.Printf).Text != "0\n" {
			t.Errorf("%q: records: %s", tc.compat, show(got))
		}
	}
}

// TestLost overfills a small ring buffer from BEGIN: what did not fit
// is reported by a Lost record, and every printf is accounted for.
func TestLost(t *testing.T) {
	testenv.Root(t)
	src := `BEGIN { $i = 0; while ($i < 1000) { printf("%d\n", $i); $i++ } }`
	prog, err := kinst.Compile("lost.bt", []byte(src), &kinst.Options{BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var printed, lost uint64
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		switch r := r.(type) {
		case *kinst.Printf:
			printed++
		case *kinst.Lost:
			lost += r.Count
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Stop(); err != nil {
		t.Fatal(err)
	}
	if lost == 0 || printed+lost != 1000 {
		t.Errorf("%d printed and %d lost, want some lost and 1000 in all", printed, lost)
	}
}

func show(recs []kinst.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%#v ", r)
	}
	return b.String()
}

// TestContextEndsRun cancels Start's context: the run ends as Stop ends
// it, END included.
func TestContextEndsRun(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("test.bt", []byte(`interval:ms:10 { @ticks = count() } END { @end = 1 }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run, err := prog.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for two ticks rather than a fixed time: an emulated guest
	// may fire fewer than two in 100 ms of wall time.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, err := run.Map("@ticks"); err == nil && len(m.Entries) == 1 && m.Entries[0].Value.(uint64) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("interval:ms:10 did not tick twice in 10s")
		}
	}
	cancel()
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	m, err := run.Map("@end")
	if err != nil || !reflect.DeepEqual(m.Entries, []kinst.Entry{{Value: int64(1)}}) {
		t.Errorf("@end = %#v, %v; want 1", m, err)
	}
	ticks, err := run.Map("@ticks")
	if err != nil || len(ticks.Entries) != 1 || ticks.Entries[0].Value.(uint64) < 2 {
		t.Errorf("@ticks = %#v, %v; want at least the 2 ticks seen before the cancel", ticks, err)
	}
}

// TestErrors checks the errors each stage gives and what they match.
func TestErrors(t *testing.T) {
	_, err := kinst.Compile("bad.bt", []byte("BEGIN { @x = ; }"), nil)
	var list syntax.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != "bad.bt:1:14: expected expression, found ';'" {
		t.Errorf("syntax error: got %v", err)
	}
	_, err = kinst.Compile("x.bt", []byte("BEGIN {}"), &kinst.Options{Mechanism: "uprobe"})
	if err == nil || err.Error() != `kinst: unknown attach mechanism "uprobe": use kprobe, kprobe.multi or fentry` {
		t.Errorf("bad mechanism: got %v", err)
	}
	_, err = kinst.Compile("x.bt", []byte("BEGIN {}"), &kinst.Options{BufferSize: 1000})
	if err == nil || err.Error() != "kinst: buffer size 1000 is not a power of two of at least 4096" {
		t.Errorf("bad buffer size: got %v", err)
	}

	// A probe type kinst cannot attach is in the list, and matches.
	_, err = kinst.Compile("i.bt", []byte("iter:bpf_map_elem {}"), nil)
	if !errors.As(err, &list) || len(list) != 1 || !errors.Is(err, kinst.ErrNotSupported) {
		t.Errorf("unsupported probe: got %v, want one error matching ErrNotSupported", err)
	}
	// So is one the kernel forbids, where it does.
	if st := kernel.Probe(kernel.FeatKprobe); !st.Available {
		_, err = kinst.Compile("k.bt", []byte("kprobe:vfs_read {}"), nil)
		if !errors.Is(err, kinst.ErrNotSupported) || !strings.HasPrefix(err.Error(), "k.bt:1:1: "+st.Reason) {
			t.Errorf("forbidden probe: got %v, want the kernel's reason, matching ErrNotSupported", err)
		}
	}

	testenv.Root(t)
	prog, err := kinst.Compile("loop.bt", []byte("BEGIN { $i = 0; while ($i < 100000000) { $i = $i + nsecs % 2; } exit(); }"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.Start(context.Background(), nil)
	var ve *runtime.VerifierError
	if !errors.As(err, &ve) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("verifier rejection: got %v, want a VerifierError wrapping EINVAL", err)
	}
}

// Signals handed over on RunOptions.Signals act as on the kinst command:
// SIGUSR1 prints the maps and the run goes on (in the 0.17 mode), SIGINT
// stops it with END run and the maps printed; none reaches the process
// itself.
func TestSignals(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("sig.bt", []byte(`BEGIN { @a = 1; } interval:s:100 { } END { printf("end\n"); }`), &kinst.Options{Compat: "0.17"})
	if err != nil {
		t.Fatal(err)
	}
	var out testenv.Buffer
	sigs := make(chan os.Signal, 1)
	run, err := prog.StartWith(context.Background(), nil, &kinst.RunOptions{Output: &out, Signals: sigs})
	if err != nil {
		t.Fatal(err)
	}
	const attached, maps = "Attaching 3 probes...\n", "@a: 1\n"
	sigs <- syscall.SIGUSR1
	for deadline := time.Now().Add(10 * time.Second); out.String() != attached+maps; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGUSR1 printed %q, want %q", out.String(), attached+maps)
		}
	}
	sigs <- syscall.SIGINT
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), attached+maps+"end\n\n\n"+maps; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// A handler and RunOptions.Output exclude each other: records go to one.
func TestOutputAndHandler(t *testing.T) {
	prog, err := kinst.Compile("x.bt", []byte(`BEGIN { exit() }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.StartWith(context.Background(), func(kinst.Record) {}, &kinst.RunOptions{Output: os.Stdout})
	if want := "kinst: records go to RunOptions.Output: no Handler is called then"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// Options.Environment reads bpftrace's settings; a malformed one is an
// error matching ErrEnvironment with the setting's own words, and fields
// set in Options win over the environment.
func TestEnvironment(t *testing.T) {
	testenv.Root(t)
	t.Setenv("BPFTRACE_STRLEN", "x")
	_, err := kinst.Compile("x.bt", []byte(`BEGIN { exit() }`), &kinst.Options{Environment: true})
	if want := `BPFTRACE_STRLEN="x" is not a positive integer`; !errors.Is(err, kinst.ErrEnvironment) || err.Error() != want {
		t.Errorf("got %v, want %s matching ErrEnvironment", err, want)
	}
	t.Setenv("BPFTRACE_STRLEN", "8")
	t.Setenv("BPFTRACE_MAP_KEYS_MAX", "2")
	prog, err := kinst.Compile("x.bt", []byte(`BEGIN { @s = str("abcdefghijkl"); @m[1] = 1; @m[2] = 2; @m[3] = 3; exit() }`),
		&kinst.Options{Environment: true, MapEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	run, err := prog.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"@s": 1, "@m": 3} {
		m, err := run.Map(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Entries) != want {
			t.Errorf("%s has %d entries, want %d", name, len(m.Entries), want)
		}
	}
	s, _ := run.Map("@s")
	if got := s.Entries[0].Value; got != "abcdefg" {
		t.Errorf("@s = %q, want the 7 bytes BPFTRACE_STRLEN=8 leaves", got)
	}
}

// A runhook function that sets the runtime's Maps and
// Attached hooks, as the Prometheus exporter does, takes nothing from
// Run.Map or from Start's wait for the probes.
func TestRuntimeHooksChain(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("x.bt", []byte(`BEGIN { @a = 7; } interval:s:100 { }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var readers, attached int
	ro := &kinst.RunOptions{Output: io.Discard}
	runhook.Set(ro, func(_ *codegen.Output, o *runtime.Options) {
		o.Maps = func(*runtime.MapReader) { readers++ }
		o.Attached = func() { attached++ }
	})
	run, err := prog.StartWith(context.Background(), nil, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop()
	m, err := run.Map("@a")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 1 || m.Entries[0].Value != int64(7) || readers != 1 || attached != 1 {
		t.Errorf("@a = %+v, hooks called %d and %d times, want 7 and once each", m.Entries, readers, attached)
	}
}
