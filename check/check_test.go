package check

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/chunked"
	"kinst.dev/kinst/syntax"
)

// fakeResolver knows a few tracepoints and functions, as a kernel would.
type fakeResolver struct{}

var openatArgs = &Type{Kind: Record, Name: "struct sys_enter_openat", Size: 48, Fields: []*Field{
	{Name: "__syscall_nr", Type: TInt32, Offset: 8},
	{Name: "dfd", Type: TInt64, Offset: 16},
	{Name: "filename", Type: &Type{Kind: Ptr, Size: 8, Elem: TInt8, Space: UserSpace}, Offset: 24},
	{Name: "flags", Type: TInt64, Offset: 32},
	{Name: "mode", Type: TUint64, Offset: 40},
}}

var switchArgs = &Type{Kind: Record, Name: "struct sched_switch", Size: 64, Fields: []*Field{
	{Name: "prev_comm", Type: StrType(16), Offset: 8},
	{Name: "prev_pid", Type: TInt32, Offset: 24},
}}

// skbArgs are the arguments of a function given a packet.
var skbArgs = &Type{Kind: Record, Name: "ip_output args", Size: 8, Fields: []*Field{
	{Name: "skb", Type: &Type{Kind: Ptr, Size: 8, Elem: &Type{Kind: Record, Name: "struct sk_buff", Size: 8, Fields: []*Field{
		{Name: "len", Type: TUint32, Offset: 0},
	}}}, Offset: 0},
}}

func (fakeResolver) Resolve(ap *syntax.AttachPoint) ([]*Target, error) {
	name := strings.Join(ap.Parts, ":")
	switch ap.Provider {
	case "tracepoint":
		if len(ap.Parts) != 2 {
			return nil, fmt.Errorf("tracepoints are written tracepoint:CATEGORY:NAME")
		}
		switch name {
		case "syscalls:sys_enter_openat":
			return []*Target{{Provider: "tracepoint", Name: name, Func: "sys_enter_openat", Args: openatArgs}}, nil
		case "sched:sched_switch":
			return []*Target{{Provider: "tracepoint", Name: name, Func: "sched_switch", Args: switchArgs}}, nil
		case "syscalls:sys_enter_open*":
			return []*Target{
				{Provider: "tracepoint", Name: "syscalls:sys_enter_open", Func: "sys_enter_open", Args: openatArgs},
				{Provider: "tracepoint", Name: "syscalls:sys_enter_openat", Func: "sys_enter_openat", Args: openatArgs},
			}, nil
		}
		return nil, absent{fmt.Errorf("no matches for tracepoint %s", name)}
	case "fentry", "fexit":
		return []*Target{{Provider: ap.Provider, Name: name, Func: name, Typed: true, Args: skbArgs}}, nil
	case "interval", "profile", "uprobe", "uretprobe", "kprobe", "kretprobe", "rawtracepoint":
		if len(ap.Parts) == 0 {
			return nil, fmt.Errorf("%s needs a target", ap.Provider)
		}
		if name == "libpthread:pthread_create" || name == "libc:pthread_create" {
			t := &Target{Provider: ap.Provider, Name: "libc:pthread_create", Func: "pthread_create"}
			if name != t.Name {
				t.Warning = "libpthread has no function pthread_create; probing libc's"
			}
			return []*Target{t}, nil
		}
		return []*Target{{Provider: ap.Provider, Name: name, Func: ap.Parts[len(ap.Parts)-1]}}, nil
	}
	return nil, fmt.Errorf("%s probes are not supported", ap.Provider)
}

// absent marks an error as naming nothing, as package attach does.
type absent struct{ error }

func (absent) Is(target error) bool { return target == ErrNoTarget }

func checkSrc(t *testing.T, src string, conf *Config) (*Program, error) {
	t.Helper()
	prog, err := syntax.Parse("t", []byte(src))
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	if conf == nil {
		conf = &Config{}
	}
	conf.Resolver = fakeResolver{}
	return Check(prog, conf)
}

