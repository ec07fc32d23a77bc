package output

import (
	"fmt"
	"os"
	"strings"
)

// repeat returns stmt n times.
func repeat(stmt string, n int) string { return strings.Repeat(stmt+" ", n) }

func init() {
	bpftraceCases = append(bpftraceCases,
		bpftraceCase{
			name: "maps_scalar",
			prog: `BEGIN {
	@a = count(); @a = count();
	@b = sum(-7); @b = sum(3);
	@c = min(5); @c = min(-2);
	@d = max(3); @d = max(9);
	@e = avg(-7); @e = avg(-8);
	@f = stats(-7); @f = stats(-8); @f = stats(100);
	@g = -3; @h = (uint32)7; @k = (int8)-1; @l = (uint64)-1;
	@i = "str"; @j = (1, "two", -3, (4, "five"));
	@ = 4; @Z = 5; @_a = 6; @a1 = 7;
	exit();
}`,
			print: func(w *Writer) ([]*Map, error) {
				return []*Map{
					{Name: "@a", Kind: KindCount, Entries: scalar(Count(2))},
					{Name: "@b", Kind: KindSum, Entries: scalar(Sum(uint64(1<<64-4), true))},
					{Name: "@c", Kind: KindMin, Entries: scalar(Min(-2))},
					{Name: "@d", Kind: KindMax, Entries: scalar(Max(9))},
					{Name: "@e", Kind: KindAvg, Entries: scalar(Avg(2, -15))},
					{Name: "@f", Kind: KindStats, Entries: scalar(Stats(3, 85))},
					{Name: "@g", Kind: KindInt, Entries: scalar(Int(-3))},
					{Name: "@h", Kind: KindInt, Entries: scalar(IntN(7, 4, false))},
					{Name: "@k", Kind: KindInt, Entries: scalar(IntN(0xff, 1, true))},
					{Name: "@l", Kind: KindInt, Entries: scalar(Uint(1<<64 - 1))},
					{Name: "@i", Kind: KindString, Entries: scalar(String("str"))},
					{Name: "@j", Kind: KindTuple, Entries: scalar(Tuple(Int(1), String("two"), Int(-3), Tuple(Int(4), String("five"))))},
					{Name: "@", Kind: KindInt, Entries: scalar(Int(4))},
					{Name: "@Z", Kind: KindInt, Entries: scalar(Int(5))},
					{Name: "@_a", Kind: KindInt, Entries: scalar(Int(6))},
					{Name: "@a1", Kind: KindInt, Entries: scalar(Int(7))},
				}, nil
			},
		},
		sortedByValueCase(),
		sortedByKeyCase(),
		histCase(),
		histTiesCase(),
		lhistCase(),
		statsTiesCase(),
		printTopDivCase(),
		emptyMapsCase(),
		keyKindsCase(),
		helperErrorCase(),
		catCase(),
		joinCase(),
	)
}

func sortedByValueCase() bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	var count, sum, ints, uints, mins, maxs []Entry
	// Distinct values: 0.17 leaves equal ones in the kernel's hash order.
	for i, k := range []int64{5, -1, 300, 0, 7, 1 << 40, 42, -300} {
		n := (i*7)%8 + 1
		prog.WriteString(fmt.Sprintf("\t%s\n", repeat(fmt.Sprintf("@count[%d] = count();", k), n)))
		count = append(count, keyed(k, Count(uint64(n))))
		v := int64(i*i*13%50) - 20
		prog.WriteString(fmt.Sprintf("\t@sum[%d] = sum(%d); @int[%d] = %d; @min[%d] = min(%d); @max[%d] = max(%d);\n", k, v, k, v, k, v, k, v+21))
		sum = append(sum, keyed(k, Sum(uint64(v), true)))
		ints = append(ints, keyed(k, Int(v)))
		mins = append(mins, keyed(k, Min(v)))
		maxs = append(maxs, keyed(k, Max(v+21)))
		prog.WriteString(fmt.Sprintf("\t@uint[%d] = (uint64)%d;\n", k, v))
		uints = append(uints, keyed(k, Uint(uint64(v))))
	}
	prog.WriteString("\texit();\n}\n")
	return bpftraceCase{
		name: "maps_sorted_by_value",
		prog: prog.String(),
		print: func(w *Writer) ([]*Map, error) {
			return []*Map{
				{Name: "@count", Kind: KindCount, Entries: count},
				{Name: "@sum", Kind: KindSum, Entries: sum},
				{Name: "@int", Kind: KindInt, Entries: ints},
				{Name: "@uint", Kind: KindInt, Entries: uints},
				{Name: "@min", Kind: KindMin, Entries: mins},
				{Name: "@max", Kind: KindMax, Entries: maxs},
			}, nil
		},
	}
}

