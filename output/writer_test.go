package output

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"kinst.dev/kinst/compat"
)

// both runs print against a text and a JSON Writer of 0.17 and returns
// what each wrote.
func both(t *testing.T, print func(w *Writer) error) (text, json string) {
	t.Helper()
	return bothIn(t, compat.V017, print)
}

// bothIn is both for release v.
func bothIn(t *testing.T, v compat.Version, print func(w *Writer) error) (text, json string) {
	t.Helper()
	var tb, jb bytes.Buffer
	if err := print(NewText(&tb, v)); err != nil {
		t.Fatal(err)
	}
	if err := print(NewJSON(&jb, v)); err != nil {
		t.Fatal(err)
	}
	return tb.String(), jb.String()
}

func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		name       string
		print      func(w *Writer) error
		text, json string
	}{
		{"attached one", func(w *Writer) error { return w.AttachedProbes(1) },
			"Attaching 1 probe...\n", `{"type": "attached_probes", "data": {"probes": 1}}` + "\n"},
		{"attached many", func(w *Writer) error { return w.AttachedProbes(0) },
			"Attaching 0 probes...\n", `{"type": "attached_probes", "data": {"probes": 0}}` + "\n"},
		{"lost", func(w *Writer) error { return w.Lost(12) },
			"Lost 12 events\n", `{"type": "lost_events", "data": {"events": 12}}` + "\n"},
		{"end", func(w *Writer) error { return w.End() }, "", ""},
		{"join", func(w *Writer) error { return w.Join([]string{"ls", "-l", `a"b`}, " ") },
			"ls -l a\"b\n", `{"type": "join", "data": "ls -l a\"b"}` + "\n"},
		{"join empty", func(w *Writer) error { return w.Join(nil, ",") },
			"\n", `{"type": "join", "data": ""}` + "\n"},
		{"cat", func(w *Writer) error { return w.Cat("line\n\x00x") },
			"line\n\x00x", `{"type": "cat", "data": "line\n\u0000x"}` + "\n"},
		{"system", func(w *Writer) error { return w.System("out\n") },
			"out\n", `{"type": "syscall", "data": "out\n"}` + "\n"},
		{"printf", func(w *Writer) error { return w.Printf(ParseFormat("%s=%d\n"), []Value{String("\x1b[0m"), Int(1)}) },
			"\x1b[0m=1\n", `{"type": "printf", "data": "\u001b[0m=1\n"}` + "\n"},
		{"time", func(w *Writer) error { return w.Time("%Y-%m-%d %%f\n", fixedTime) },
			"2026-11-22 %f\n", `{"type": "time", "data": "2026-11-22 %f\n"}` + "\n"},
		{"unquoted kinds", func(w *Writer) error {
			return w.Value(Tuple(CgroupPath("unified:/,memory:/"), MacAddr([6]byte{1, 2, 3, 4, 5, 0xab}),
				Timestamp("12:00"), Strerror(2), String("q")))
		}, "(unified:/,memory:/, 01:02:03:04:05:AB, 12:00, No such file or directory, q)\n",
			`{"type": "value", "data": [unified:/,memory:/,01:02:03:04:05:AB,12:00,No such file or directory,"q"]}` + "\n"},
		{"helper error", func(w *Writer) error {
			e := HelperError{Helper: "probe_read", Retcode: -14, Line: 2, Column: 3}
			e.Warning = "stdin:2:3-9: WARNING: " + e.Message(true) + "\n"
			return w.HelperError(e)
		}, "stdin:2:3-9: WARNING: Failed to probe_read: Bad address (-14)\n",
			`{"type": "helper_error", "helper": "probe_read", "retcode": -14, "line": 2, "col": 3}` + "\n"},
	} {
		text, json := both(t, tc.print)
		if text != tc.text || json != tc.json {
			t.Errorf("%s:\n text %q\n want %q\n json %q\n want %q", tc.name, text, tc.text, json, tc.json)
		}
	}
}

func TestHelperErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    HelperError
		want string
	}{
		{HelperError{Helper: "map_update_elem", Retcode: -7}, "Failed to map_update_elem: Argument list too long (-7)"},
		{HelperError{Helper: "map_delete_elem", Retcode: -2}, "Failed to map_delete_elem: No such file or directory (-2)"},
		{HelperError{Helper: "probe_read_str", Retcode: -1000}, "Failed to probe_read_str: Unknown error 1000 (-1000)"},
		{HelperError{Helper: "x", Retcode: 3}, "Failed to x: 3"},
	} {
		if got := tc.e.Message(true); got != tc.want {
			t.Errorf("%+v.Message() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestTimeFailure(t *testing.T) {
	var buf bytes.Buffer
	for _, f := range []string{"", "%c %c %c"} {
		if err := NewText(&buf, compat.V017).Time(f, fixedTime); !errors.Is(err, ErrStrftime) {
			t.Errorf("Time(%q) = %v, want ErrStrftime", f, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("failed Time calls wrote %q", buf.String())
	}
}

func TestStacks(t *testing.T) {
	kernel := []Frame{
		{Addr: 0xffffffff81a0c9f0, Symbol: "do_nanosleep", Offset: 32},
		{Addr: 0xffffffffc0025df4},
	}
	user := []Frame{
		{Addr: 0x7efc644f34f7, Symbol: "getppid", Offset: 7, Module: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Addr: 0x7efc64a5b000},
	}
	// show_debug_info's frames: mid's call of leaf has no line known,
	// main no DWARF.
	inlined := []Frame{
		{Addr: 0x401136, Symbol: "outer", Offset: 4, Module: "/src/p", Source: "/src/p.c:13",
			Inlined: []Inlined{{"leaf", "/src/p.c:4"}, {"mid", ""}}},
		{Addr: 0x401049, Symbol: "main", Offset: 9, Module: "/src/p"},
	}
	ks := Kstack(StackBpftrace, kernel)
	for _, tc := range []struct {
		name       string
		print      func(w *Writer) error
		text, json string
	}{
		{"kstack value", func(w *Writer) error { return w.Value(ks) },
			"\n        do_nanosleep+32\n        0xffffffffc0025df4\n\n",
			`{"type": "value", "data": "\n        do_nanosleep+32\n        0xffffffffc0025df4\n"}` + "\n"},
		{"kstack perf", func(w *Writer) error { return w.Value(Kstack(StackPerf, kernel)) },
			"\n\tffffffff81a0c9f0 do_nanosleep+32\n\tffffffffc0025df4 0xffffffffc0025df4\n\n",
			`{"type": "value", "data": "\n\tffffffff81a0c9f0 do_nanosleep+32\n\tffffffffc0025df4 0xffffffffc0025df4\n"}` + "\n"},
		{"ustack perf", func(w *Writer) error { return w.Value(Ustack(StackPerf, user)) },
			"\n\t7efc644f34f7 getppid+7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\t7efc64a5b000 0x7efc64a5b000 ([unknown])\n\n",
			`{"type": "value", "data": "\n\t7efc644f34f7 getppid+7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\t7efc64a5b000 0x7efc64a5b000 ([unknown])\n"}` + "\n"},
		{"ustack source", func(w *Writer) error { return w.Value(Ustack(StackBpftrace, inlined)) },
			"\n        [inlined] leaf@/src/p.c:4\n        [inlined] mid\n        outer+4@/src/p.c:13\n        main+9\n\n",
			`{"type": "value", "data": "\n        [inlined] leaf@/src/p.c:4\n        [inlined] mid\n        outer+4@/src/p.c:13\n        main+9\n"}` + "\n"},
		{"ustack perf inlined", func(w *Writer) error { return w.Value(Ustack(StackPerf, inlined)) },
			"\n\t401136 leaf (inlined)\n\t401136 mid (inlined)\n\t401136 outer+4 (/src/p)\n\t401049 main+9 (/src/p)\n\n",
			`{"type": "value", "data": "\n\t401136 leaf (inlined)\n\t401136 mid (inlined)\n\t401136 outer+4 (/src/p)\n\t401049 main+9 (/src/p)\n"}` + "\n"},
		{"kstack raw", func(w *Writer) error { return w.Value(Kstack(StackRaw, kernel)) },
			"\nffffffff81a0c9f0\nffffffffc0025df4\n\n",
			`{"type": "value", "data": "\nffffffff81a0c9f0\nffffffffc0025df4\n"}` + "\n"},
		{"ustack build_id", func(w *Writer) error {
			// The second frame's file had no build ID the kernel could
			// read: its address is left.
			return w.Value(Ustack(StackBuildID, []Frame{
				{BuildID: "5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70", Offset: 0x1139},
				{Addr: 0x7efc64a5b000},
				{BuildID: "5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70", Offset: 0xa},
			}))
		}, "\n5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70 0x1139\n7efc64a5b000\n5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70 0x0a\n\n",
			`{"type": "value", "data": "\n5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70 0x1139\n7efc64a5b000\n5b0ba1f8ef33e3fae4a1e1ba28ecad5c1e6d1a70 0x0a\n"}` + "\n"},
		{"no frames", func(w *Writer) error { return w.Value(Ustack(StackBpftrace, nil)) },
			"\n", `{"type": "value", "data": ""}` + "\n"},
		{"stack keys", func(w *Writer) error {
			return w.Map(&Map{Name: "@", Kind: KindCount, Entries: []Entry{{Key: []Value{ks}, Value: Count(3)}}}, 0, 0)
		}, "@[\n    do_nanosleep+32\n    0xffffffffc0025df4\n]: 3\n",
			`{"type": "map", "data": {"@": {"\n    do_nanosleep+32\n    0xffffffffc0025df4\n": 3}}}` + "\n"},
		{"stack values run together", func(w *Writer) error {
			return w.Map(&Map{Name: "@s", Kind: KindKstack, Entries: []Entry{keyed(1, ks), keyed(2, Kstack(StackBpftrace, kernel[1:]))}}, 0, 0)
		}, "@s[1]: \n        do_nanosleep+32\n        0xffffffffc0025df4\n@s[2]: \n        0xffffffffc0025df4\n\n",
			`{"type": "map", "data": {"@s": {"1": "\n        do_nanosleep+32\n        0xffffffffc0025df4\n", "2": "\n        0xffffffffc0025df4\n"}}}` + "\n"},
	} {
		text, json := both(t, tc.print)
		if text != tc.text || json != tc.json {
			t.Errorf("%s:\n text %q\n want %q\n json %q\n want %q", tc.name, text, tc.text, json, tc.json)
		}
	}
}

func TestJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"":                 `""`,
		`say "hi" \ bye`:   `"say \"hi\" \\ bye"`,
		"\n\r\t\b\x00\x1f": `"\n\r\t\u0008\u0000\u001f"`,
		"\x7f~ ":           "\"\x7f~ \"",
		"\xc3\xa9\xff":     `"\uffffffc3\uffffffa9\uffffffff"`,
	} {
		if got := string(appendJSONString(nil, in)); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestNtop(t *testing.T) {
	v6 := func(words ...uint16) []byte {
		b := make([]byte, 16)
		for i, w := range words {
			b[2*i], b[2*i+1] = byte(w>>8), byte(w)
		}
		return b
	}
	for _, tc := range []struct {
		family int64
		addr   []byte
		want   string
	}{
		{AFInet, []byte{10, 0, 0, 255}, "10.0.0.255"},
		{AFInet, []byte{1, 2, 3, 4, 9, 9}, "1.2.3.4"},
		{AFInet, []byte{1, 2, 3}, ""},
		{AFInet6, v6(), "::"},
		{AFInet6, v6(0, 0, 0, 0, 0, 0, 0, 1), "::1"},
		{AFInet6, v6(0, 0, 0, 0, 0, 0, 0x102, 0x304), "::1.2.3.4"},
		{AFInet6, v6(0, 0, 0, 0, 0, 0xffff, 0x102, 0x304), "::ffff:1.2.3.4"},
		{AFInet6, v6(0, 0, 0, 0, 0, 0xfffe, 0x102, 0x304), "::fffe:102:304"},
		{AFInet6, v6(1), "1::"},
		{AFInet6, v6(1, 0, 2, 0, 0, 3), "1:0:2::3:0:0"},
		{AFInet6, v6(1, 0, 0, 2, 0, 0, 3), "1::2:0:0:3:0"},
		{AFInet6, v6(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1), "2001:db8::1:0:0:1"},
		{AFInet6, v6(1, 2, 3, 4, 5, 6, 7, 8), "1:2:3:4:5:6:7:8"},
		{AFInet6, v6(1, 2, 3, 4, 5, 6, 0, 8), "1:2:3:4:5:6:0:8"},
		{AFInet6, []byte{1, 2, 3, 4}, ""},
		{7, []byte{1, 2, 3, 4}, ""},
	} {
		if got := ntop(tc.family, tc.addr); got != tc.want {
			t.Errorf("ntop(%d, %v) = %q, want %q", tc.family, tc.addr, got, tc.want)
		}
	}
}

func TestIntN(t *testing.T) {
	for _, tc := range []struct {
		raw    uint64
		size   int
		signed bool
		want   string
	}{
		{0x1ff, 1, true, "-1"},
		{0x1ff, 1, false, "255"},
		{0x18000, 2, true, "-32768"},
		{0x18000, 2, false, "32768"},
		{0x180000000, 4, true, "-2147483648"},
		{0x180000000, 4, false, "2147483648"},
		{1<<64 - 1, 8, true, "-1"},
		{1<<64 - 1, 8, false, "18446744073709551615"},
	} {
		var buf bytes.Buffer
		if err := NewText(&buf, compat.V017).Value(IntN(tc.raw, tc.size, tc.signed)); err != nil || buf.String() != tc.want+"\n" {
			t.Errorf("IntN(%#x, %d, %v) prints %q, %v; want %q", tc.raw, tc.size, tc.signed, buf.String(), err, tc.want)
		}
	}
	if k := IntN(1, 3, true).Kind(); k != KindInvalid {
		t.Errorf("IntN of 3 bytes has kind %v, want invalid", k)
	}
}

// TestRecords checks structs as 0.17 prints them: as values, inside
// arrays, as map keys, and in JSON.
func TestRecords(t *testing.T) {
	inner := Record([]string{"x", "y"}, []Value{Int(0), IntN(0xffff, 2, true)})
	outer := Record([]string{"a", "name", "arr"}, []Value{inner, String("ab"), Array(Int(1), Int(2))})
	text, json := both(t, func(w *Writer) error { return w.Value(outer) })
	if want := "{ .a = { .x = 0, .y = -1 }, .name = ab, .arr = [1,2] }\n"; text != want {
		t.Errorf("text: got %q, want %q", text, want)
	}
	if want := `{"type": "value", "data": { "a": { "x": 0, "y": -1 }, "name": "ab", "arr": [1,2] }}` + "\n"; json != want {
		t.Errorf("json: got %q, want %q", json, want)
	}
	m := &Map{Name: "@x", Kind: KindInt, Entries: []Entry{{Key: []Value{Array(inner, inner)}, Value: Int(1)}}}
	text, _ = both(t, func(w *Writer) error { return w.Map(m, 0, 0) })
	if want := "@x[[{.x=0,.y=-1},{.x=0,.y=-1}]]: 1\n"; text != want {
		t.Errorf("key: got %q, want %q", text, want)
	}
}

func TestValueErrors(t *testing.T) {
	for _, v := range []Value{{}, IntN(1, 3, false), histOf(1), Lhist(0, 10, 0, make([]uint64, 20)),
		Lhist(0, 10, 1, make([]uint64, 11)), Tuple(Int(1), Value{})} {
		var buf bytes.Buffer
		if err := NewText(&buf, compat.V017).Value(v); err == nil || buf.Len() != 0 {
			t.Errorf("print(%v) wrote %q, %v; want an error and nothing written", v.Kind(), buf.String(), err)
		}
	}
}

func TestHistTable(t *testing.T) {
	buckets := make([]uint64, 65)
	buckets[12] = 1           // [1K, 2K)
	buckets[22] = 3           // [1M, 2M)
	buckets[32] = 2           // [1G, 2G)
	buckets[42] = 7           // [1T, 2T)
	buckets[64] = 1<<32 + 104 // 0.17 reads this count as a C int: 104
	var buf bytes.Buffer
	if err := NewText(&buf, compat.V017).Map(&Map{Name: "@h", Kind: KindHist, Entries: scalar(Hist(buckets))}, 0, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	for i, want := range map[int]string{
		0:  "@h: ",
		1:  "[1K, 2K)               1 |                                                    |",
		11: "[1M, 2M)               3 |@                                                   |",
		21: "[1G, 2G)               2 |@                                                   |",
		31: "[1T, 2T)               7 |@@@                                                 |",
		53: "[4194304T, 8388608T)4294967400 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|",
		54: "",
	} {
		if i >= len(lines) || lines[i] != want {
			t.Errorf("line %d of\n%s\nis not %q", i, buf.String(), want)
		}
	}
	var js bytes.Buffer
	if err := NewJSON(&js, compat.V017).Map(&Map{Name: "@h", Kind: KindHist, Entries: scalar(Hist(buckets))}, 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"min": 1024, "max": 2047, "count": 1}`,
		`{"min": 1073741824, "max": 2147483647, "count": 2}`,
		`{"min": 256, "max": 511, "count": 7}`, // 0.17's 32-bit shifts wrap past [2G, 4G)
		`{"min": 1073741824, "max": 2147483647, "count": 4294967400}`,
	} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON hist %s lacks %s", js.String(), want)
		}
	}
}

func TestLhistLabels(t *testing.T) {
	for _, tc := range []struct {
		n, step int64
		old     bool
		want    string
	}{
		{0, 1, true, "0"}, {1, 1, true, "1"}, {1000, 1000, true, "1000"}, {1024, 512, true, "1K"}, {3072, 1, true, "3K"},
		{1536, 512, true, "1536"}, {1048576, 1, true, "1M"}, {5242880, 1, true, "5M"}, {1049600, 1, true, "1025K"},
		{-1024, 1, true, "-1K"}, {-1048576, 1, true, "-1M"}, {-7, 1, true, "-7"},
		// 0.26.1 uses the suffixes only for steps that are multiples of 1024.
		{1024, 512, false, "1024"}, {1048576, 1, false, "1048576"}, {0, 1024, false, "0"}, {1024, 1024, false, "1K"},
		{1536, 1024, false, "1536"}, {3072, 1024, false, "3K"}, {2097152, 2048, false, "2M"}, {-1024, 1024, false, "-1K"},
	} {
		if got := string(lhistLabel(nil, tc.n, tc.step, tc.old)); got != tc.want {
			t.Errorf("lhistLabel(%d, step %d, old %v) = %q, want %q", tc.n, tc.step, tc.old, got, tc.want)
		}
	}
}

func TestMapErrors(t *testing.T) {
	for _, m := range []*Map{
		{Name: "@x"},
		{Name: "@x", Kind: KindCount, Entries: []Entry{keyed(1, Int(1))}},
		{Name: "@x", Kind: KindInt, Entries: []Entry{keyed(1, Int(1)), {Key: []Value{Int(1), Int(2)}, Value: Int(2)}}},
		{Name: "@x", Kind: KindInt, Entries: []Entry{{Value: Int(1)}, {Value: Int(2)}}},
	} {
		var buf bytes.Buffer
		if err := NewText(&buf, compat.V017).Map(m, 0, 0); !errors.Is(err, ErrMapKind) || buf.Len() != 0 {
			t.Errorf("Map(%+v) wrote %q, %v; want ErrMapKind", m, buf.String(), err)
		}
	}
	// 0.17 aborts on these keys; an error is kinder.
	var buf bytes.Buffer
	m := &Map{Name: "@e", Kind: KindInt, Entries: []Entry{{Key: []Value{Strerror(2)}, Value: Int(1)}}}
	if err := NewText(&buf, compat.V017).Map(m, 0, 0); err == nil || buf.Len() != 0 {
		t.Errorf("a strerror key printed %q, %v", buf.String(), err)
	}
	dup := []*Map{{Name: "@a", Kind: KindInt}, {Name: "@a", Kind: KindInt}}
	if err := NewText(&buf, compat.V017).Maps(dup); !errors.Is(err, ErrMapKind) {
		t.Errorf("Maps with a name twice: %v, want ErrMapKind", err)
	}
}

func TestMapsOrderByName(t *testing.T) {
	var maps []*Map
	for _, name := range []string{"@b", "@", "@_x", "@B", "@a1", "@a"} {
		maps = append(maps, &Map{Name: name, Kind: KindInt, Entries: scalar(Int(1))})
	}
	var buf bytes.Buffer
	if err := NewText(&buf, compat.V017).Maps(maps); err != nil {
		t.Fatal(err)
	}
	want := "@: 1\n@B: 1\n@_x: 1\n@a: 1\n@a1: 1\n@b: 1\n"
	if buf.String() != want {
		t.Errorf("Maps printed %q, want %q", buf.String(), want)
	}
	if maps[0].Name != "@b" {
		t.Error("Maps reordered its argument")
	}
}

// Example prints a printf message and a keyed count map, as a program like
// `kprobe:vfs_read { @[comm] = count(); printf(...); print(@) }` would.
func Example() {
	w := NewText(os.Stdout, compat.V017)
	_ = w.AttachedProbes(1)
	f := ParseFormat("%-8s %5d\n")
	if err := f.Check("printf", []Kind{KindString, KindInt}); err != nil {
		panic(err)
	}
	_ = w.Printf(f, []Value{String("bash"), Int(42)})
	_ = w.Maps([]*Map{{
		Name: "@",
		Kind: KindCount,
		Entries: []Entry{
			{Key: []Value{String("sshd")}, Value: Count(7)},
			{Key: []Value{String("bash")}, Value: Count(42)},
		},
	}})
	// Output:
	// Attaching 1 probe...
	// bash        42
	// @[sshd]: 7
	// @[bash]: 42
}
