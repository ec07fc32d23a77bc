package preprocess

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/chunked"
	"kinst.dev/kinst/syntax"
)

// setup writes files (paths relative to a temporary directory, the
// program as prog.bt) and returns the directory and a Config whose
// system directory is sys/ and whose -I directory is inc/.
// setupProgram writes src as prog.bt beside the test headers, in a
// directory the test then works in.
func setupProgram(t *testing.T, src string) (dir string, conf *Config) {
	t.Helper()
	files := map[string]string{"prog.bt": src}
	for k, v := range headers {
		files[k] = v
	}
	dir, conf = setup(t, files)
	t.Chdir(dir)
	return dir, conf
}

func setup(t testing.TB, files map[string]string) (string, *Config) {
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, &Config{
		SystemDirs:  []string{filepath.Join(dir, "sys")},
		IncludeDirs: []string{filepath.Join(dir, "inc")},
		BTF:         func() bool { return true },
	}
}

// headers the tests include: a system one with declarations that must
// not come through, a full one, and a pair for #include_next.
var headers = map[string]string{
	"sys/sock.h":      "#pragma once\nstruct sockaddr { int family; };\n#define AF_INET PF_INET\n#define PF_INET 2\n#define SOCK_STREAM SOCK_STREAM\n",
	"sys/limits.h":    "#define LIMIT_SYS 2\n",
	"inc/limits.h":    "#define LIMIT_USER 1\n#include_next <limits.h>\n",
	"sys/glibc.h":     "#include_next <limits.h>\n#include \"gone.h\"\n",
	"sys/guarded.h":   "/* guarded */\n#ifndef GUARDED_H\n#define GUARDED_H\n#define ONCE 1\n#endif\n",
	"sys/trailing.h":  "#ifndef TRAILING_H\n#define TRAILING_H\n#endif\n#define AFTER 2\n",
	"inc/guard.h":     "#if !defined(GUARD_H)\n#define GUARD_H\nstruct g { int x; };\n#endif\n",
	"inc/decl.h":      "#define SIZE 8\nstruct pair { int a; int b; };\n",
	"inc/probe.h":     "BEGIN { @x = 1 + ; }\n",
	"inc/unclosed.h":  "#ifdef SIZE\n",
	"inc/recursive.h": "#include \"recursive.h\"\n",
}