func TestCheckTypes(t *testing.T) {
	tests := []struct {
		src  string
		want string // @x's value type
	}{
		{"BEGIN { @x = 1 }", "int8"},
		{"BEGIN { @x = 1000 }", "int16"},
		{"BEGIN { @x = -100000 }", "int32"},
		{"BEGIN { @x = 1; @x = 1000 }", "int16"},
		{"BEGIN { @x = 1; @x++ }", "int64"},
		{"BEGIN { @x = (uint8)1; @x += 1 }", "uint64"},
		{"BEGIN { $i = 0; $i++; @x = $i }", "int64"},
		{"BEGIN { $i = 0; $i += 1; @x = $i }", "int64"},
		{"BEGIN { @x = 18446744073709551615 }", "uint64"},
		{"BEGIN { @x = ~10 }", "uint64"},
		{"BEGIN { @x = ~-1 }", "int8"},
		{"BEGIN { @x = (uint32)1 - (uint32)2 }", "int64"},
		{"BEGIN { @x = (uint32)1 + (int8)2 }", "int64"},
		{"BEGIN { @x = (uint64)1 + 1 }", "uint64"},
		{"BEGIN { @x = 1; @x = (uint64)2 }", "uint64"},
		{"BEGIN { @x = -1; @x = (uint64)2 }", "int64"},
		{"BEGIN { @x = (uint32)1; @x = (int32)2 }", "int64"},
		{"BEGIN { @x = (uint16)1; @x = (int32)2 }", "int32"},
		{"BEGIN { @x = (uint8)1; @x = (uint32)2 }", "uint32"},
		{"BEGIN { @x = pid }", "uint64"},
		{"BEGIN { @x = -pid }", "uint64"},
		{"BEGIN { @x = 1 + pid }", "uint64"},
		{"BEGIN { @x = 1 - 2 }", "int8"},
		{"BEGIN { @x = pid < 1 }", "bool"},
		{"BEGIN { @x = true }", "bool"},
		{"BEGIN { @x = !pid }", "bool"},
		{"BEGIN { @x = \"a\" == \"b\" || 0 }", "bool"},
		{"BEGIN { @m[1] = 1; @x = delete(@m, 1) }", "bool"},
		{"BEGIN { @m[1] = 1; @x = delete(@m[1]) }", "bool"},
		{"BEGIN { @m[1, \"a\"] = 1; @x = has_key(@m, (1, \"a\")) }", "bool"},
		{"BEGIN { @m[1] = 1; @x = len(@m) }", "int64"},
		{"BEGIN { @x[true] = 1 }", "int8"},
		{"BEGIN { $s = \"ab\"; @x = $s[1] }", "int8"},
		{"BEGIN { @x = \"/\"[0] }", "int8"},
		{"BEGIN { @x = ncpus }", "uint64"},
		{"BEGIN { @x = jiffies() }", "uint64"},
		{"BEGIN { @x = comm() }", "string[16]"},
		{"BEGIN { @x = pid(init) + tid(curr_ns) }", "uint64"},
		{"BEGIN { @x = nsecs(tai) }", "uint64"},
		{"kprobe:f { @x = is_err(arg0) }", "bool"},
		{"BEGIN { @x = syscall_name(1) }", "string"},
		{"kprobe:f { @x = len(kstack) + len(ustack(3)) }", "int64"},
		{"BEGIN { $t = (1, \"a\"); @x = $t == (2, \"bc\") }", "bool"},
		{"BEGIN { @x = signal_name(1) }", "string"},
		{"BEGIN { @x = strerror(1) }", "string"},
		{"BEGIN { @x = (uint32)1 }", "uint32"},
		{"BEGIN { @x = (uint32)1 + (uint32)1 }", "uint64"},
		{"BEGIN { @x = (int8)1; @x = (int32)2 }", "int32"},
		{"BEGIN { @x = comm }", "string[16]"},
		{"BEGIN { @x = \"ab\"; @x = \"abcd\" }", "string[5]"},
		{"BEGIN { @x = (1, \"a\") }", "(int8, string[2])"},
		{"BEGIN { @x = count() }", "count"},
		{"BEGIN { @x = hist(5) }", "hist"},
		{"BEGIN { @x = hist(5, 3) }", "hist"},
		{"BEGIN { @x = (void *)0 }", "void *"},
		{"BEGIN { @x = (bool[2])(uint16)1 }", "bool[2]"},
		{"BEGIN { @x = (void **)0 }", "void * *"},
		{"BEGIN { $p = (void *)0; $p = (int8 *)8; @x = $p }", "void *"},
		{"BEGIN { @x = lhist(5, 0, 100, 10) }", "lhist"},
		{"BEGIN { @x = sum(-1) }", "sum"},
		{"t:syscalls:sys_enter_openat { @x = args->flags }", "int64"},
		{"t:syscalls:sys_enter_openat { @x = str(args->filename) }", "string[1024]"},
		{"t:syscalls:sys_enter_openat { @x = str(args->filename, 10) }", "string[11]"},
		{"t:sched:sched_switch { @x = args->prev_comm }", "string[16]"},
		{"uprobe:/bin/sh:main { @x = arg0 }", "uint64"},
		{"uretprobe:/bin/sh:main { @x = retval }", "uint64"},
		{"kprobe:f { @x = ksym(arg0) }", "ksym"},
		{"kprobe:f { @x = kstack }", "kstack"},
		// BEGIN and END run in kinst's process, which has stacks too.
		{"BEGIN { @x = kstack }", "kstack"},
		{"END { @x = ustack(perf, 3) }", "ustack"},
		{"kprobe:f { @x = probe }", "probe"},
		{"kprobe:f,kprobe:gg { @x = probe == \"kprobe:f\" }", "bool"},
		{"kprobe:f { @x = strcontains((probe), \"f\") }", "bool"},
		{"BEGIN { @x = sizeof(uint32) }", "uint64"},
		{"BEGIN { $t = (1, 2); @x = $t.1 }", "int8"},
		{"END { @x = @y + 1 } BEGIN { @y = (uint8)1 }", "uint64"},
		{"BEGIN { @x += 5 }", "int64"},
		{"BEGIN { @x -= pid }", "int64"},
		{"BEGIN { @x = username == username }", "bool"},
		{"kprobe:f { @x = func != func }", "bool"},
		{"BEGIN { @x = if (pid) { (uint8)1 } else if (1) { { let $a = (uint16)2; $a } } else { 3 } }", "uint16"},
		{"BEGIN { @x = { if (pid) { \"a\" } else { \"bcd\" } } }", "string[4]"},
		{"BEGIN { @x += pid }", "uint64"},
	}
	for _, tt := range tests {
		wantValueOfX(t, tt.src, nil, tt.want)
	}
	// comm(pid) calls a kfunc the kernel must let the probe call.
	wantValueOfX(t, "fentry:f { @x = comm(pid) }", &Config{Kernel: fakeKernel{}}, "string[64]")
}

