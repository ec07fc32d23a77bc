package output

import (
	"errors"
	"slices"
	"testing"

	"kinst.dev/kinst/compat"
)

func TestParseFormatVerbs(t *testing.T) {
	type verb struct {
		offset int
		text   string
		arg    ArgKind
	}
	for _, tc := range []struct {
		format string
		want   []verb
	}{
		{"", nil},
		{"no verbs", nil},
		{"%d %s\n", []verb{{0, "%d", ArgInteger}, {3, "%s", ArgString}}},
		{"%-08.3lld|%5.2s", []verb{{0, "%-08.3lld", ArgInteger}, {10, "%5.2s", ArgString}}},
		{"%hhd%hu%lx%llX%jo%zu%tp%c", []verb{{0, "%hhd", ArgInteger}, {4, "%hu", ArgInteger},
			{7, "%lx", ArgInteger}, {10, "%llX", ArgInteger}, {14, "%jo", ArgInteger},
			{17, "%zu", ArgInteger}, {20, "%tp", ArgInteger}, {23, "%c", ArgInteger}}},
		{"%r %rx %rh %5r %rd", []verb{{0, "%r", ArgBuffer}, {3, "%rx", ArgBuffer},
			{7, "%rh", ArgBuffer}, {11, "%5r", ArgBuffer}, {15, "%r", ArgBuffer}}},
		{"%gr|%-20gr|", []verb{{0, "%gr", ArgInteger}, {4, "%-20gr", ArgInteger}}},
		// 0.17 finds a verb in "%%d" and none in these:
		{"100%%d", []verb{{4, "%d", ArgInteger}}},
		{"%i %+d % d %#x %lf %.d %*d %ls %lc %Ld %qd %--5d %", nil},
		{"%5", nil},
	} {
		var got []verb
		for _, v := range ParseFormat(tc.format).Verbs() {
			got = append(got, verb{v.Offset, v.Text, v.Arg})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseFormat(%q) verbs = %v, want %v", tc.format, got, tc.want)
		}
	}
}

func TestFormatCheck(t *testing.T) {
	for _, tc := range []struct {
		fn, format string
		args       []Kind
		offset     int
		msg        string // "" when the call is valid
	}{
		{"printf", "%d %s\n", []Kind{KindInt, KindString}, 0, ""},
		{"printf", "%d %x %c %p\n", []Kind{KindPointer, KindInt, KindInt, KindPointer}, 0, ""},
		{"printf", "%s%s%s%s%s%s%s%s%s%s%s%s", []Kind{KindString, KindKsym, KindUsym, KindKstack,
			KindUstack, KindInet, KindUsername, KindProbe, KindTimestamp, KindStrerror, KindMacAddr,
			KindCgroupPath}, 0, ""},
		{"printf", "%r %rx %rh", []Kind{KindBuffer, KindBuffer, KindBuffer}, 0, ""},
		{"printf", "%d %s\n", []Kind{KindInt}, -1,
			"printf: not enough arguments for format string (1 supplied, 2 expected)"},
		{"printf", "%d\n", []Kind{KindInt, KindInt}, -1,
			"printf: too many arguments for format string (2 supplied, 1 expected)"},
		{"printf", "%i\n", []Kind{KindInt}, -1,
			"printf: too many arguments for format string (1 supplied, 0 expected)"},
		{"cat", "/proc/%s/status", nil, -1,
			"cat: not enough arguments for format string (0 supplied, 1 expected)"},
		{"printf", "%%d %d\n", []Kind{KindInt}, -1,
			"printf: not enough arguments for format string (1 supplied, 2 expected)"},
		{"printf", "a %s\n", []Kind{KindInt}, 2,
			"printf: %s specifier expects a value of type string (integer supplied)"},
		{"printf", "%d %-5lld\n", []Kind{KindInt, KindString}, 3,
			"printf: %lld specifier expects a value of type integer (string supplied)"},
		{"printf", "%d\n", []Kind{KindCount}, 0,
			"printf: %d specifier expects a value of type integer (count supplied)"},
		{"printf", "%s\n", []Kind{KindTuple}, 0,
			"printf: %s specifier expects a value of type string (tuple supplied)"},
		{"printf", "%s\n", []Kind{KindArray}, 0,
			"printf: %s specifier expects a value of type string (array supplied)"},
		{"printf", "%s\n", []Kind{KindBuffer}, 0,
			"printf: %s specifier expects a value of type string (buffer supplied)"},
		{"system", "%rx\n", []Kind{KindPointer}, 0,
			"system: %rx specifier expects a value of type buffer (integer supplied)"},
		{"printf", "%s\n", []Kind{KindKsym}, 0, ""},
		// Calls 0.17 accepts but prints garbage for.
		{"printf", "%+d %d\n", []Kind{KindInt}, 0,
			`printf: "%+d" at offset 0 is no verb bpftrace knows, but C would read an argument for it; write %% for a literal %`},
		{"printf", "%*d|%d\n", []Kind{KindInt}, 0,
			`printf: "%*d" at offset 0 is no verb bpftrace knows, but C would read an argument for it; write %% for a literal %`},
		{"printf", "x %1$d %d\n", []Kind{KindInt}, 2,
			`printf: "%1$d" at offset 2 is no verb bpftrace knows, but C would read an argument for it; write %% for a literal %`},
		{"printf", "%m %d\n", []Kind{KindInt}, 0,
			`printf: "%m" at offset 0 is no verb bpftrace knows, but C would read an argument for it; write %% for a literal %`},
		{"printf", "%3000000000d\n", []Kind{KindInt}, 0, `printf: format verb "%3000000000d" at offset 0 is too wide`},
		// ... and ones whose output does not depend on chance.
		{"printf", "%y %5% %d %+d\n", []Kind{KindInt}, 0, ""},
	} {
		fe := ParseFormat(tc.format).Check(tc.fn, tc.args)
		if tc.msg == "" {
			if fe != nil {
				t.Errorf("%s(%q, %v): %v", tc.fn, tc.format, tc.args, fe)
			}
			continue
		}
		if fe == nil || fe.Error() != tc.msg || fe.Func != tc.fn || fe.Offset != tc.offset {
			t.Errorf("%s(%q, %v) = %#v, want offset %d, %q", tc.fn, tc.format, tc.args, fe, tc.offset, tc.msg)
		}
	}
}