func TestPreprocess(t *testing.T) {
	tests := []struct {
		name, src, want string
		includes        []string
		warnings        []string
	}{
		{"no directives", "#!/usr/bin/env bpftrace\n// #define X\nBEGIN { printf(\"#x\\n\"); } /* x */\n", "#!/usr/bin/env bpftrace\n// #define X\nBEGIN { printf(\"#x\\n\"); } /* x */\n", nil, nil},
		{"object macro", "#define N 5\nBEGIN { @x = N; } // N\n", "BEGIN { @x = 5; }", nil, nil},
		{"function macro", "#define MAX(a, b) ((a) > (b) ? (a) : (b))\nBEGIN { @x = MAX(1, MAX(2, 3)); }", "BEGIN { @x = ((1) > (((2) > (3) ? (2) : (3))) ? (1) : (((2) > (3) ? (2) : (3)))); }", nil, nil},
		{"name without arguments", "#define F(x) x\nBEGIN { @F = 1; $F = F; }", "BEGIN { @F = 1; $F = F; }", nil, nil},
		{"stringize and paste", "#define S(x) #x\n#define CAT(a, b) a ## b\nBEGIN { printf(S(a  \"q\"  b)); @ = CAT(co, mm); }", "BEGIN { printf(\"a \\\"q\\\" b\"); @ = comm; }", nil, nil},
		{"variadic", "#define P(f, ...) printf(f, __VA_ARGS__)\n#define Q(f, args...) printf(f , ## args)\nBEGIN { P(\"%d %d\", 1, 2); Q(\"x\"); }", "BEGIN { printf(\"%d %d\", 1, 2); printf(\"x\"); }", nil, nil},
		{"attach points are not expanded", "#define sched oops\n#define X 1\ntracepoint:sched:sched_switch,kprobe:X /X == 1/ { @[sched] = X ? X:X; }\nuprobe:/bin/sched:sched{}", "tracepoint:sched:sched_switch,kprobe:X /1 == 1/ { @[oops] = 1 ? 1:1; }\nuprobe:/bin/sched:sched{}", nil, nil},
		{"sigils are not macros", "#define x 1\nBEGIN { $x = x; @x = x; }", "BEGIN { $x = 1; @x = 1; }", nil, nil},
		{"conditionals", "#define A 2\n#if defined(A) && A > 1\nBEGIN { @a = 1 }\n#elif A\nBEGIN { @b = 1 }\n#else\nBEGIN { @c = 1 }\n#endif\n#ifdef B\nx\n#elifndef B\ny\n#endif", "BEGIN { @a = 1 }\ny", nil, nil},
		{"nested skipped", "#if 0\n#if 1\na\n#else\nb\n#endif\n#unknown stuff\n#elif 0x10 == 16 && 'a' == 97 && -1 < 0 && -1 > 0u\nc\n#endif", "c", nil, nil},
		{"shipped tool idiom", "#ifndef BPFTRACE_HAVE_BTF\n#include <linux/missing.h>\n#else\n#include <sock.h>\n#endif\nk:f { if ($f == AF_INET) {} }", "k:f { if ($f == 2) {} }", nil, nil},
		{"system headers give macros only", "#include <sock.h>\n#include <sock.h>\nBEGIN { @ = AF_INET + SOCK_STREAM; }", "BEGIN { @ = 2 + SOCK_STREAM; }", nil, nil},
		{"own headers come in full", "#include \"inc/decl.h\"\nBEGIN { @ = SIZE }", "struct pair { int a; int b; };\nBEGIN { @ = 8 }", nil, nil},
		{"-I directories", "#include <decl.h>\nBEGIN { @ = SIZE }", "struct pair { int a; int b; };\nBEGIN { @ = 8 }", nil, nil},
		{"include_next", "#include <limits.h>\nBEGIN { @ = LIMIT_USER + LIMIT_SYS }", "BEGIN { @ = 1 + 2 }", nil, nil},
		{"--include", "BEGIN { @ = SIZE }", "struct pair { int a; int b; };\nBEGIN { @ = 8 }", []string{"inc/decl.h"}, nil},
		{"absent system headers", "#include <net/sock.h>\n#include <net/sock.h>\n#include <linux/blkdev.h>\n#include <stddef.h>\nBEGIN {}", "BEGIN {}", nil, []string{"<net/sock.h>, <linux/blkdev.h> not found: kinst goes on with the kernel's BTF types"}},
		{"compiler headers", "#include <glibc.h>\n#include <stddef.h>\nBEGIN { @ = INT_MAX + CHAR_BIT; @u = ULONG_MAX }", "BEGIN { @ = 2147483647 + 8; @u = (9223372036854775807L * 2UL + 1UL) }", nil, []string{`"gone.h" not found: kinst goes on with the kernel's BTF types`}},
		{"include guards", "#include <guarded.h>\n#undef ONCE\n#include <guarded.h>\n#include <trailing.h>\n#undef AFTER\n#include <trailing.h>\n#include \"guard.h\"\n#include \"guard.h\"\n#ifndef ONCE\nBEGIN { @ = AFTER }\n#endif", "struct g { int x; };\nBEGIN { @ = 2 }", nil, nil},
		{"__has_include", "#if __has_include(<sock.h>) && !__has_include(\"nothere.h\") && !__has_builtin(x)\nyes\n#endif", "yes", nil, nil},
		{"__LINE__ and __FILE__", "\n#define L __LINE__\nBEGIN { @ = L; @f = __FILE__ }", "BEGIN { @ = 3; @f = \"prog.bt\" }", nil, nil},
		{"continuations", "#define LONG 1 + \\\n 2\nBEGIN { @ = LONG }", "BEGIN { @ = 1 + 2 }", nil, nil},
		{"no accidental tokens", "#define NEG -1\nBEGIN { @ = -NEG; @s = \"a\" }", "BEGIN { @ = - -1; @s = \"a\" }", nil, nil},
		{"warning", "#warning careful\nBEGIN {}", "BEGIN {}", nil, []string{"prog.bt:1:2: #warning careful"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, conf := setupProgram(t, tt.src)
			conf.Includes = tt.includes
			res, err := Preprocess("prog.bt", []byte(tt.src), conf)
			if err != nil {
				t.Fatalf("%v", err.(syntax.ErrorList).Detail())
			}
			if got := string(res.File.Src); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			if strings.Join(res.Warnings, "\n") != strings.Join(tt.warnings, "\n") {
				t.Errorf("warnings %q, want %q", res.Warnings, tt.warnings)
			}
		})
	}
}