// TestCheckTypes017: in the 0.17 mode truth values are int64, as 0.17
// has no bool.
func TestCheckTypes017(t *testing.T) {
	for _, src := range []string{
		// Every literal is int64 in 0.17, and operators are unsigned
		// when an operand is.
		"BEGIN { @x = 18446744073709551615 }",
		"BEGIN { @x = ~10 }",
		"BEGIN { @x = pid < 1 }",
		"BEGIN { @x = true }",
		"BEGIN { @x = !pid }",
		"BEGIN { @m[1] = 1; @x = delete(@m, 1) }",
		"BEGIN { @m[1] = 1; @x = has_key(@m, 1) }",
	} {
		wantValueOfX(t, src, &Config{Compat: compat.V017}, "int64")
	}
	// A numeric parameter is typed as a literal in 0.26.1, int64 in 0.17.
	wantValueOfX(t, "BEGIN { @x = $1 }", &Config{Params: []string{"18446744073709551615"}}, "uint64")
	wantValueOfX(t, "BEGIN { @x = $1 }", &Config{Params: []string{"18446744073709551615"}, Compat: compat.V017}, "int64")
	wantValueOfX(t, "BEGIN { @x = (uint64)1 + $1 }", &Config{Params: []string{"5"}}, "uint64")
	wantValueOfX(t, "BEGIN { @x = (uint32)1 - (uint32)2 }", &Config{Compat: compat.V017}, "uint64")
	wantValueOfX(t, "BEGIN { @x = (uint32)1; @x = (int32)2 }", &Config{Compat: compat.V017}, "uint32")
	// typeinfo() is a record of names, once unstable_typeinfo allows it.
	wantValueOfX(t, `BEGIN { @x = typeinfo((uint16)1).full_type }`, &Config{Typeinfo: true}, "string[7]")
	wantValueOfX(t, `BEGIN { @x = typeinfo("ab") }`, &Config{Typeinfo: true}, "record { .btf_id = uint64, .base_type = string[7], .full_type = string[10] }")
	// 0.17's strerror() prints glibc's texts.
	wantValueOfX(t, "BEGIN { @x = strerror(2) }", &Config{Compat: compat.V017}, "strerror")
}

