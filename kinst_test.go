package kinst_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// TestRecords sends every kind of record and expects each as a Go value
// whose String is what bpftrace prints for it.
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
		text   string // the records' String methods, one after the other
	}{
		{`BEGIN { printf("%d %s %x\n", -5, "str", 255); exit() }`, false, []kinst.Record{
			&kinst.Printf{Format: "%d %s %x\n", Args: []any{int64(-5), "str", int64(255)}, Text: "-5 str ff\n"},
			&kinst.Exit{},
		}, "-5 str ff\n"},
		{`BEGIN { print((1, "a")); print("s"); print(7); exit() }`, false, []kinst.Record{
			&kinst.Print{Value: []any{int64(1), "a"}},
			&kinst.Print{Value: "s"},
			&kinst.Print{Value: int64(7)},
			&kinst.Exit{},
		}, "(1, a)\ns\n7\n"},
		{`BEGIN { @m["x"] = 3; @m["y"] = 1; print(@m, 1, 1); clear(@m); print(@m); exit() }`, false, []kinst.Record{
			&kinst.PrintMap{Map: &kinst.Map{Name: "@m", Entries: []kinst.Entry{{Key: []any{"y"}, Value: int64(1)}, {Key: []any{"x"}, Value: int64(3)}}}, Top: 1, Div: 1},
			&kinst.PrintMap{Map: &kinst.Map{Name: "@m", Entries: []kinst.Entry{}}},
			&kinst.Exit{},
		}, "@m[x]: 3\n"},
		{`BEGIN { cat("` + file + `"); exit() }`, false, []kinst.Record{
			&kinst.Cat{Path: file, Text: "contents\n"},
			&kinst.Exit{},
		}, "contents\n"},
		{`BEGIN { system("echo %d", 42); exit() }`, true, []kinst.Record{
			&kinst.System{Command: "echo 42", Output: "42\n"},
			&kinst.Exit{},
		}, "42\n"},
		{`BEGIN { time("%%"); exit() }`, false, []kinst.Record{
			&kinst.Time{Text: "%"},
			&kinst.Exit{},
		}, "%"},
		{`END { printf("end\n") }`, false, []kinst.Record{
			&kinst.Printf{Format: "end\n", Text: "end\n"},
		}, "end\n"},
	}
	for _, tt := range tests {
		prog, err := kinst.Compile("test.bt", []byte(tt.src), &kinst.Options{Unsafe: tt.unsafe})
		if err != nil {
			t.Fatal(err)
		}
		var got []kinst.Record
		var text strings.Builder
		run, err := prog.Start(context.Background(), func(r kinst.Record) {
			got = append(got, exported(r))
			text.WriteString(r.String())
		})
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
		if text.String() != tt.text {
			t.Errorf("%s: records print %q, want %q", tt.src, text.String(), tt.text)
		}
	}
}