func sortedByKeyCase() bpftraceCase {
	return bpftraceCase{
		name: "maps_sorted_by_key",
		prog: `BEGIN {
	@s[5] = "five"; @s[-1] = "minus one"; @s[0] = "zero"; @s[256] = "x"; @s[1] = "one";
	@str["b"] = "1"; @str["a"] = "2"; @str["ab"] = "3"; @str[""] = "4"; @str["B"] = "5";
	@multi[2, "b"] = "w"; @multi[1, "z"] = "x"; @multi[2, "a"] = "y"; @multi[-1, "a"] = "z"; @multi[1, "a"] = "v";
	@tuple[3] = (1, "c"); @tuple[1] = (2, "a"); @tuple[2] = (3, "b");
	@c["x", 2, "y"] = count(); @c["x", 1, "y"] = count(); @c["x", 1, "y"] = count();
	exit();
}`,
		print: func(w *Writer) ([]*Map, error) {
			two := func(k int64, s string, v Value) Entry { return Entry{Key: []Value{Int(k), String(s)}, Value: v} }
			str := func(k, v string) Entry { return Entry{Key: []Value{String(k)}, Value: String(v)} }
			return []*Map{
				{Name: "@s", Kind: KindString, Entries: []Entry{
					keyed(5, String("five")), keyed(-1, String("minus one")), keyed(0, String("zero")),
					keyed(256, String("x")), keyed(1, String("one"))}},
				{Name: "@str", Kind: KindString, Entries: []Entry{
					str("b", "1"), str("a", "2"), str("ab", "3"), str("", "4"), str("B", "5")}},
				{Name: "@multi", Kind: KindString, Entries: []Entry{
					two(2, "b", String("w")), two(1, "z", String("x")), two(2, "a", String("y")),
					two(-1, "a", String("z")), two(1, "a", String("v"))}},
				{Name: "@tuple", Kind: KindTuple, Entries: []Entry{
					keyed(3, Tuple(Int(1), String("c"))), keyed(1, Tuple(Int(2), String("a"))),
					keyed(2, Tuple(Int(3), String("b")))}},
				{Name: "@c", Kind: KindCount, Entries: []Entry{
					{Key: []Value{String("x"), Int(2), String("y")}, Value: Count(1)},
					{Key: []Value{String("x"), Int(1), String("y")}, Value: Count(2)}}},
			}, nil
		},
	}
}

func histCase() bpftraceCase {
	samples := []int64{-5, -1, 0, 0, 1, 2, 3, 3, 4, 7, 8, 1023, 1024, 1024, 1024, 1 << 20, 1 << 30,
		1<<31 - 1, 1 << 31, 1 << 40, 1<<63 - 1}
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	for _, v := range samples {
		fmt.Fprintf(&prog, "\t@h = hist(%d);\n", v)
	}
	// Keyed hists sorted by their total count; the bars scale per key.
	var keyedEntries []Entry
	for _, k := range []int64{3, 1, 2} {
		var vs []int64
		for i := int64(0); i < k*3; i++ {
			v := i * i * k
			vs = append(vs, v)
			fmt.Fprintf(&prog, "\t@k[%d] = hist(%d);\n", k, v)
		}
		keyedEntries = append(keyedEntries, keyed(k, histOf(vs...)))
	}
	// One bucket with 52 counts and others with fewer: bar rounding.
	var scale []int64
	for i, n := range []int{52, 51, 27, 26, 25, 1, 3, 13} {
		for range n {
			scale = append(scale, int64(1)<<(i+3))
		}
		fmt.Fprintf(&prog, "\t%s\n", repeat(fmt.Sprintf("@scale = hist(%d);", int64(1)<<(i+3)), n))
	}
	prog.WriteString("\t@one = hist(1);\n\texit();\n}\n")
	return bpftraceCase{
		name: "maps_hist",
		prog: prog.String(),
		print: func(w *Writer) ([]*Map, error) {
			return []*Map{
				{Name: "@h", Kind: KindHist, Entries: scalar(histOf(samples...))},
				{Name: "@k", Kind: KindHist, Entries: keyedEntries},
				{Name: "@scale", Kind: KindHist, Entries: scalar(histOf(scale...))},
				{Name: "@one", Kind: KindHist, Entries: scalar(histOf(1))},
			}, nil
		},
	}
}