// wantValueOfX checks that src type-checks with @x holding want.
func wantValueOfX(t *testing.T, src string, conf *Config, want string) {
	t.Helper()
	prog, err := checkSrc(t, src, conf)
	if err != nil {
		t.Errorf("%s: %v", src, err)
		return
	}
	if got := prog.Map("x").Value.String(); got != want {
		t.Errorf("%s: @x is %s, want %s", src, got, want)
	}
}

func TestConstants(t *testing.T) {
	tests := []struct {
		expr string
		want int64
	}{
		{"1 + 2 * 3", 7},
		{"-7 / 2", -3},
		{"-7 % 2", -1},
		{"(uint64)-7 / 2", 9223372036854775804},
		{"-8 >> 1", -4},
		{"(uint8)300", 44},
		{"(int8)200", -56},
		{"1 << 63", -9223372036854775808},
		{"!5", 0},
		{"~0", -1},
		{"3 > 2 && 2 > 1", 1},
		{"1 ? 10 : 20", 10},
		{"\"a\" == \"a\"", 1},
		{"$1 + $#", 44},
		{"sizeof(int16) + 0x10", 18},
		{"1_000", 1000},
	}
	for _, tt := range tests {
		src := "BEGIN { @x = " + tt.expr + " }"
		prog, err := checkSrc(t, src, &Config{Params: []string{"42", "x"}})
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		p := prog.Probes[0]
		rhs := p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs
		v, ok := p.Consts[rhs]
		if !ok {
			t.Errorf("%s: not constant", tt.expr)
			continue
		}
		if int64(v.Int) != tt.want {
			t.Errorf("%s = %d, want %d", tt.expr, int64(v.Int), tt.want)
		}
	}
}

// TestCheckErrors checks each program of testdata/*.bt and compares the
// whole list of errors with the ERROR comments written in it.
func TestCheckErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		for _, c := range chunked.Read(t, file) {
			prog, err := syntax.Parse(chunked.Name, c.Source)
			if err == nil {
				conf := &Config{Resolver: fakeResolver{}, Kernel: fakeKernel{}}
				if strings.HasSuffix(file, "_017.bt") {
					conf.Compat = compat.V017
				}
				_, err = Check(prog, conf)
				if _, ok := err.(syntax.ErrorList); err != nil && !ok {
					t.Errorf("error is %T, not an ErrorList: %v", err, err)
				}
			}
			c.Check(t, err)
		}
	}
}

func TestParamsInAttachPoints(t *testing.T) {
	tests := []struct {
		src    string
		params []string
		want   string // the first target's name, or the error
	}{
		{"interval:ms:$1 { }", []string{"100"}, "ms:100"},
		{"uprobe:$1:$2 { }", []string{"/bin/sh", "main"}, "/bin/sh:main"},
		{"uprobe:/bin/sh:f$1 { }", []string{"12"}, "/bin/sh:f12"},
		{"interval:ms:$2 { }", []string{"100"}, "t:1:1: interval:ms:$2 uses positional parameter $2, but 1 were given"},
		{"BEG$1 { }", []string{"IN"}, ""},
		{"$1:s:$2 { }", []string{"i", "1"}, "s:1"},
		// A parameter may be the whole attach point.
		{"$1 { }", []string{"i:ms:1"}, "ms:1"},
		{"$1 { }", []string{"uprobe:/bin/sh:main"}, "/bin/sh:main"},
		{"BEG$2 { }", []string{"IN"}, "t:1:1: BEG$2 uses positional parameter $2, but 1 were given"},
		{"BEG$1 { }", []string{"UN"}, `t:1:1: unknown probe type "BEGUN" (BEG$1)`},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, tt.src, &Config{Params: tt.params})
		got := ""
		if err != nil {
			got = err.(syntax.ErrorList)[0].Error()
		} else {
			got = prog.Probes[0].Targets[0].Name
		}
		if got != tt.want {
			t.Errorf("%s %q: got %s, want %s", tt.src, tt.params, got, tt.want)
		}
	}
}