// TestErrors preprocesses each program of testdata/errors.bt and
// compares the whole list of errors with the ERROR comments written in it.
func TestErrors(t *testing.T) {
	chunks := chunked.Read(t, "testdata/errors.bt")
	dir, conf := setup(t, headers)
	t.Chdir(dir)
	for _, c := range chunks {
		_, err := Preprocess(chunked.Name, c.Source, conf)
		if _, ok := err.(syntax.ErrorList); err != nil && !ok {
			t.Errorf("error is %T, not an ErrorList: %v", err, err)
		}
		c.Check(t, err)
	}
}

// Errors a chunk of testdata/errors.bt cannot hold: those located in a
// header, and a character constant that would run into the comment
// holding its expectation.
func TestErrorsOutsideChunks(t *testing.T) {
	tests := []struct{ src, want string }{
		{"#if '\\'\n#endif", "prog.bt:1:5: malformed character constant '\\'\n#if '\\'\n    ^~~"},
		{"#include \"unclosed.h\"\n", "DIR/inc/unclosed.h:1:2: #ifdef without #endif\n#ifdef SIZE\n ^~~~~"},
		{"#include \"recursive.h\"\n", "DIR/inc/recursive.h:1:2: #include nested more than 200 deep\n#include \"recursive.h\"\n ^~~~~~~"},
	}
	for _, tt := range tests {
		dir, conf := setupProgram(t, tt.src)
		_, err := Preprocess("prog.bt", []byte(tt.src), conf)
		var list syntax.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
			continue
		}
		if got := strings.ReplaceAll(list[0].Detail(), dir, "DIR"); got != tt.want {
			t.Errorf("%q:\ngot\n%s\nwant\n%s", tt.src, got, tt.want)
		}
	}
}

