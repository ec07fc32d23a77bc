package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The common header every tracepoint record starts with on x86-64.
var commonFields = []Field{
	{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
	{Name: "common_flags", Type: "unsigned char", Offset: 2, Size: 1},
	{Name: "common_preempt_count", Type: "unsigned char", Offset: 3, Size: 1},
	{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true},
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		file, category string
		want           Format
	}{
		{"sched_switch.format", "sched", Format{Category: "sched", Name: "sched_switch", ID: 372, Common: commonFields, Fields: []Field{
			{Name: "prev_comm", Type: "char", Offset: 8, Size: 16, Array: true, ArrayLen: 16},
			{Name: "prev_pid", Type: "pid_t", Offset: 24, Size: 4, Signed: true},
			{Name: "prev_prio", Type: "int", Offset: 28, Size: 4, Signed: true},
			{Name: "prev_state", Type: "long", Offset: 32, Size: 8, Signed: true},
			{Name: "next_comm", Type: "char", Offset: 40, Size: 16, Array: true, ArrayLen: 16},
			{Name: "next_pid", Type: "pid_t", Offset: 56, Size: 4, Signed: true},
			{Name: "next_prio", Type: "int", Offset: 60, Size: 4, Signed: true},
		}}},
		{"sched_process_exec.format", "sched", Format{Category: "sched", Name: "sched_process_exec", ID: 365, Common: commonFields, Fields: []Field{
			{Name: "filename", Type: "__data_loc char[]", Offset: 8, Size: 4, DataLoc: true},
			{Name: "pid", Type: "pid_t", Offset: 12, Size: 4, Signed: true},
			{Name: "old_pid", Type: "pid_t", Offset: 16, Size: 4, Signed: true},
		}}},
		{"sys_enter_execve.format", "syscalls", Format{Category: "syscalls", Name: "sys_enter_execve", ID: 862, Fields: []Field{
			{Name: "__syscall_nr", Type: "int", Offset: 8, Size: 4, Signed: true, AddrSpace: UserSpace},
			{Name: "filename", Type: "const char *", Offset: 16, Size: 8, AddrSpace: UserSpace},
			{Name: "argv", Type: "const char *const *", Offset: 24, Size: 8, AddrSpace: UserSpace},
			{Name: "envp", Type: "const char *const *", Offset: 32, Size: 8, AddrSpace: UserSpace},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseFormat(tt.category, readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if tt.category == "syscalls" {
				// Only the syscall fields are under test here; the
				// common header is the same as above but user-space.
				got.Common = nil
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ParseFormat:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseFormatEdgeCases(t *testing.T) {
	text := "name: print\nID: 5\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" +
		"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n" +
		"\tfield:__u8 saddr[sizeof(struct sockaddr_in6)];\toffset:16;\tsize:28;\tsigned:0;\n" +
		"\tfield:int old;\toffset:44;\tsize:4;\n" + // kernels before 2.6.32 had no signed item
		"\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
	got, err := ParseFormat("ftrace", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: "ip", Type: "unsigned long", Offset: 8, Size: 8},
		{Name: "buf", Type: "char", Offset: 16, Size: 0, Array: true},
		{Name: "saddr", Type: "__u8", Offset: 16, Size: 28, Array: true, ArrayLen: 28},
		{Name: "old", Type: "int", Offset: 44, Size: 4},
	}
	if !reflect.DeepEqual(got.Fields, want) {
		t.Errorf("fields:\n got %+v\nwant %+v", got.Fields, want)
	}
	if got.ID != 5 || got.Name != "print" || len(got.Common) != 1 {
		t.Errorf("got ID %d name %q common %v", got.ID, got.Name, got.Common)
	}
	decls := []string{"unsigned long ip", "char buf[]", "__u8 saddr[28]", "int old"}
	for i, f := range got.Fields {
		if f.Decl() != decls[i] {
			t.Errorf("Decl() = %q, want %q", f.Decl(), decls[i])
		}
	}
}

func TestParseFormatErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"ID: 1\n", "format: no name line"},
		{"name: x\nID: abc\n", `format line 2: bad ID "ID: abc"`},
		{"name: x\n\tfield:int;\toffset:0;\tsize:4;\n", `format line 2: field "field:int;\toffset:0;\tsize:4;": declaration "int" has no type`},
		{"name: x\n\tfield:int a;\toffset:zero;\tsize:4;\n", `format line 2: field "field:int a;\toffset:zero;\tsize:4;": bad number "zero"`},
		{"name: x\n\tfield:int a;\tsize:4;\n", `format line 2: field "field:int a;\tsize:4;": offset or size missing`},
		{"name: x\n\tfield:int a];\toffset:0;\tsize:4;\n", `format line 2: field "field:int a];\toffset:0;\tsize:4;": bad declaration "int a]"`},
		{"name: x\n\tfield:int a[;\toffset:0;\tsize:4;\n", `format line 2: field "field:int a[;\toffset:0;\tsize:4;": bad declaration "int a["`},
		{"name: x\n\tfield:int a[2] b[3];\toffset:0;\tsize:4;\n", `format line 2: field "field:int a[2] b[3];\toffset:0;\tsize:4;": bad declaration "int a[2] b[3]"`},
		{"name: x\n\tfield:int a;\toffset\tsize:4;\n", `format line 2: field "field:int a;\toffset\tsize:4;": offset or size missing`},
		{"name: x\n\tfield:int a;\toffset:0\tsize:4;\n", `format line 2: field "field:int a;\toffset:0\tsize:4;": bad number "0\tsize:4"`},
		{"name: x\n\tfield:int a[sizeof(b[1])];\toffset:0;\tsize:8;\n", ""}, // brackets inside a dimension are fine
	}
	for _, tt := range tests {
		_, err := ParseFormat("c", []byte(tt.text))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ParseFormat(%q): unexpected error %v", tt.text, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("ParseFormat(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
}

func TestFieldPointerAndDecl(t *testing.T) {
	tests := []struct {
		f       Field
		pointer bool
		decl    string
	}{
		{Field{Name: "filename", Type: "const char *"}, true, "const char * filename"},
		{Field{Name: "argv", Type: "const char *const *"}, true, "const char *const * argv"},
		{Field{Name: "comm", Type: "char", Array: true, ArrayLen: 16}, false, "char comm[16]"},
		{Field{Name: "name", Type: "__data_loc char[]", DataLoc: true}, false, "__data_loc char[] name"},
		{Field{Name: "pid", Type: "pid_t"}, false, "pid_t pid"},
	}
	for _, tt := range tests {
		if got := tt.f.Pointer(); got != tt.pointer {
			t.Errorf("%s: Pointer() = %v, want %v", tt.f.Name, got, tt.pointer)
		}
		if got := tt.f.Decl(); got != tt.decl {
			t.Errorf("Decl() = %q, want %q", got, tt.decl)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		"/sys/kernel/tracing": "/sys/kernel/tracing",
		`/mnt/my\040dir`:      "/mnt/my dir",
		`/a\134b`:             `/a\b`,
		`/trailing\04`:        `/trailing\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadFormatOpenat(t *testing.T) {
	testenv.Root(t)
	f, err := ReadFormat("syscalls", "sys_enter_openat")
	if err != nil {
		t.Fatal(err)
	}
	// The layout of the syscall tracepoints on x86-64: the syscall number,
	// then every argument in an 8-byte slot.
	want := []Field{
		{Name: "__syscall_nr", Type: "int", Offset: 8, Size: 4, Signed: true, AddrSpace: UserSpace},
		{Name: "dfd", Type: "int", Offset: 16, Size: 8, AddrSpace: UserSpace},
		{Name: "filename", Type: "const char *", Offset: 24, Size: 8, AddrSpace: UserSpace},
		{Name: "flags", Type: "int", Offset: 32, Size: 8, AddrSpace: UserSpace},
		{Name: "mode", Type: "umode_t", Offset: 40, Size: 8, AddrSpace: UserSpace},
	}
	if !reflect.DeepEqual(f.Fields, want) {
		t.Errorf("fields:\n got %+v\nwant %+v", f.Fields, want)
	}
	if f.Category != "syscalls" || f.Name != "sys_enter_openat" {
		t.Errorf("got %s:%s", f.Category, f.Name)
	}
	// The ID must be the one tracefs's id file gives, which is what
	// perf_event_open takes.
	dir, err := TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	id, err := os.ReadFile(filepath.Join(dir, "events/syscalls/sys_enter_openat/id"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := atoi(string(id)); uint32(n) != f.ID {
		t.Errorf("ID = %d, id file says %q", f.ID, strings.TrimSpace(string(id)))
	}
	if fl, ok := f.Field("filename"); !ok || !fl.Pointer() || fl.AddrSpace != UserSpace {
		t.Errorf(`Field("filename") = %+v, %v; want a user-space pointer`, fl, ok)
	}
	if _, ok := f.Field("common_pid"); ok {
		t.Error(`Field("common_pid") found a common field`)
	}
}

func TestReadFormatKernelPointers(t *testing.T) {
	testenv.Root(t)
	f, err := ReadFormat("sched", "sched_process_exec")
	if err != nil {
		t.Fatal(err)
	}
	fl, ok := f.Field("filename")
	if !ok || !fl.DataLoc || fl.AddrSpace != KernelSpace {
		t.Errorf(`Field("filename") = %+v, %v; want a kernel __data_loc field`, fl, ok)
	}
}

func TestReadFormatMissing(t *testing.T) {
	testenv.Root(t)
	for _, tp := range [][2]string{{"syscalls", "sys_enter_nosuch"}, {"nosuch", "x"}, {"..", "syscalls"}, {"syscalls", ""}, {"a/b", "c"}} {
		_, err := ReadFormat(tp[0], tp[1])
		if !errors.Is(err, ErrNoTracepoint) {
			t.Errorf("ReadFormat(%q, %q) = %v, want ErrNoTracepoint", tp[0], tp[1], err)
		}
	}
	_, err := ReadFormat("syscalls", "sys_enter_nosuch")
	if want := "tracepoint syscalls:sys_enter_nosuch: tracepoint not found"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestTracepointsGlob(t *testing.T) {
	testenv.Root(t)
	got, err := Tracepoints("syscalls", "sys_enter_open*")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range got {
		if tp.Category != "syscalls" {
			t.Errorf("category %q in %v", tp.Category, tp)
		}
		names = append(names, tp.Name)
	}
	// Independent evidence: the shell-style glob of the event directories.
	dir, err := TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "events/syscalls/sys_enter_open*"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range paths {
		want = append(want, filepath.Base(p))
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("Tracepoints(syscalls, sys_enter_open*) = %v, want %v", names, want)
	}
	// The set on the project's 6.18 host kernel, as bpftrace -l lists it.
	if v, err := KernelVersion(); err == nil && v.Major == 6 && v.Minor == 18 {
		host := []string{"sys_enter_open", "sys_enter_open_by_handle_at", "sys_enter_open_tree",
			"sys_enter_open_tree_attr", "sys_enter_openat", "sys_enter_openat2"}
		if !slices.Equal(names, host) {
			t.Errorf("on 6.18: got %v, want %v", names, host)
		}
	}
}

func TestTracepointsAll(t *testing.T) {
	testenv.Root(t)
	all, err := Tracepoints("*", "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 100 {
		t.Fatalf("only %d tracepoints", len(all))
	}
	if !slices.IsSortedFunc(all, func(a, b Tracepoint) int { return strings.Compare(a.String(), b.String()) }) {
		t.Error("tracepoints are not sorted")
	}
	sched := 0
	for _, tp := range all {
		if tp.Category == "ftrace" {
			t.Errorf("listed ftrace's internal event %v", tp)
		}
		if tp.Category == "sched" {
			sched++
		}
	}
	fromGlob, err := Tracepoints("sch?d", "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(fromGlob) != sched || sched == 0 {
		t.Errorf("Tracepoints(sch?d, *) gave %d, the full list has %d in sched", len(fromGlob), sched)
	}
	none, err := Tracepoints("nosuch*", "*")
	if err != nil || len(none) != 0 {
		t.Errorf("Tracepoints(nosuch*, *) = %v, %v; want empty", none, err)
	}
}

func TestWalkEventsMatchesAvailableEvents(t *testing.T) {
	testenv.Root(t)
	dir, err := TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := allTracepoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := walkEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fromFile, walked) {
		t.Errorf("available_events lists %d tracepoints, the events tree %d", len(fromFile), len(walked))
	}
}

func TestTracefsDirIsTracefs(t *testing.T) {
	testenv.Root(t)
	dir, err := TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "events")) || !exists(filepath.Join(dir, "available_events")) {
		t.Errorf("%s does not look like tracefs", dir)
	}
}