func TestUnitsSplitByContext(t *testing.T) {
	// Without args, one checked probe covers both tracepoints.
	prog, err := checkSrc(t, "t:syscalls:sys_enter_open* { @[probe] = count() }", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prog.Probes); n != 1 || len(prog.Probes[0].Targets) != 2 {
		t.Fatalf("got %d probes", n)
	}
	// With args and the same layout, still one.
	prog, err = checkSrc(t, "t:syscalls:sys_enter_open* { @[args->flags] = count() }", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prog.Probes); n != 1 {
		t.Fatalf("got %d probes for one layout", n)
	}
	// Each layout is checked on its own: testdata/errors.bt has a field
	// that one of them lacks.
}

// TestTestProbesApart: each test or bench attach point is a probe of its
// own, which runs and reports alone, named by what follows its type.
func TestTestProbesApart(t *testing.T) {
	prog, err := checkSrc(t, "test:a, test:b, bench:a { @n = count() }", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range prog.Probes {
		for _, tg := range p.Targets {
			got = append(got, p.Provider+" "+tg.Name+" "+tg.FullName())
		}
	}
	want := []string{"test a test:a", "test b test:b", "bench a bench:a"}
	if !slices.Equal(got, want) {
		t.Errorf("probes %q, want %q", got, want)
	}
}

// fakeKernel knows one enum constant and two structs.
type fakeKernel struct{}

var fakeTask = &Type{Kind: Record, Name: "struct task_struct", Size: 64, Fields: []*Field{
	{Name: "pid", Type: TInt32, Offset: 8},
	{Name: "comm", Type: StrType(16), Offset: 16},
}}

var fakeThreadInfo, _ = fromBTF(&btf.Struct{Name: "thread_info", Size: 8, Members: []btf.Member{
	{Name: "flags", Type: &btf.Int{Name: "unsigned long", Size: 8}},
}}, KernelSpace)

func (fakeKernel) Type(kind syntax.Token, name string) (*Type, error) {
	if kind == syntax.STRUCT && name == "task_struct" {
		return fakeTask, nil
	}
	if kind == syntax.STRUCT && name == "thread_info" {
		return fakeThreadInfo, nil
	}
	return nil, fmt.Errorf("unknown kernel type %s", name)
}

func (fakeKernel) Symbol(name string) (uint64, error) {
	return 0, fmt.Errorf("no kernel symbol %s", name)
}

func (fakeKernel) Enum(name string) (int64, bool) {
	if name == "TASK_COMM_LEN" {
		return 16, true
	}
	return 0, false
}

func TestKernelTypes(t *testing.T) {
	tests := []struct {
		expr string
		want int64
	}{
		{"TASK_COMM_LEN", 16},
		{"TASK_COMM_LEN * 2", 32},
		// Not kernel enumerators: kinst's table of header constants.
		{"AF_INET6", 10},
		{"TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE", 3},
		{"sizeof(struct task_struct)", 64},
		{"offsetof(struct task_struct, comm)", 16},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, "BEGIN { @x = "+tt.expr+" }", &Config{Kernel: fakeKernel{}})
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		p := prog.Probes[0]
		v, ok := p.Consts[p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs]
		if !ok || int64(v.Int) != tt.want {
			t.Errorf("%s = %d (constant %v), want %d", tt.expr, int64(v.Int), ok, tt.want)
		}
	}
	prog, err := checkSrc(t, "kprobe:f { @c = ((struct task_struct *)curtask)->comm; @p = ((struct task_struct *)arg0)->pid }", &Config{Kernel: fakeKernel{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := prog.Map("c").Value.String(); got != "string[16]" {
		t.Errorf("@c is %s", got)
	}
	if got := prog.Map("p").Value.String(); got != "int32" {
		t.Errorf("@p is %s", got)
	}
	// The program's definition of a kernel type hides the kernel's, as
	// bpftrace's clang sees it; kernel types remain the members of
	// declarations that redefine none.
	for _, tt := range []struct {
		src, expr string
		want      uint64
	}{
		{"struct task_struct { char pad[3]; short x; }", "offsetof(struct task_struct, x)", 4},
		{"struct holder { struct thread_info ti; int y; }", "sizeof(struct holder)", 16},
		// Unused, the redefinition takes nothing from the others.
		{"struct task_struct { int x; } struct holder { struct thread_info ti; int y; }", "sizeof(struct holder)", 16},
	} {
		prog, err = checkSrc(t, tt.src+" kprobe:f { @x = "+tt.expr+" }", &Config{Kernel: fakeKernel{}})
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		p := prog.Probes[0]
		if v := p.Consts[p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs]; v.Int != tt.want {
			t.Errorf("%s: %s = %d, want %d", tt.src, tt.expr, v.Int, tt.want)
		}
	}
	prog, err = checkSrc(t, "struct task_struct { char pad[3]; short x; } kprobe:f { @x = curtask->x }", &Config{Kernel: fakeKernel{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := prog.Map("x").Value.String(); got != "int16" {
		t.Errorf("curtask->x is %s, want int16", got)
	}
}

func TestMapTypedByLaterPass(t *testing.T) {
	prog, err := checkSrc(t, "BEGIN { $i = 1; @fib[$i] = $i <= 2 ? $i : @fib[$i - 1] + @fib[$i - 2]; }", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := prog.Map("fib").Value.String(); got != "int64" {
		t.Errorf("@fib holds %s", got)
	}
	// Maps assigned only from each other default to int64.
	for _, src := range []string{
		"BEGIN { @x = @y + 1; @y = @x; }",
		"BEGIN { $d = @m[1]; @m[1] = $d + 1; }",
	} {
		prog, err := checkSrc(t, src, nil)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		for _, m := range prog.Maps {
			if m.Value.String() != "int64" {
				t.Errorf("%s: %s holds %s", src, m.Display(), m.Value)
			}
		}
	}
}

func TestAbsentAttachPoints(t *testing.T) {
	tests := []struct {
		src      string
		warnings string // Detail of the warnings
		err      string // Detail of the error, if the check fails
	}{
		{
			src:      "t:syscalls:nope, t:syscalls:sys_enter_openat { }",
			warnings: "t:1:1: warning: no matches for tracepoint syscalls:nope; left out of the probe\nt:syscalls:nope, t:syscalls:sys_enter_openat { }\n^~~~~~~~~~~~~~~",
		},
		{
			src: "t:syscalls:sys_enter_openat,\nt:syscalls:nope,\nt:syscalls:nada { }",
			warnings: "t:2:1: warning: 2 of the probe's 3 attach points name nothing on this system and are left out: " +
				"t:syscalls:nope, t:syscalls:nada (the first: no matches for tracepoint syscalls:nope)\nt:syscalls:nope,\n^~~~~~~~~~~~~~~",
		},
		{
			// Warnings come in source order, whichever was found first.
			src: "t:syscalls:nope, uprobe:libpthread:pthread_create { }",
			warnings: "t:1:1: warning: no matches for tracepoint syscalls:nope; left out of the probe\nt:syscalls:nope, uprobe:libpthread:pthread_create { }\n^~~~~~~~~~~~~~~\n" +
				"t:1:18: warning: libpthread has no function pthread_create; probing libc's\nt:syscalls:nope, uprobe:libpthread:pthread_create { }\n                 ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
		},
		{
			// One function under two names is probed once.
			src: "uprobe:libpthread:pthread_create,\nuprobe:libc:pthread_create { }",
			warnings: "t:1:1: warning: libpthread has no function pthread_create; probing libc's\nuprobe:libpthread:pthread_create,\n^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n" +
				"t:2:1: warning: uprobe:libc:pthread_create names nothing the probe's earlier attach points do not; probed once\nuprobe:libc:pthread_create { }\n^~~~~~~~~~~~~~~~~~~~~~~~~~",
		},
		{
			// Without a point that exists, each absent one is an error,
			// and the warnings still come.
			src:      "uprobe:libpthread:pthread_create { @ = count() }\nt:syscalls:nope, t:syscalls:nada { @ = 1 }",
			warnings: "t:1:1: warning: libpthread has no function pthread_create; probing libc's\nuprobe:libpthread:pthread_create { @ = count() }\n^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
			err: "t:2:1: no matches for tracepoint syscalls:nope\nt:syscalls:nope, t:syscalls:nada { @ = 1 }\n^~~~~~~~~~~~~~~\n" +
				"t:2:18: no matches for tracepoint syscalls:nada\nt:syscalls:nope, t:syscalls:nada { @ = 1 }\n                 ^~~~~~~~~~~~~~~",
		},
	}
	for _, tt := range tests {
		var warnings syntax.ErrorList
		prog, err := checkSrc(t, tt.src, &Config{Warn: func(w *syntax.Error) { warnings = append(warnings, w) }})
		if got := warnings.Detail(); got != tt.warnings {
			t.Errorf("%q: warnings\n%s\nwant\n%s", tt.src, got, tt.warnings)
		}
		if tt.err != "" {
			var list syntax.ErrorList
			if !errors.As(err, &list) || list.Detail() != tt.err {
				t.Errorf("%q: error\n%v\nwant\n%s", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if n := len(prog.Probes[0].Targets); n != 1 {
			t.Errorf("%q: %d targets, want the one that exists", tt.src, n)
		}
	}
}

// TestSignChange: where bpftrace 0.26 converts an integer implicitly to
// a type that cannot hold its values, it warns; literals take the sign
// they meet and draw no warning. The 0.17 mode warns of nothing.
func TestSignChange(t *testing.T) {
	const msg = "warning: Expression of type: uint64 being cast to type: int64. This may cause unexpected results. Use an explicit cast to suppress this warning."
	const toUnsigned = "warning: Expression of type: int64 being cast to type: uint64. This may cause unexpected results. Use an explicit cast to suppress this warning."
	tests := []struct {
		src, warnings string
	}{
		{"BEGIN { $a = (uint64)1; $a = (int64)2; }", "t:1:14: " + msg + "\nBEGIN { $a = (uint64)1; $a = (int64)2; }\n             ^~~~~~~~~"},
		{"BEGIN { @a = -1; @a = (uint64)2; }", "t:1:23: " + msg + "\nBEGIN { @a = -1; @a = (uint64)2; }\n                      ^~~~~~~~~"},
		{"BEGIN { @a[(uint64)1] = 1; @a[(int64)2] = 1; }", "t:1:12: " + msg + "\nBEGIN { @a[(uint64)1] = 1; @a[(int64)2] = 1; }\n           ^~~~~~~~~"},
		{"BEGIN { $a = (uint64)1 - 1; }", "t:1:14: " + msg + "\nBEGIN { $a = (uint64)1 - 1; }\n             ^~~~~~~~~"},
		{"BEGIN { $a = (uint64)1 == (int64)-1; }", "t:1:14: " + msg + "\nBEGIN { $a = (uint64)1 == (int64)-1; }\n             ^~~~~~~~~"},
		{"BEGIN { let $a: uint64 = (int64)1; }", "t:1:26: " + toUnsigned + "\nBEGIN { let $a: uint64 = (int64)1; }\n                         ^~~~~~~~"},
		{"BEGIN { let $a: uint64 = 1; let $b: int64 = (uint32)1; }", ""},
		{"BEGIN { $a = (int64)1; $a = (uint32)2; }", ""},
		{"BEGIN { $a = (uint32)1; $a = (int32)2; }", ""},
		{"BEGIN { $a = 1; $a = (uint64)2; }", ""},
		{"BEGIN { @a = 1; @a = (uint64)2; }", ""},
		{"BEGIN { @a = 0; @a--; @a++; }", ""},
		{"BEGIN { @a[1] = 1; @a[(uint64)2] = 1; }", ""},
		{"BEGIN { $a = (int64)(uint64)1 - 1; }", ""},
		{"BEGIN { $a = 1 == -1; }", ""},
		{"BEGIN { $a = (uint32)1 == (int32)-1; }", ""},
		{"BEGIN { $a = (uint64)10 / 2; }", ""},
	}
	// Narrower too: bpftrace 0.26 converts, with a warning, where 0.17
	// refuses.
	const narrow = "BEGIN { let $a: uint16; $a = (int32)pid; }"
	var warnings syntax.ErrorList
	if _, err := checkSrc(t, narrow, &Config{Warn: func(w *syntax.Error) { warnings = append(warnings, w) }}); err != nil {
		t.Errorf("%s: %v", narrow, err)
	}
	if got, want := warnings.Detail(), "t:1:30: warning: Expression of type: int32 being cast to type: uint16. This may cause unexpected results. Use an explicit cast to suppress this warning.\n"+narrow+"\n                             ^~~~~~~~~~"; got != want {
		t.Errorf("%s: warnings\n%s\nwant\n%s", narrow, got, want)
	}
	for _, tt := range tests {
		for _, v := range []compat.Version{compat.Current, compat.V017} {
			var warnings syntax.ErrorList
			if _, err := checkSrc(t, tt.src, &Config{Compat: v, Warn: func(w *syntax.Error) { warnings = append(warnings, w) }}); err != nil {
				t.Errorf("%s: %v", tt.src, err)
				continue
			}
			want := tt.warnings
			if v == compat.V017 {
				want = ""
			}
			if got := warnings.Detail(); got != want {
				t.Errorf("%s (%s): warnings\n%s\nwant\n%s", tt.src, v, got, want)
			}
		}
	}
}

// cfsKernel has a struct cfs_rq as Linux 6.13 and later describe it.
type cfsKernel struct{ fakeKernel }

func (k cfsKernel) Type(kind syntax.Token, name string) (*Type, error) {
	if kind == syntax.STRUCT && name == "cfs_rq" {
		u32 := &btf.Int{Name: "unsigned int", Size: 4}
		return fromBTF(&btf.Struct{Name: "cfs_rq", Size: 16, Members: []btf.Member{
			{Name: "load", Type: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}},
			{Name: "nr_queued", Type: u32, Offset: 64},
			{Name: "h_nr_queued", Type: u32, Offset: 96},
		}}, KernelSpace)
	}
	return k.fakeKernel.Type(kind, name)
}

// A kernel field renamed without a change of meaning is read under its
// old name, with a warning; a field never there is still an error.
func TestRenamedKernelField(t *testing.T) {
	src := "kprobe:f { @[((struct cfs_rq *)arg0)->nr_running] = count(); @h = ((struct cfs_rq *)arg0)->h_nr_running; }"
	var warnings syntax.ErrorList
	prog, err := checkSrc(t, src, &Config{Kernel: cfsKernel{}, Warn: func(w *syntax.Error) { warnings = append(warnings, w) }})
	if err != nil {
		t.Fatal(err)
	}
	want := "t:1:14: warning: struct cfs_rq has no field nr_running since Linux 6.13 renamed it: reading nr_queued\n" +
		"t:1:67: warning: struct cfs_rq has no field h_nr_running since Linux 6.13 renamed it: reading h_nr_queued"
	if got := warnings.Detail(); len(warnings) != 2 || warnings[0].Error()+"\n"+warnings[1].Error() != want {
		t.Errorf("warnings: %s\nwant:\n%s", got, want)
	}
	var fields []string
	for x, typ := range prog.Probes[0].Types {
		if f, ok := x.(*syntax.FieldExpr); ok {
			fields = append(fields, fmt.Sprintf("%s %s", f.Name, typ))
		}
	}
	slices.Sort(fields)
	if want := []string{"h_nr_running uint32", "nr_running uint32"}; !slices.Equal(fields, want) {
		t.Errorf("fields read: %v, want %v", fields, want)
	}
	_, err = checkSrc(t, "kprobe:f { @ = ((struct cfs_rq *)arg0)->nr_sleeping; }", &Config{Kernel: cfsKernel{}})
	if want := "t:1:16: struct cfs_rq in this kernel's BTF has no field nr_sleeping"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// The fake kernel has one kfunc, which only fentry probes may call, and
// one per-CPU variable.
func (fakeKernel) Kfunc(name string) bool { return name == "bpf_task_from_pid" }

func (fakeKernel) KfuncAllowed(name, provider string) bool {
	return name == "bpf_task_from_pid" && provider == "fentry"
}

func (fakeKernel) PercpuVar(name string) (uint32, error) {
	if name == "process_counts" {
		return 42, nil
	}
	return 0, fmt.Errorf("could not resolve variable %q from BTF", name)
}

// A statement after exit(), return, break or continue in its block never
// runs: the 0.26.1 mode warns at the first one, 0.17 says nothing.
func TestUnreachableStatement(t *testing.T) {
	const src = "BEGIN { @a = 1; exit(); @a = 2; @a = 3 } BEGIN { while (1) { break; @b = 1 } return; }"
	for _, tc := range []struct {
		compat compat.Version
		want   string
	}{
		{compat.Current, "t:1:25: warning: unreachable statement\n" + src + "\n" + strings.Repeat(" ", 24) + "^~~~~~\n" +
			"t:1:69: warning: unreachable statement\n" + src + "\n" + strings.Repeat(" ", 68) + "^~~~~~"},
		{compat.V017, ""},
	} {
		var warnings syntax.ErrorList
		if _, err := checkSrc(t, src, &Config{Compat: tc.compat, Warn: func(w *syntax.Error) { warnings = append(warnings, w) }}); err != nil {
			t.Fatal(err)
		}
		if got := warnings.Detail(); got != tc.want {
			t.Errorf("%s: warnings\n%s\nwant\n%s", tc.compat, got, tc.want)
		}
	}
}