// TestRecordStrings prints the records whose String the runtime does
// not make, as bpftrace prints them.
func TestRecordStrings(t *testing.T) {
	for _, tt := range []struct {
		r    kinst.Record
		want string
	}{
		{&kinst.Join{Elems: []string{"a", "b"}, Sep: ","}, "a,b\n"},
		{&kinst.Lost{Count: 3}, "Lost 3 events\n"},
		{&kinst.Exit{}, ""},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v prints %q, want %q", tt.r, got, tt.want)
		}
		if got := fmt.Sprint(tt.r); got != tt.want {
			t.Errorf("fmt.Sprint(%#v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// exported copies a record's exported fields, which tests compare.
func exported(r kinst.Record) kinst.Record {
	v := reflect.ValueOf(r).Elem()
	c := reflect.New(v.Type()).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			c.Field(i).Set(v.Field(i))
		}
	}
	return c.Addr().Interface().(kinst.Record)
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
		// 0.26.1 marks the expression.
		{"", "k.bt:1:24-34: WARNING: Bad address\nAdditional Info - helper: probe_read, retcode: -14\n" + src + "\n" + strings.Repeat(" ", 23) + "~~~~~~~~~~\n"},
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
// it, END included, and Wait returns the context's error.
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
	if err := run.Wait(); err != context.Canceled {
		t.Fatalf("Wait returned %v, want the context's error", err)
	}
	// A context done already stops the run before it loads.
	if _, err := prog.Start(ctx, nil); err != context.Canceled {
		t.Errorf("Start with a cancelled context returned %v, want its error", err)
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

// Options.Warn receives the warnings as values: the preprocessor's with
// no place in the source, the checker's located, each a warning by its
// severity rather than by a prefix of its message; Warnings gets none.
func TestWarn(t *testing.T) {
	var got []string
	var text strings.Builder
	src := "#warning careful\nBEGIN { @m[1] = 2; delete(@m[1], @m[2]); }"
	_, err := kinst.Compile("w.bt", []byte(src), &kinst.Options{Warnings: &text, Warn: func(err error) {
		var w *syntax.Error
		if !errors.As(err, &w) || w.Severity != syntax.SeverityWarning {
			t.Errorf("Warn got %v, want a syntax.Error with SeverityWarning", err)
			return
		}
		got = append(got, fmt.Sprintf("%v %q", w.File != nil, w.Msg))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`false "w.bt:1:2: #warning careful"`,
		`true "delete() of several elements is bpftrace 0.17's form: delete them one by one, as in delete(@name, key)"`,
	}
	if !slices.Equal(got, want) || text.Len() != 0 {
		t.Errorf("Warn got\n%s\nand Warnings %q; want\n%s\nand none", strings.Join(got, "\n"), text.String(), strings.Join(want, "\n"))
	}
}

// TestErrors checks the errors each stage gives and what they match.
func TestErrors(t *testing.T) {
	_, err := kinst.Compile("bad.bt", []byte("BEGIN { @x = ; }"), nil)
	var list syntax.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != "bad.bt:1:14: expected expression, found ';'" {
		t.Errorf("syntax error: got %v", err)
	}
	// A probe type kinst cannot attach is in the list, and matches.
	_, err = kinst.Compile("i.bt", []byte("iter:bpf_map_elem {}"), nil)
	if !errors.As(err, &list) || len(list) != 1 || !errors.Is(err, kinst.ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("unsupported probe: got %v, want one error matching ErrNotSupported and errors.ErrUnsupported", err)
	}
	// So is one the kernel forbids, where it does.
	if st := kernel.Probe(kernel.FeatKprobe); !st.Available {
		_, err = kinst.Compile("k.bt", []byte("kprobe:vfs_read {}"), nil)
		if !errors.Is(err, kinst.ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) || !strings.HasPrefix(err.Error(), "k.bt:1:1: "+st.Reason) {
			t.Errorf("forbidden probe: got %v, want the kernel's reason, matching ErrNotSupported", err)
		}
	}

	// What Options.Unsafe allows is refused without it, and the error
	// says so in the API's terms, not the command's.
	_, err = kinst.Compile("u.bt", []byte(`BEGIN { system("true") }`), nil)
	if !errors.As(err, &list) || len(list) != 1 || !errors.Is(err, kinst.ErrUnsafe) || list[0].Error() != "u.bt:1:9: system() changes the system it runs on" {
		t.Errorf("system() without Unsafe: got %v, want one error matching ErrUnsafe", err)
	}

	testenv.Root(t)
	// A probe naming nothing says so; how to list what exists is the
	// command's to add.
	_, err = kinst.Compile("t.bt", []byte("tracepoint:syscalls:nope {}"), nil)
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != "t.bt:1:1: no matches for tracepoint syscalls:nope" {
		t.Errorf("missing tracepoint: got %v", err)
	}
	// A refusal of the verifier is located at the loop it cannot bound.
	const loop = "BEGIN { $i = 0; while ($i < 100000000) { $i = $i + nsecs % 2; } exit(); }"
	prog, err := kinst.Compile("loop.bt", []byte(loop), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.Start(context.Background(), nil)
	var ve *kinst.VerifierError
	if !errors.As(err, &ve) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("verifier rejection: got %v, want a VerifierError wrapping EINVAL", err)
	}
	// What the verifier says of the loop depends on the kernel.
	const msg = "the kernel verifier rejected probe begin: "
	if ve.File != "loop.bt" || ve.Line != 1 || ve.Column != 17 || !strings.HasPrefix(ve.Msg, msg) || len(ve.Log) == 0 {
		t.Errorf("verifier rejection: got %s:%d:%d %q with %d lines of log, want loop.bt:1:17 %q… with the log", ve.File, ve.Line, ve.Column, ve.Msg, len(ve.Log), msg)
	}
	if got, want := ve.Detail(false), "loop.bt:1:17: "+ve.Msg+"\n"+loop+"\n"+strings.Repeat(" ", 16)+"^~~~~"; got != want {
		t.Errorf("verifier rejection's Detail:\n%s\nwant:\n%s", got, want)
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

// RunOptions.Mode runs the test probes, printing their results to
// Output, and Start ends with a FailedError naming those that failed; it
// needs Output, and the default release.
func TestTestMode(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("t.bt", []byte(`test:pass { } test:fail { printf("%d\n", 7); return 1; }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.StartWith(context.Background(), nil, &kinst.RunOptions{Mode: kinst.RunTests}); err == nil {
		t.Error("RunTests without Output started")
	}
	var out strings.Builder
	_, err = prog.StartWith(context.Background(), nil, &kinst.RunOptions{Output: &out, JSON: true, Mode: kinst.RunTests})
	var fe *kinst.FailedError
	if !errors.As(err, &fe) || !slices.Equal(fe.Names, []string{"fail"}) || err.Error() != "1 test failed: fail" {
		t.Errorf("got %v, want a FailedError naming fail", err)
	}
	got := regexp.MustCompile(`"duration": \d+`).ReplaceAllString(out.String(), `"duration": N`)
	want := `{"type": "test_result", "data": {"pass": {"duration": N, "passed": true, "output": ""}}}` + "\n" +
		`{"type": "test_result", "data": {"fail": {"duration": N, "passed": false, "output": "7\n"}}}` + "\n"
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	old, err := kinst.Compile("t.bt", []byte(`BEGIN { exit() }`), &kinst.Options{Compat: "0.17"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.StartWith(context.Background(), nil, &kinst.RunOptions{Output: &out, Mode: kinst.RunBenchmarks}); err == nil {
		t.Error("RunBenchmarks started in the 0.17 mode")
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

// recorder is an Observer that prints printf records its own way and
// keeps the maps to itself, counting its calls.
type recorder struct {
	printfs, records, attached int
	maps                       []*kinst.Map
}

func (o *recorder) Printf(w io.Writer, probe, format string, args []kinst.Value) (bool, error) {
	o.printfs++
	_, err := fmt.Fprintf(w, "%s %q %d %s\n", probe, format, args[0].Int(), args[1].Text())
	return true, err
}

func (o *recorder) Record(w io.Writer, r kinst.Record) (bool, error) {
	o.records++
	return false, nil
}

func (o *recorder) Maps(w io.Writer, maps []*kinst.Map) ([]*kinst.Map, error) {
	o.maps = maps
	return maps[1:], nil
}

func (o *recorder) Attached(r *kinst.Run) { o.attached++ }

// An Observer sees the printf records as values and renders them, is
// called once the probes are attached, and has the maps it returns
// printed, as bpftrace prints them; Run.Map still reads the maps.
func TestObserver(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("x.bt", []byte(`BEGIN { @a = 7; @b = 8; printf("%d %s\n", -3, "x"); print(@a); } interval:ms:10 { exit(); }`), &kinst.Options{Compat: "0.17"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	o := &recorder{}
	run, err := prog.StartWith(context.Background(), nil, &kinst.RunOptions{Output: &out, Quiet: true, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	want := "BEGIN \"%d %s\\n\" -3 x\n@a: 7\n\n\n@b: 8\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if o.printfs != 1 || o.records != 1 || o.attached != 1 || len(o.maps) != 2 || o.maps[0].Name != "@a" {
		t.Errorf("observer called %d, %d, %d times, maps %v", o.printfs, o.records, o.attached, o.maps)
	}
}

// TestBadOptions gives Compile options out of range and malformed
// environment settings: each is an error naming it, matching ErrOption
// or ErrEnvironment, before anything is compiled.
func TestBadOptions(t *testing.T) {
	tests := []struct {
		opts kinst.Options
		env  []string
		kind error
		want string
	}{
		{kinst.Options{StrLen: 100000}, nil, kinst.ErrOption, "kinst: Options.StrLen 100000 is out of range 0..65536"},
		{kinst.Options{StrLen: -1}, nil, kinst.ErrOption, "kinst: Options.StrLen -1 is out of range 0..65536"},
		{kinst.Options{MapEntries: -5}, nil, kinst.ErrOption, "kinst: Options.MapEntries -5 is out of range 0..4294967295"},
		{kinst.Options{MapEntries: 1 << 32}, nil, kinst.ErrOption, "kinst: Options.MapEntries 4294967296 is out of range 0..4294967295"},
		{kinst.Options{Pid: -3}, nil, kinst.ErrOption, "kinst: Options.Pid -3 is out of range 0..4194304"},
		{kinst.Options{HelperChecks: 3}, nil, kinst.ErrOption, "kinst: Options.HelperChecks 3 is out of range 0..2"},
		{kinst.Options{BufferSize: 1000}, nil, kinst.ErrOption, "kinst: Options.BufferSize 1000 is not a power of two of at least 4096"},
		{kinst.Options{BufferSize: -4096}, nil, kinst.ErrOption, "kinst: Options.BufferSize -4096 is not a power of two of at least 4096"},
		{kinst.Options{Mechanism: "uprobe"}, nil, kinst.ErrOption, `kinst: Options.Mechanism: unknown attach mechanism "uprobe": use kprobe, kprobe.multi or fentry`},
		{kinst.Options{DebugStages: "ast,llvm"}, nil, kinst.ErrOption, `kinst: Options.DebugStages "ast,llvm": use ast, types, bpf, maps or all, or several separated by commas`},
		{kinst.Options{Command: []string{""}}, nil, kinst.ErrOption, "kinst: Options.Command names no program"},
		// Options are checked before the environment is read.
		{kinst.Options{Pid: -3, Environment: true}, []string{"BPFTRACE_STRLEN=x"}, kinst.ErrOption, "kinst: Options.Pid -3 is out of range 0..4194304"},
		{kinst.Options{Environment: true}, []string{"BPFTRACE_STRLEN=100000"}, kinst.ErrEnvironment, `BPFTRACE_STRLEN="100000" is more than 65536`},
		{kinst.Options{Environment: true}, []string{"KINST_STRLEN=0"}, kinst.ErrEnvironment, `KINST_STRLEN="0" is not a positive integer`},
		{kinst.Options{Environment: true}, []string{"BPFTRACE_MAP_KEYS_MAX=4294967296"}, kinst.ErrEnvironment, `BPFTRACE_MAP_KEYS_MAX="4294967296" is more than 4294967295`},
		{kinst.Options{Environment: true}, []string{"KINST_BUFFER_KB=3"}, kinst.ErrEnvironment, "KINST_BUFFER_KB must be a power of two of at least 4"},
		{kinst.Options{Environment: true}, []string{"BPFTRACE_CAT_BYTES_MAX=-1"}, kinst.ErrEnvironment, `BPFTRACE_CAT_BYTES_MAX="-1" is not a number of bytes`},
		{kinst.Options{Environment: true}, []string{"BPFTRACE_UNSTABLE_TSERIES=on"}, kinst.ErrEnvironment, `BPFTRACE_UNSTABLE_TSERIES="on": want enable, warn or error`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			_, err := kinst.Compile("o.bt", []byte("BEGIN { exit() }"), &tt.opts)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.kind) {
				t.Errorf("got %v, want %s matching %v", err, tt.want, tt.kind)
			}
		})
	}
}

// TestZeroValues uses a Program and a Run that Compile and Start did
// not make: each method returns an error, or nothing, rather than
// panicking or blocking.
func TestZeroValues(t *testing.T) {
	const noProgram, noRun = "kinst: the Program was not made by Compile", "kinst: the Run was not made by Start"
	p := &kinst.Program{}
	_, err := p.Start(context.Background(), nil)
	errs := []struct {
		what string
		err  error
		want string
	}{
		{"Start", err, noProgram},
		{"Load", p.Load(), noProgram},
		{"WriteELF", p.WriteELF(io.Discard), noProgram},
	}
	r := &kinst.Run{}
	_, err = r.Map("@")
	errs = append(errs, []struct {
		what string
		err  error
		want string
	}{
		{"Wait", r.Wait(), noRun},
		{"Stop", r.Stop(), noRun},
		{"StopContext", r.StopContext(context.Background()), noRun},
		{"Map", err, noRun},
	}...)
	for _, e := range errs {
		if e.err == nil || e.err.Error() != e.want {
			t.Errorf("%s: got %v, want %s", e.what, e.err, e.want)
		}
	}
	if p.Probes() != nil || p.Maps() != nil {
		t.Errorf("Probes() = %v, Maps() = %v; want none", p.Probes(), p.Maps())
	}
	// Nil pointers are zero values too.
	if _, err := (*kinst.Program)(nil).Start(context.Background(), nil); err == nil || err.Error() != noProgram {
		t.Errorf("Start of a nil Program: got %v, want %s", err, noProgram)
	}
	if err := (*kinst.Run)(nil).Wait(); err == nil || err.Error() != noRun {
		t.Errorf("Wait of a nil Run: got %v, want %s", err, noRun)
	}
}

// waitFor fails t unless f returns within 10s, and returns what it
// returned.
func waitFor(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return in 10s", what)
		return nil
	}
}

// TestStopInHandler stops the run from its handler, with the probes
// attached: Stop returns at once, Wait from the handler is an error, and
// the run ends as usual, END included.
func TestStopInHandler(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("stop.bt", []byte(`interval:ms:5 { printf("tick\n") } END { @end = 1 }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := make(chan *kinst.Run, 1)
	var stopErr, waitErr error
	handled := 0
	run, err := prog.Start(context.Background(), func(kinst.Record) {
		handled++
		if handled == 1 {
			run := <-runs
			waitErr = run.Wait()
			stopErr = run.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	runs <- run
	if err := waitFor(t, "Wait", run.Wait); err != nil {
		t.Fatal(err)
	}
	if stopErr != nil {
		t.Errorf("Stop in the handler returned %v", stopErr)
	}
	if want := "kinst: Wait called from the Handler, which the run waits for"; waitErr == nil || waitErr.Error() != want {
		t.Errorf("Wait in the handler returned %v, want %s", waitErr, want)
	}
	if m, err := run.Map("@end"); err != nil || len(m.Entries) != 1 {
		t.Errorf("@end = %v, %v; want END to have run", m, err)
	}
}

// TestStopContext stops a run whose handler lags behind its records,
// or bounds the end of one whose context was cancelled: the handler gets
// records until StopContext's context is done, and the error counts the
// rest, so that every tick the program counted is accounted for.
func TestStopContext(t *testing.T) {
	testenv.Root(t)
	// The program sends 100 records, which the handler would take 20s
	// to handle, and then nothing: each is handled or dropped.
	const sent = 100
	prog, err := kinst.Compile("slow.bt", []byte(`interval:ms:5 /@n < 100/ { @n++; printf("tick\n") }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cancelFirst := range []bool{false, true} {
		var handled, lost uint64
		runCtx, cancelRun := context.WithCancel(context.Background())
		defer cancelRun()
		run, err := prog.Start(runCtx, func(r kinst.Record) {
			switch r := r.(type) {
			case *kinst.Printf:
				handled++
				time.Sleep(200 * time.Millisecond)
			case *kinst.Lost:
				lost += r.Count
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if m, err := run.Map("@n"); err == nil && len(m.Entries) == 1 && m.Entries[0].Value == int64(sent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("interval:ms:5 did not fire %d times in 10s", sent)
			}
		}
		if cancelFirst {
			cancelRun()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = waitFor(t, "StopContext", func() error { return run.StopContext(ctx) })
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("StopContext took %v, want about 300ms", d)
		}
		var de *kinst.DropError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || de.Count == 0 {
			t.Fatalf("StopContext returned %v, want a DropError matching DeadlineExceeded", err)
		}
		want := fmt.Sprintf("kinst: %d records dropped, not handed to the handler: context deadline exceeded", de.Count)
		if cancelFirst {
			// Start's context ended the run, and Wait says so too.
			want = "context canceled\n" + want
		}
		if err.Error() != want || errors.Is(err, context.Canceled) != cancelFirst {
			t.Errorf("error %q, want %q", err, want)
		}
		if err2 := run.Wait(); err2 != err {
			t.Errorf("Wait returned %v, want StopContext's %v", err2, err)
		}
		if handled+lost+de.Count != sent {
			t.Errorf("%d handled, %d lost and %d dropped, want the %d sent", handled, lost, de.Count, sent)
		}
	}
}

// TestTimeSeries reads a tseries map through the API: per key, the
// interval and the intervals with values, started on a multiple of the
// interval.
func TestTimeSeries(t *testing.T) {
	testenv.Root(t)
	prog, err := kinst.Compile("t.bt", []byte(`BEGIN { @t["a"] = tseries(5, 10s, 3, "min"); @t["a"] = tseries(6, 10s, 3, "min"); @t["b"] = tseries(-1, 10s, 3, "min"); @t["b"] = tseries(2, 10s, 3, "min"); exit() }`), nil)
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
	m, err := run.Map("@t")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(m.Entries), m.Entries)
	}
	for i, want := range []struct {
		key   string
		value int64
	}{{"a", 5}, {"b", -1}} {
		e := m.Entries[i]
		ts, ok := e.Value.(kinst.TimeSeries)
		if !ok || len(e.Key) != 1 || e.Key[0] != want.key || ts.Interval != 10*time.Second || len(ts.Points) != 1 {
			t.Fatalf("entry %d: %+v", i, e)
		}
		p := ts.Points[0]
		if p.Value != want.value || p.Start.UnixNano()%int64(10*time.Second) != 0 || time.Since(p.Start) > time.Minute {
			t.Errorf("@t[%s]: %+v, want the value %d in an interval of 10s begun lately", want.key, p, want.value)
		}
	}
}