// A "..." header that is not there is an error that says where kinst
// looked; -e programs look in the working directory.
func TestMissingHeader(t *testing.T) {
	dir, conf := setup(t, headers)
	t.Chdir(dir)
	_, err := Preprocess("-e", []byte("#include \"nothere.h\"\nBEGIN {}"), conf)
	want := `-e:1:10: header "nothere.h" not found in ., DIR/inc, DIR/sys` + "\n#include \"nothere.h\"\n         ^~~~~~~~~~~"
	if err == nil || strings.ReplaceAll(err.(syntax.ErrorList).Detail(), dir, "DIR") != want {
		t.Errorf("got %v, want\n%s", err, want)
	}
	conf.Includes = []string{"gone.h"}
	_, err = Preprocess("-e", []byte("BEGIN {}"), conf)
	want = `<command line>:1:10: header "gone.h" not found in ., DIR/inc, DIR/sys`
	if err == nil || strings.ReplaceAll(err.Error(), dir, "DIR") != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// A header whose whole text is inside #ifndef X ... #endif is skipped
// once X is defined; anything outside, or an #else, keeps it read.
func TestGuards(t *testing.T) {
	for _, tc := range []struct {
		text         string
		full, system string // the guard found when read in either mode
	}{
		{"#ifndef A\n#define A\n#endif\n", "A", "A"},
		{"/* c */\n#ifndef A\n#define A\nstruct s;\n#endif\n// end\n", "A", "A"},
		{"#if !defined(A)\n#endif", "A", "A"},
		{"#if !defined A\n#endif", "A", "A"},
		{"#if !defined(A) || B\n#endif", "", ""},
		{"#ifndef A\n#else\n#endif", "", ""},
		{"#ifndef A\n#if B\n#else\n#endif\n#endif", "A", "A"},
		{"#ifndef A\n#endif\n#define B\n", "", ""},
		{"#define B\n#ifndef A\n#endif", "", ""},
		{"#ifndef A\n#endif\nstruct s;\n", "", "A"}, // text counts only where it is kept
		{"#ifdef A\n#endif", "", ""},
	} {
		src := &source{file: syntax.NewFile("h", []byte(tc.text)), text: []byte(tc.text), found: -1}
		p := newPP(&Config{SystemDirs: []string{}})
		full := guard(lex(src, &p.errs))
		src.system = true
		system := p.systemFile(src)
		if full != tc.full || system != tc.system || len(p.errs) > 0 {
			t.Errorf("%q: guards %q and %q, want %q and %q (errors %v)", tc.text, full, system, tc.full, tc.system, p.errs)
		}
	}
}

// Without BTF, the warning for absent headers says that their types are
// unknown, and BPFTRACE_HAVE_BTF is not defined.
func TestNoBTF(t *testing.T) {
	dir, conf := setup(t, headers)
	conf.BTF = func() bool { return false }
	res, err := Preprocess(filepath.Join(dir, "prog.bt"), []byte("#include <net/sock.h>\n#ifndef BPFTRACE_HAVE_BTF\nno\n#endif"), conf)
	if err != nil {
		t.Fatal(err)
	}
	want := "<net/sock.h> not found: the kernel has no BTF either, so the types they declare are unknown"
	if string(res.File.Src) != "no" || len(res.Warnings) != 1 || res.Warnings[0] != want {
		t.Errorf("got %q, warnings %q; want \"no\" and %q", res.File.Src, res.Warnings, want)
	}
}

// Errors the parser finds after preprocessing point into the file and
// line the text was written in: the program, a header, a macro's body.
func TestPositions(t *testing.T) {
	tests := []struct{ src, want string }{
		{"#define X 1\n\tBEGIN { @x = ; }", "prog.bt:2:15: expected expression, found ';'\n\tBEGIN { @x = ; }\n\t             ^"},
		{"#include \"probe.h\"", "DIR/inc/probe.h:1:18: expected expression, found ';'\nBEGIN { @x = 1 + ; }\n                 ^"},
		{"#define INC @x = 1 + ;\nBEGIN { INC }", "prog.bt:1:22: expected expression, found ';'\n#define INC @x = 1 + ;\n                     ^"},
		{"#define ID(x) x\nBEGIN { @ = ID(  1  +  ) }", "prog.bt:2:26: expected expression, found '}'\nBEGIN { @ = ID(  1  +  ) }\n                         ^"},
	}
	for _, tt := range tests {
		dir, conf := setupProgram(t, tt.src)
		res, err := Preprocess("prog.bt", []byte(tt.src), conf)
		if err != nil {
			t.Fatal(err)
		}
		_, err = syntax.ParseFile(res.File)
		var list syntax.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%q: error %v", tt.src, err)
			continue
		}
		if got := strings.ReplaceAll(list[0].Detail(), dir, "DIR"); got != tt.want {
			t.Errorf("%q:\ngot\n%s\nwant\n%s", tt.src, got, tt.want)
		}
	}
}

func TestEval(t *testing.T) {
	dir, conf := setup(t, headers)
	res, err := Preprocess(filepath.Join(dir, "prog.bt"), []byte("#include <sock.h>\n#define BIG 0xffffffffffffffff\n"), conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr string
		want int64
		err  string
	}{
		{"AF_INET", 2, ""},
		{"AF_INET << 4 | 1", 33, ""},
		{"BIG > 0", 1, ""},
		{"-1 > 0u", 1, ""},
		{"(7 % -1) + (9 / -1)", -9, ""},
		{"'\\n' + '\\x10' + '\\0'", 26, ""},
		{"1 ? 2 : 1 / 0", 2, ""},
		{"SOCK_STREAM", 0, "DIR/sys/sock.h:5:21: SOCK_STREAM is not an integer constant"},
		{"AF_INET6", 0, "expr:1:1: AF_INET6 is not an integer constant"},
	} {
		got, err := res.Eval(tc.expr)
		if got != tc.want || tc.err == "" && err != nil || tc.err != "" && (err == nil || strings.ReplaceAll(err.Error(), dir, "DIR") != tc.err) {
			t.Errorf("Eval(%q) = %d, %v; want %d, %q", tc.expr, got, err, tc.want, tc.err)
		}
	}
}