// histTiesCase has hist maps whose keys tie on their total counts: 0.17
// reads them in the byte order of their keys (integers little-endian) and
// std::sort()s them, which moves ties around once there are more than 16.
func histTiesCase() bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	var small, large []Entry
	for _, k := range []int64{1, 256, 2, 512, -1, 3} {
		fmt.Fprintf(&prog, "\t@small[%d] = hist(%d);\n", k, k)
		small = append(small, keyed(k, histOf(k)))
	}
	// A loop keeps the program small enough for the verifier.
	prog.WriteString(`	$i = 0;
	while ($i < 41) {
		$k = ($i * 37 % 41) * 97 - 300; $j = 0;
		while ($j < $i % 4 + 1) { @large[$k] = hist($j * $k); $j++; }
		$i++;
	}
	exit();
}
END {
`)
	for i := int64(0); i < 41; i++ {
		k := i*37%41*97 - 300
		var vs []int64
		for j := range i%4 + 1 {
			vs = append(vs, j*k)
		}
		large = append(large, keyed(k, histOf(vs...)))
	}
	var names []Entry
	for i, name := range []string{"sshd", "bash", "a", "systemd", "bpftrace", "kworker/0:1", "b", "zsh",
		"cron", "ab", "init", "sh", "top", "vim", "less", "cat", "tail", "head", "grep", "sed"} {
		fmt.Fprintf(&prog, "\t%s\n", repeat(fmt.Sprintf("@names[%s] = hist(%d);", btString(name), i), i%3+1))
		var vs []int64
		for range i%3 + 1 {
			vs = append(vs, int64(i))
		}
		names = append(names, Entry{Key: []Value{String(name)}, Value: histOf(vs...)})
	}
	prog.WriteString("}\n")
	return bpftraceCase{
		name:   "maps_hist_ties",
		prog:   prog.String(),
		probes: 2,
		print: func(w *Writer) ([]*Map, error) {
			return []*Map{
				{Name: "@small", Kind: KindHist, Entries: small},
				{Name: "@large", Kind: KindHist, Entries: large},
				{Name: "@names", Kind: KindHist, Entries: names},
			}, nil
		},
	}
}

func lhistCase() bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	type lh struct {
		name         string
		lo, hi, step int64
		samples      []int64
	}
	cases := []lh{
		{"@a", 0, 10, 3, []int64{-1, 0, 8, 9, 10, 100}}, // the step does not divide the range
		{"@b", 0, 10, 1, []int64{5}},
		{"@c", 1024, 4096, 1024, []int64{2048, 5000}},
		{"@m", 1048576, 4194304, 1048576, []int64{3145728, 0}},
		{"@z", 0, 1000, 100, []int64{500, 100, 100, 999, 1000}},
		{"@k", 1000, 3000, 500, []int64{1500}},
		{"@w", 0, 100, 20, []int64{0, 20, 20, 20, 40, 40, 60, 80, 80, 80, 80, 100, 100, 101}},
	}
	var maps []*Map
	for _, c := range cases {
		for _, v := range c.samples {
			fmt.Fprintf(&prog, "\t%s = lhist(%d, %d, %d, %d);\n", c.name, v, c.lo, c.hi, c.step)
		}
		maps = append(maps, &Map{Name: c.name, Kind: KindLhist, Entries: scalar(lhistOf(c.lo, c.hi, c.step, c.samples...))})
	}
	var ties []Entry
	for _, k := range []int64{7, 3, 256, 1, 5} {
		fmt.Fprintf(&prog, "\t@ties[%d] = lhist(%d, 0, 100, 10);\n", k, k*7)
		ties = append(ties, keyed(k, lhistOf(0, 100, 10, k*7)))
	}
	maps = append(maps, &Map{Name: "@ties", Kind: KindLhist, Entries: ties})
	prog.WriteString("\texit();\n}\n")
	return bpftraceCase{
		name:  "maps_lhist",
		prog:  prog.String(),
		print: func(w *Writer) ([]*Map, error) { return maps, nil },
	}
}

