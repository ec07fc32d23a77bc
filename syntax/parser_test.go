package syntax

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/chunked"
)

func TestParseAttachPoints(t *testing.T) {
	tests := []struct {
		src      string
		provider string
		parts    []string
	}{
		{"BEGIN {}", "BEGIN", nil},
		{"tracepoint:syscalls:sys_enter_openat {}", "tracepoint", []string{"syscalls", "sys_enter_openat"}},
		{"t:syscalls:sys_enter_* {}", "tracepoint", []string{"syscalls", "sys_enter_*"}},
		{"uprobe:/bin/bash:readline {}", "uprobe", []string{"/bin/bash", "readline"}},
		{"ur:./a.out:main+0x10 {}", "uretprobe", []string{"./a.out", "main+0x10"}},
		{`uprobe:"/tmp/a b":f {}`, "uprobe", []string{"/tmp/a b", "f"}},
		{"uprobe:libc:malloc {}", "uprobe", []string{"libc", "malloc"}},
		{"kprobe:vfs_read+16 {}", "kprobe", []string{"vfs_read+16"}},
		{"kprobe:ext4:ext4_file_open {}", "kprobe", []string{"ext4", "ext4_file_open"}},
		{"kfunc:vfs_read {}", "fentry", []string{"vfs_read"}},
		{"kretfunc:vfs_read {}", "fexit", []string{"vfs_read"}},
		{"interval:s:1 {}", "interval", []string{"s", "1"}},
		{"profile:hz:99 {}", "profile", []string{"hz", "99"}},
		{"rawtracepoint:sys_enter {}", "rawtracepoint", []string{"sys_enter"}},
		{"uprobe:/bin/bash:readline/pid == 1/ {}", "uprobe", []string{"/bin/bash", "readline"}},
		{"uprobe:testprogs/prog:fn {}", "uprobe", []string{"testprogs/prog", "fn"}},
		{"uprobe:testprogs/prog:fn/pid == 1/ {}", "uprobe", []string{"testprogs/prog", "fn"}},
		{"kprobe:vfs_read/pid == 1/ {}", "kprobe", []string{"vfs_read"}},
		{"software:faults:1 {}", "software", []string{"faults", "1"}},
		{"interval:ms:$1 {}", "interval", []string{"ms", "$1"}},
		// A wildcard probe type is the resolver's to expand; "us*"
		// followed by a colon is no pointer declaration.
		{"*:./prog:main {}", "*", []string{"./prog", "main"}},
		{"us*:./prog:*ick {}", "us*", []string{"./prog", "*ick"}},
		{`usdt:./prog::"tick" {}`, "usdt", []string{"./prog", "", "tick"}},
	}
	for _, tt := range tests {
		prog, err := Parse("t", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		a := prog.Probes[0].Points[0]
		if a.Provider != tt.provider || !reflect.DeepEqual(a.Parts, tt.parts) {
			t.Errorf("%s: got %s %q, want %s %q", tt.src, a.Provider, a.Parts, tt.provider, tt.parts)
		}
	}
}

func TestParseSeveralPointsAndPredicate(t *testing.T) {
	src := "t:syscalls:sys_enter_read,\n t:syscalls:sys_enter_write /pid == $1 / 2/ { @[probe] = count(); }"
	prog, err := Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pr := prog.Probes[0]
	if len(pr.Points) != 2 {
		t.Fatalf("got %d attach points", len(pr.Points))
	}
	if got := String(pr.Pred); got != "pid == $1 / 2" {
		t.Errorf("predicate = %q", got)
	}
}

func TestParseExpressions(t *testing.T) {
	// Each input prints back, with the precedence made explicit by the
	// tree shape shown in want.
	tests := []struct{ src, want string }{
		{"1 + 2 * 3", "1 + 2 * 3"},
		{"(1 + 2) * 3", "(1 + 2) * 3"},
		{"a || b && c | d ^ e & f == g < h << i + j * k", "a || b && c | d ^ e & f == g < h << i + j * k"},
		{"-x", "-x"},
		{"!!x", "!!x"},
		{"- -x", "- -x"},
		{"*args->ptr", "*args->ptr"},
		{"(uint32)x", "(uint32)x"},
		{"(struct task_struct *)curtask", "(struct task_struct *)curtask"},
		{"(u64 *)p", "(u64 *)p"},
		{"(x)", "(x)"},
		{"(1, \"a\", @m[2])", "(1, \"a\", @m[2])"},
		{"$t.0", "$t.0"},
		{"args.file->f_path.dentry", "args.file->f_path.dentry"},
		{"a ? b : c ? d : e", "a ? b : c ? d : e"},
		{"@x[1, 2]++", "@x[1, 2]++"},
		{"--$i", "--$i"},
		{"sizeof(struct file)", "sizeof(struct file)"},
		{"sizeof(x)", "sizeof(x)"},
		{"offsetof(struct file, f_mode)", "offsetof(struct file, f_mode)"},
		{"1_000 + 0x10 + 010", "1_000 + 0x10 + 010"},
		{`"a\tb\x01"`, `"a\tb\x01"`},
		{"arr[1 + 2]", "arr[1 + 2]"},
		{"$#", "$#"},
		{"$x ?: 10", "$x ?: 10"},
		{"a ?: b ? c : d", "a ?: b ? c : d"},
		{"(a=1, b = \"x\")", "(a = 1, b = \"x\")"},
		{"(a = (b = 1, c = (1, 2)))", "(a = (b = 1, c = (1, 2)))"},
		{"$r.a.b", "$r.a.b"},
		{"&$a", "&$a"},
		{"*&@m[1]", "*&@m[1]"},
		{"(typeof($x))$y", "(typeof($x))$y"},
		{"(typeof(struct task_struct) *)$y", "(typeof(struct task_struct) *)$y"},
		{"sizeof(typeof(uint8 *))", "sizeof(typeof(uint8 *))"},
		{"sizeof(typeof(size_t *))", "sizeof(typeof(size_t *))"},
		{"sizeof(typeof(size_t))", "sizeof(typeof(size_t))"},
		{"(uint64_t)1", "(uint64_t)1"},
		{"(bool[2])(uint16)1", "(bool[2])(uint16)1"},
		{"(bool *)$p", "(bool *)$p"},
		{"(u32)$x + (s8)-1", "(u32)$x + (s8) - 1"}, // - may be binary: not a cast
		{"(pid) + 1", "(pid) + 1"},
		{"(a) * (b)", "(a) * (b)"},
		{"offsetof(struct Foo, bar.x)", "offsetof(struct Foo, bar.x)"},
		{"comptime (1 + 1)", "comptime (1 + 1)"},
		{"comptime $x.0 + 1", "comptime $x.0 + 1"},
		{"comptime", "comptime"},
		{"if ($x) { 1 } else if $y { 2 } else { 3 } + 1", "if ($x) {\n\t1\n} else if ($y) {\n\t2\n} else {\n\t3\n} + 1"},
		{"{ if (1) { $a } else { 0 } }", "{\n\tif (1) {\n\t\t$a\n\t} else {\n\t\t0\n\t}\n}"},
	}
	for _, tt := range tests {
		x, err := ParseExpr(tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := String(x); got != tt.want {
			t.Errorf("%s: printed %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestIntLiterals(t *testing.T) {
	tests := []struct {
		src  string
		want uint64
	}{
		{"0", 0}, {"42", 42}, {"0x2a", 42}, {"052", 42}, {"1_000_000", 1000000},
		{"18446744073709551615", 1<<64 - 1},
		{"1s", 1e9}, {"100ms", 1e8}, {"5us", 5000}, {"7ns", 7}, {"1m", 60e9}, {"2h", 7200e9}, {"1d", 86400e9}, {"1_000ms", 1e9},
		{"10u", 10}, {"10ul", 10},
	}
	for _, tt := range tests {
		x, err := ParseExpr(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got := x.(*IntLit).Value; got != tt.want {
			t.Errorf("%s = %d, want %d", tt.src, got, tt.want)
		}
	}
}

func TestPrecedenceShape(t *testing.T) {
	x, err := ParseExpr("1 - 2 - 3")
	if err != nil {
		t.Fatal(err)
	}
	// Left associative: (1 - 2) - 3.
	b := x.(*BinaryExpr)
	if _, ok := b.X.(*BinaryExpr); !ok {
		t.Fatalf("1 - 2 - 3 parsed right-associative: %s", Dumped(x))
	}
}

// Dumped is Dump into a string, for test messages.
func Dumped(n Node) string {
	var b strings.Builder
	Dump(&b, n)
	return b.String()
}

func TestRoundTrip(t *testing.T) {
	srcs := []string{
		`#!/usr/bin/env kinst
#include <linux/sched.h>
// count opens
tracepoint:syscalls:sys_enter_openat /comm == "cat"/ {
	@opens[comm, pid] = count();
	$x = (uint8)args->flags;
	if ($x > 1) { printf("%d\n", $x); } else if ($x == 0) { @zero++ } else { delete(@opens[comm, pid]) }
	unroll (3) { $x += 1; }
	while ($x < 10) { $x <<= 1; if ($x == 4) { break; } continue }
	/* block comment */
	return;
}
END { print(@opens); clear(@opens); }`,
		"BEGIN{@=hist(1);@s=lhist(5,0,10,1);exit()}",
		"BEGIN { for ($i : 0..5) { if ($i == 2) { continue; } for ($j : ($i - 1)..@n[$i]) { break } } for ($kv : @m) { print($kv.1) } }",
		"i:s:1 { time(\"%H\\n\"); }",
		`config = { max_strlen = 16; stack_mode = perf; license = "GPL"; } let @m = lruhash(10); let @n = percpuarray(1);
BEGIN { let $x: string[8] = "a"; let $y; let $p: struct task_struct *; let $u: uint16 = 3; if !$x { } for $i : 0..2 { } for $kv : @m { } while @m[1] { } unroll 2 { } }`,
		"profile:hz:99 /cpu == 0/ { @[kstack] = count(); }",
		"struct a { int x; } BEGIN { } union u { long l; char c[2][3]; }; END { }",
		"typedef struct { unsigned int f : 3, : 5; void (*cb)(int, char *); } t, *pt; enum e { A, B = 1 << 3 }; struct fwd; BEGIN { }",
		"struct p { char a; int b __attribute__((aligned(8))); } __attribute__((packed)) BEGIN { } struct __attribute__((__packed__, aligned(4))) q { int x; }; END { }",
		"struct s { int x; } __attribute__((packed)) __attribute__((aligned(4))) BEGIN { }",
		"begin { $a = { let $b = 1; $b }; print({ $x = 1; print(\"bob\"); $x > 1 }); if ({ true }) { } _ = { print(1); 1 }; return $a; }",
		"begin { print(if ($x) { if ($y) { $x } else { $y } } else { 0 }); $z = if $x { let $a = 1; $a } else if ($y) { 2 } else { { 3 } } * 2; }",
		"begin { let $y: typeof($x) = 1; $t = (a = 0, b = { 1 }); $u = $x ?: 2; if comptime (1 + 1) { } else if (comptime 0) { } }",
	}
	for _, src := range srcs {
		p1, err := Parse("t", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		out1 := String(p1)
		p2, err := Parse("t", []byte(out1))
		if err != nil {
			t.Fatalf("reparse: %v\n%s", err, out1)
		}
		if out2 := String(p2); out1 != out2 {
			t.Errorf("printing is not stable:\n%s\n---\n%s", out1, out2)
		}
		if d1, d2 := Dumped(p1), Dumped(p2); d1 != d2 {
			t.Errorf("trees differ:\n%s\n---\n%s", d1, d2)
		}
	}
}

func TestParseDecls(t *testing.T) {
	src := `struct in { int x; short y; };
struct out {
	struct in a;
	const char *name, tag[2][4];
	unsigned long long b1 : 3, : 2;
	union { long l; int i[2]; };
	struct { int p; } named;
	void (*fn)(int);
}
BEGIN { }
typedef unsigned int u32x, *pu32x;
enum color { RED, GREEN = 5, BLUE };
struct fwd;
END { }`
	prog, err := Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.Decls) != 5 || len(prog.Probes) != 2 {
		t.Fatalf("got %d declarations and %d probes, want 5 and 2", len(prog.Decls), len(prog.Probes))
	}
	out := prog.Decls[1].Type
	var fields []string
	for _, f := range out.Fields {
		var names []string
		for _, d := range f.Decls {
			names = append(names, fmt.Sprintf("%s/%d/%d/%v/%v", d.Name, d.Ptr, len(d.Dims), d.Bits != nil, d.Func))
		}
		fields = append(fields, f.Type.Kind.String()+" "+f.Type.Name+" "+strings.Join(names, ","))
	}
	want := []string{
		"struct in a/0/0/false/false",
		"identifier char name/1/0/false/false,tag/0/2/false/false",
		"identifier unsigned long long b1/0/0/true/false,/0/0/true/false",
		"union  ",
		"struct  named/0/0/false/false",
		"identifier void fn/0/0/false/true",
	}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("fields:\n%q\nwant\n%q", fields, want)
	}
	td := prog.Decls[2]
	if !td.Typedef || td.Type.Name != "unsigned int" || len(td.Names) != 2 || td.Names[1].Name != "pu32x" || td.Names[1].Ptr != 1 {
		t.Errorf("typedef parsed as %s", String(td))
	}
	if e := prog.Decls[3].Type; len(e.Values) != 3 || e.Values[1].Value == nil || e.Values[2].Name != "BLUE" {
		t.Errorf("enum parsed as %s", String(prog.Decls[3]))
	}
	if f := prog.Decls[4].Type; f.Body || f.Name != "fwd" {
		t.Errorf("forward declaration parsed as %s", String(prog.Decls[4]))
	}
}

func TestPrinterLayout(t *testing.T) {
	prog, err := Parse("t", []byte("BEGIN,END/1/{ if(1){@x=1} else {@y=2} $a=3 }"))
	if err != nil {
		t.Fatal(err)
	}
	want := "BEGIN,\nEND /1/\n{\n\tif (1) {\n\t\t@x = 1;\n\t} else {\n\t\t@y = 2;\n\t}\n\t$a = 3;\n}\n"
	if got := String(prog); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestParseErrors parses each program of testdata/errors.bt and checks
// the whole list of errors against the ERROR comments written in it.
func TestParseErrors(t *testing.T) {
	for _, c := range chunked.Read(t, "testdata/errors.bt") {
		_, err := Parse(chunked.Name, c.Source)
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Errorf("error is %T, not an ErrorList: %v", err, err)
			}
		}
		c.Check(t, err)
	}
}

func TestErrorDetail(t *testing.T) {
	_, err := Parse("prog.bt", []byte("BEGIN {\n\t@x = foo bar;\n}"))
	list := err.(ErrorList)
	want := "prog.bt:2:11: expected ';' or '}' after statement, found 'bar'\n\t@x = foo bar;\n\t         ^~~"
	if got := list[0].Detail(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestErrorLimit(t *testing.T) {
	src := strings.Repeat("BEGIN { @x = ; }\n", 50)
	_, err := Parse("t", []byte(src))
	if n := len(err.(ErrorList)); n != maxErrors {
		t.Errorf("got %d errors, want %d", n, maxErrors)
	}
}

// TestIgnoredDeclarations: what a program's own header declares besides
// types (prototypes, extern and static variables, inline functions,
// attributes, asm labels, initializers with C's character constants) is
// read and dropped; the types defined on the way are kept, and the
// probes around them parse.
func TestIgnoredDeclarations(t *testing.T) {
	src := `struct point { int x; int y; };
typedef struct point point_t;
extern int lib_count;
extern const char *lib_names[];
int lib_init(void);
struct point *lib_make(int x, int y) __attribute__((warn_unused_result)) __asm__("lib_make_v2");
size_t lib_len(const char *s, ...);
pid_t *lib_pids, lib_pid = 3;
static const char lib_colon = ':';
static inline int lib_sum(const struct point *p) { char c = '}'; return p->x + p->y + (c == '{'); }
__attribute__((noreturn)) void lib_die(const char *fmt, ...);
void (*lib_hook)(int), *(*lib_table[4])(void);
static const char lib_sep[] = { '\'', ',', 0 }, *lib_end = "}";
point_t lib_origin = { .x = 0, .y = 0 };
struct color_pair { int fg, bg; } lib_colors[2];
enum level { LOW, HIGH = 5 } lib_level;
__extension__ typedef unsigned long long lib_u64;
typedef void lib_handler(int sig, const char *why);
struct lib_hooks { lib_handler *on_signal; int n; };
_Static_assert(sizeof(int) == 4, "int");
BEGIN { }
unsigned long lib_mask(unsigned long m)
{
	return m & ~0UL;
}
kprobe:f { }
`
	prog, err := Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var decls []string
	for _, d := range prog.Decls {
		name := d.Type.Kind.String() + " " + d.Type.Name
		for _, n := range d.Names {
			name += " " + n.Name
		}
		decls = append(decls, name)
	}
	want := []string{"struct point", "struct point point_t", "struct color_pair", "enum level", "identifier unsigned long long lib_u64",
		"identifier void lib_handler", "struct lib_hooks"}
	if !reflect.DeepEqual(decls, want) {
		t.Errorf("declarations kept:\n%q\nwant\n%q", decls, want)
	}
	if len(prog.Probes) != 2 || prog.Probes[1].Points[0].Raw != "kprobe:f" {
		t.Errorf("got %d probes, want BEGIN and kprobe:f", len(prog.Probes))
	}
}