func TestFormatAppend(t *testing.T) {
	stack := Kstack(StackBpftrace, []Frame{{Addr: 0xffffffff81000010, Symbol: "do_sys_open", Offset: 16}})
	for _, tc := range []struct {
		format string
		args   []Value
		want   string
	}{
		{"%d|%s|%x\n", []Value{Int(-1), String("s"), Int(-1)}, "-1|s|ffffffff\n"},
		{"%u %lu\n", []Value{IntN(0xff, 1, true), IntN(0xff, 1, true)}, "4294967295 18446744073709551615\n"},
		{"%u %lu\n", []Value{IntN(0xff, 1, false), Uint(1<<64 - 1)}, "255 18446744073709551615\n"},
		{"a%cb%c|%-3c|\n", []Value{Int(0), Int('c'), Int(0)}, "abc||\n"},
		{"[%s]", []Value{stack}, "[\n        do_sys_open+16\n]"},
		{"[%.5s]", []Value{Ksym(0xffff, "")}, "[0xfff]"},
		{"%s %s", []Value{Inet(AFInet6, []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}), MacAddr([6]byte{0, 0x1a, 0xff, 3, 4, 0xa0})},
			"2001:db8::1 00:1A:FF:03:04:A0"},
		{"%rh|%rx|%r", []Value{Buffer(nil), Buffer([]byte{0}), Buffer([]byte("\t~"))}, "|\\x00|\\x09~"},
		{"100%% %d%%%%", []Value{Int(5)}, "100% 5%%%%"},
		// GFP flags, as bpftrace 0.26.1's %gr names them: masks first,
		// then single bits, and what is left in hex.
		{"%gr|%gr|%gr|%gr", []Value{Int(1), Int(0), Uint(0xcc0), Uint(0x100cc0)}, "GFP_DMA|0|GFP_KERNEL|GFP_USER"},
		{"%gr|%gr|%gr|%gr|%-12gr|%9gr|", []Value{Uint(0x820), Uint(0x2800), Uint(0x400cc0), Uint(0x1 | 0x200 | 0x40), Uint(0xcc0), Int(1)},
			"GFP_ATOMIC|GFP_NOWAIT|GFP_KERNEL_ACCOUNT|GFP_DMA|__GFP_IO|0x200|GFP_KERNEL  |  GFP_DMA|"},
		{"%gr", []Value{Uint(0x2000000 | 0x100000 | 0xcc0 | 0x2 | 0x8)}, "GFP_HIGHUSER_MOVABLE"},
		{"%gr", []Value{Uint((0x2000000|0x100000|0xcc0|0x2|0x8|0x40000|0x80000|0x2000)&^0xc00 | 0x400)}, "GFP_TRANSHUGE"},
		{"%gr", []Value{Uint(1 << 40)}, "0x10000000000"},
		{"%09gr|%-09gr|%05gr", []Value{Int(1), Int(1), Int(1)}, "00GFP_DMA|GFP_DMA00|GFP_DMA"},
	} {
		got, err := ParseFormat(tc.format).Append(nil, tc.args)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q with %v = %q, %v; want %q", tc.format, tc.args, got, err, tc.want)
		}
	}
}

func TestFormatAppendErrors(t *testing.T) {
	for _, tc := range []struct {
		format string
		args   []Value
	}{
		{"%d %d", []Value{Int(1)}},
		{"%d", []Value{String("x")}},
		{"%s", []Value{Count(1)}},
		{"%+d %d", []Value{Int(1)}},
	} {
		got, err := ParseFormat(tc.format).Append([]byte("kept"), tc.args)
		var fe *FormatError
		if !errors.As(err, &fe) || string(got) != "kept" {
			t.Errorf("%q with %v = %q, %v; want a FormatError and the buffer untouched", tc.format, tc.args, got, err)
		}
	}
}

func TestPrintfAllocations(t *testing.T) {
	f := ParseFormat("pid %-6d comm %-16s ret %5lld %x %c\n")
	args := []Value{Int(1234), String("systemd-journal"), Int(-2), Uint(0xdead), Int('A')}
	for _, w := range []*Writer{NewText(discard{}, compat.V017), NewJSON(discard{}, compat.V017)} {
		if err := w.Printf(f, args); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = w.Printf(f, args) }); n != 0 {
			t.Errorf("Printf allocates %v times per call, want 0", n)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkPrintf(b *testing.B) {
	f := ParseFormat("pid %-6d comm %-16s ret %5lld %x %c\n")
	args := []Value{Int(1234), String("systemd-journal"), Int(-2), Uint(0xdead), Int('A')}
	for _, bc := range []struct {
		name string
		w    *Writer
	}{{"text", NewText(discard{}, compat.V017)}, {"json", NewJSON(discard{}, compat.V017)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.w.Printf(f, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