// statsTiesCase has avg() and stats() maps sorted by average, with ties
// and negative averages (0.17 truncates them toward zero).
func statsTiesCase() bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	var avgs, stats []Entry
	for i := int64(0); i < 23; i++ {
		k := i*11%23 - 5
		a, b := (i%5)*3-7, (i%5)*3-6
		fmt.Fprintf(&prog, "\t@avg[%d] = avg(%d); @avg[%d] = avg(%d);\n", k, a, k, b)
		fmt.Fprintf(&prog, "\t@stats[%d] = stats(%d); @stats[%d] = stats(%d);\n", k, a, k, b)
		avgs = append(avgs, keyed(k, Avg(2, a+b)))
		stats = append(stats, keyed(k, Stats(2, a+b)))
	}
	prog.WriteString("\texit();\n}\n")
	return bpftraceCase{
		name: "maps_stats_ties",
		prog: prog.String(),
		print: func(w *Writer) ([]*Map, error) {
			return []*Map{
				{Name: "@avg", Kind: KindAvg, Entries: avgs},
				{Name: "@stats", Kind: KindStats, Entries: stats},
			}, nil
		},
	}
}

func printTopDivCase() bpftraceCase {
	return bpftraceCase{
		name: "maps_print_top_div",
		prog: `BEGIN {
	@a[1] = 10; @a[2] = 20; @a[3] = 30; @a[4] = 45;
	print(@a); print(@a, 2); print(@a, 2, 10); print(@a, 0, 3); print(@a, 10);
	@h[1] = hist(10); @h[2] = hist(100); @h[2] = hist(100); @h[3] = hist(1); @h[3] = hist(1); @h[3] = hist(1);
	print(@h, 2); print(@h, 1, 2);
	@l[1] = lhist(5, 0, 10, 1); @l[1] = lhist(5, 0, 10, 1); @l[1] = lhist(5, 0, 10, 1); @l[2] = lhist(6, 0, 10, 1);
	print(@l, 1, 2);
	@s[1] = stats(10); @s[2] = stats(20); @s[3] = stats(-30);
	print(@s, 1); print(@s, 0, 5);
	@v[1] = avg(10); @v[2] = avg(20); @v[3] = avg(-31);
	print(@v, 2, 3);
	@x = 5; print(@x, 1, 2);
	@m[1] = min(7); @m[2] = min(3); print(@m, 1, 2);
	@t[1] = (10, "ten", -7); print(@t, 1, 3);
	@c = count(); print(@c);
	@u[1] = (uint32)100; print(@u, 0, 7);
	printf("end\n");
	exit();
}`,
		print: func(w *Writer) ([]*Map, error) {
			a := &Map{Name: "@a", Kind: KindInt, Entries: []Entry{keyed(1, Int(10)), keyed(2, Int(20)), keyed(3, Int(30)), keyed(4, Int(45))}}
			h := &Map{Name: "@h", Kind: KindHist, Entries: []Entry{keyed(1, histOf(10)), keyed(2, histOf(100, 100)), keyed(3, histOf(1, 1, 1))}}
			l := &Map{Name: "@l", Kind: KindLhist, Entries: []Entry{keyed(1, lhistOf(0, 10, 1, 5, 5, 5)), keyed(2, lhistOf(0, 10, 1, 6))}}
			s := &Map{Name: "@s", Kind: KindStats, Entries: []Entry{keyed(1, Stats(1, 10)), keyed(2, Stats(1, 20)), keyed(3, Stats(1, -30))}}
			v := &Map{Name: "@v", Kind: KindAvg, Entries: []Entry{keyed(1, Avg(1, 10)), keyed(2, Avg(1, 20)), keyed(3, Avg(1, -31))}}
			x := &Map{Name: "@x", Kind: KindInt, Entries: scalar(Int(5))}
			m := &Map{Name: "@m", Kind: KindMin, Entries: []Entry{keyed(1, Min(7)), keyed(2, Min(3))}}
			tu := &Map{Name: "@t", Kind: KindTuple, Entries: []Entry{keyed(1, Tuple(Int(10), String("ten"), Int(-7)))}}
			c := &Map{Name: "@c", Kind: KindCount, Entries: scalar(Count(1))}
			u := &Map{Name: "@u", Kind: KindInt, Entries: []Entry{keyed(1, IntN(100, 4, false))}}
			for _, p := range []struct {
				m        *Map
				top, div uint32
			}{
				{a, 0, 0}, {a, 2, 0}, {a, 2, 10}, {a, 0, 3}, {a, 10, 0},
				{h, 2, 0}, {h, 1, 2}, {l, 1, 2}, {s, 1, 0}, {s, 0, 5}, {v, 2, 3},
				{x, 1, 2}, {m, 1, 2}, {tu, 1, 3}, {c, 0, 0}, {u, 0, 7},
			} {
				if err := w.Map(p.m, p.top, p.div); err != nil {
					return nil, err
				}
			}
			if err := w.Printf(ParseFormat("end\n"), nil); err != nil {
				return nil, err
			}
			return []*Map{a, h, l, s, v, x, m, tu, c, u}, nil
		},
	}
}

func emptyMapsCase() bpftraceCase {
	return bpftraceCase{
		name: "maps_empty",
		prog: `BEGIN {
	@h = hist(5); @h2[1] = hist(5); @h2[2] = hist(7); @l = lhist(5, 0, 10, 1);
	@s = stats(4); @v[1] = avg(5); @c[1] = count(); @i = 3; @str = "x";
	zero(@h); zero(@h2); zero(@l); zero(@s); zero(@v); zero(@c); zero(@i);
	@gone[1] = 1; delete(@gone[1]);
	@cleared[1] = count(); clear(@cleared);
	@hc[1] = hist(1); clear(@hc);
	@sc[1] = stats(1); clear(@sc);
	@kept = 1;
	print(@gone); print(@hc); print(@sc);
	exit();
}`,
		print: func(w *Writer) ([]*Map, error) {
			zeroHist := Hist(make([]uint64, 65))
			gone := &Map{Name: "@gone", Kind: KindInt}
			hc := &Map{Name: "@hc", Kind: KindHist}
			sc := &Map{Name: "@sc", Kind: KindStats}
			for _, m := range []*Map{gone, hc, sc} {
				if err := w.Map(m, 0, 0); err != nil {
					return nil, err
				}
			}
			return []*Map{
				{Name: "@h", Kind: KindHist, Entries: scalar(zeroHist)},
				{Name: "@h2", Kind: KindHist, Entries: []Entry{keyed(1, zeroHist), keyed(2, zeroHist)}},
				{Name: "@l", Kind: KindLhist, Entries: scalar(Lhist(0, 10, 1, make([]uint64, 1002)))},
				{Name: "@s", Kind: KindStats, Entries: scalar(Stats(0, 0))},
				{Name: "@v", Kind: KindAvg, Entries: []Entry{keyed(1, Avg(0, 0))}},
				{Name: "@c", Kind: KindCount, Entries: []Entry{keyed(1, Count(0))}},
				{Name: "@i", Kind: KindInt, Entries: scalar(Int(0))},
				{Name: "@str", Kind: KindString, Entries: scalar(String("x"))},
				gone,
				{Name: "@cleared", Kind: KindCount},
				hc, sc,
				{Name: "@kept", Kind: KindInt, Entries: scalar(Int(1))},
			}, nil
		},
	}
}

// keyKindsCase has keys and values of the kinds that are not integers or
// strings; each map with several entries has distinct counts, as 0.17
// leaves such keys in hash order otherwise.
func keyKindsCase() bpftraceCase {
	return bpftraceCase{
		name: "maps_key_kinds",
		prog: `BEGIN {
	@ksym[1] = ksym(0); @ksym[2] = ksym(1);
	@inet[1] = ntop(0x0100007f); @inet[2] = ntop(pton("::1"));
	@usym[1] = usym(0); @usym[2] = usym(0x10);
	@ptr[(int8 *)5] = count(); @ptr[(int8 *)0x1000] = count(); @ptr[(int8 *)0x1000] = count();
	@ni[ntop(0x0100007f)] = count(); @ni[ntop(2)] = count(); @ni[ntop(2)] = count();
	@user[username] = 1; @probe[probe] = 2; @buf[buf("ab\x01", 3)] = 3;
	@arr[pton("::1")] = 4; @when[strftime("when %%", 0)] = 5;
	@syms[ksym(1), usym(2), 3] = 6;
	@q["a\"b\\c\n", "\xc3\xa9"] = 7;
	@ptrval = (int8 *)0x1234;
	exit();
}`,
		print: func(w *Writer) ([]*Map, error) {
			local := Inet(AFInet, []byte{127, 0, 0, 1})
			two := Inet(AFInet, []byte{2, 0, 0, 0})
			return []*Map{
				{Name: "@ksym", Kind: KindKsym, Entries: []Entry{keyed(1, Ksym(0, "")), keyed(2, Ksym(1, ""))}},
				{Name: "@inet", Kind: KindInet, Entries: []Entry{keyed(1, local), keyed(2, Inet(AFInet6, []byte{15: 1}))}},
				{Name: "@usym", Kind: KindUsym, Entries: []Entry{keyed(1, Usym(0, "")), keyed(2, Usym(0x10, ""))}},
				{Name: "@ptr", Kind: KindCount, Entries: []Entry{
					{Key: []Value{Pointer(5)}, Value: Count(1)}, {Key: []Value{Pointer(0x1000)}, Value: Count(2)}}},
				{Name: "@ni", Kind: KindCount, Entries: []Entry{
					{Key: []Value{local}, Value: Count(1)}, {Key: []Value{two}, Value: Count(2)}}},
				{Name: "@user", Kind: KindInt, Entries: []Entry{{Key: []Value{Username("root")}, Value: Int(1)}}},
				{Name: "@probe", Kind: KindInt, Entries: []Entry{{Key: []Value{Probe("BEGIN")}, Value: Int(2)}}},
				{Name: "@buf", Kind: KindInt, Entries: []Entry{{Key: []Value{Buffer([]byte("ab\x01"))}, Value: Int(3)}}},
				{Name: "@arr", Kind: KindInt, Entries: []Entry{{Key: []Value{Array(
					IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false),
					IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false),
					IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false),
					IntN(0, 1, false), IntN(0, 1, false), IntN(0, 1, false), IntN(1, 1, false))}, Value: Int(4)}}},
				{Name: "@when", Kind: KindInt, Entries: []Entry{{Key: []Value{Timestamp("when %")}, Value: Int(5)}}},
				{Name: "@syms", Kind: KindInt, Entries: []Entry{{Key: []Value{Ksym(1, ""), Usym(2, ""), Int(3)}, Value: Int(6)}}},
				{Name: "@q", Kind: KindInt, Entries: []Entry{{Key: []Value{String("a\"b\\c\n"), String("\xc3\xa9")}, Value: Int(7)}}},
				// 0.17 keeps pointers stored in maps as plain integers.
				{Name: "@ptrval", Kind: KindInt, Entries: scalar(Int(0x1234))},
			}, nil
		},
	}
}

// helperErrorCase makes map_update_elem fail under -k with a one-key map.
func helperErrorCase() bpftraceCase {
	const prog = "BEGIN { @a[1] = 1; @a[2] = 2; exit(); }"
	return bpftraceCase{
		name:  "helper_error",
		prog:  prog,
		flags: []string{"-k"},
		env:   []string{"BPFTRACE_MAP_KEYS_MAX=1"},
		print: func(w *Writer) ([]*Map, error) {
			// 0.17 locates the failed update at the assigned value.
			e := HelperError{Helper: "map_update_elem", Retcode: -7, Line: 1, Column: 26}
			e.Warning = "stdin:1:26-27: WARNING: " + e.Message(true) + "\n" + prog + "\n" + strings.Repeat(" ", 25) + "~\n"
			if err := w.HelperError(e); err != nil {
				return nil, err
			}
			return []*Map{{Name: "@a", Kind: KindInt, Entries: []Entry{keyed(1, Int(1))}}}, nil
		},
	}
}

func catCase() bpftraceCase {
	return bpftraceCase{
		name: "cat",
		prog: `BEGIN { cat("/proc/sys/kernel/ostype"); cat("/proc/sys/kernel/%s", "ostype"); printf("|\n"); exit(); }`,
		print: func(w *Writer) ([]*Map, error) {
			f := ParseFormat("/proc/sys/kernel/%s")
			if err := f.Check("cat", []Kind{KindString}); err != nil {
				return nil, err
			}
			path, err := f.Sprint([]Value{String("ostype")})
			if err != nil {
				return nil, err
			}
			for _, p := range []string{"/proc/sys/kernel/ostype", path} {
				data, err := os.ReadFile(p)
				if err != nil {
					return nil, err
				}
				if err := w.Cat(string(data)); err != nil {
					return nil, err
				}
			}
			return nil, w.Printf(ParseFormat("|\n"), nil)
		},
	}
}

// joinCase joins the argv of a command bpftrace starts with -c.
func joinCase() bpftraceCase {
	return bpftraceCase{
		name:  "join",
		flags: []string{"-c", `/bin/true a "b c" ` + "\xc3\xa9"},
		prog: `tracepoint:syscalls:sys_enter_execve /pid == cpid/ {
	join(args->argv); join(args->argv, ", "); join(args->argv, "");
	exit();
}`,
		print: func(w *Writer) ([]*Map, error) {
			argv := []string{"/bin/true", "a", `"b`, `c"`, "\xc3\xa9"}
			for _, delim := range []string{" ", ", ", ""} {
				if err := w.Join(argv, delim); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
	}
}
