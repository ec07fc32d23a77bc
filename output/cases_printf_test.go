package output

func i64(expr string, v int64) arg { return arg{expr, Int(v)} }

func init() {
	bpftraceCases = append(bpftraceCases,
		callsCase("printf_integers", nil,
			call{format: "%d|%5d|%-5d|%05d|%.3d|%8.3d|%-8.3d|%08d|%-08d\n", args: []arg{
				i64("42", 42), i64("42", 42), i64("42", 42), i64("-42", -42), i64("5", 5),
				i64("5", 5), i64("5", 5), i64("-5", -5), i64("-5", -5)}},
			call{format: "%u %x %X %o %lu %lx %llX %lo %i\n", args: []arg{
				i64("-1", -1), i64("-1", -1), i64("-1", -1), i64("-1", -1), i64("-1", -1),
				i64("-1", -1), i64("-1", -1), i64("-1", -1)}},
			call{format: "%hhd %hd %hhu %hu %hhx %hX %hho\n", args: []arg{
				i64("300", 300), i64("70000", 70000), i64("-1", -1), i64("-1", -1),
				i64("511", 511), i64("-1", -1), i64("255", 255)}},
			call{format: "%jd %zd %td %ju %zu %tu %jx %zx %tx\n", args: []arg{
				i64("-5", -5), i64("-5", -5), i64("-5", -5), i64("-5", -5), i64("-5", -5),
				i64("-5", -5), i64("-5", -5), i64("-5", -5), i64("-5", -5)}},
			call{format: "%d %d %ld %lld %.0d|%.0x|%5.0d|\n", args: []arg{
				i64("5000000000", 5000000000), i64("-5000000000", -5000000000),
				i64("5000000000", 5000000000), i64("-5000000000", -5000000000),
				i64("0", 0), i64("0", 0), i64("0", 0)}},
			call{format: "%u %d %x %d %lu %u\n", args: []arg{
				{"(uint8)200", IntN(200, 1, false)}, {"(int16)-2", IntN(0xfffe, 2, true)},
				{"(uint32)-1", IntN(0xffffffff, 4, false)}, {"(int8)-1", IntN(0xff, 1, true)},
				{"(int8)-1", IntN(0xff, 1, true)}, {"(int32)-7", IntN(0xfffffff9, 4, true)}}},
			call{format: "%d %x %p %s\n", args: []arg{
				{"(int8 *)16", Pointer(16)}, {"(int8 *)255", Pointer(255)}, {"(int8 *)4096", Pointer(4096)},
				{"comm", String("bpftrace")}}},
			call{format: "%d %d\n", args: []arg{i64("1 < 2", 1), i64("1 > 2", 0)}},
		),
		callsCase("printf_chars_pointers", nil,
			call{format: "%c%c%c|%5c|%-5c|%05c|\n", args: []arg{
				i64("65", 65), i64("321", 321), i64("-191", -191), i64("66", 66), i64("67", 67), i64("68", 68)}},
			call{format: "a%cb%c%s\n", args: []arg{i64("0", 0), i64("0", 0), arg{`"c"`, String("c")}}},
			call{format: "[%-5c]\n", args: []arg{i64("0", 0)}},
			call{format: "%p %p %5p|%-20p|%08p|%.8p|%8p|%-8p|\n", args: []arg{
				i64("0", 0), i64("1", 1), i64("2", 2), i64("3", 3), i64("4096", 4096),
				i64("4096", 4096), i64("0", 0), i64("0", 0)}},
			call{format: "%hhp %lp %zp %p\n", args: []arg{
				i64("0x1234", 0x1234), i64("0x1234", 0x1234), i64("0x1234", 0x1234),
				i64("-1", -1)}},
		),
		callsCase("printf_strings", nil,
			call{format: "%s|%10s|%-10s|%.2s|%5.1s|%-5.1s|%.0s|%05s|\n", args: []arg{
				{`"bpftrace"`, String("bpftrace")}, {`"abc"`, String("abc")}, {`"abc"`, String("abc")},
				{`"abc"`, String("abc")}, {`"abc"`, String("abc")}, {`"abc"`, String("abc")},
				{`"abc"`, String("abc")}, {`"ab"`, String("ab")}}},
			call{format: "[%s] [%s]\n", args: []arg{{`""`, String("")}, {`"tab\there"`, String("tab\there")}}},
			call{format: "%s %s\n", args: []arg{{`"\xc3\xa9t\xc3\xa9"`, String("\xc3\xa9t\xc3\xa9")}, {`"q\"b\\s"`, String("q\"b\\s")}}},
			call{format: "%s|%s|%s|%s|%s|%s\n", args: []arg{
				{"probe", Probe("BEGIN")}, {"ksym(0)", Ksym(0, "")}, {"ksym(1)", Ksym(1, "")},
				{"usym(0)", Usym(0, "")}, {"username", Username("root")}, {"strerror(2)", Strerror(2)}}},
			call{format: "%s|%s|%s|%s|%-12s|%.4s|\n", args: []arg{
				{"ntop(0x0100007f)", Inet(AFInet, []byte{127, 0, 0, 1})},
				{`ntop(pton("fe80::1:2"))`, Inet(AFInet6, []byte{0xfe, 0x80, 13: 1, 15: 2})},
				{`ntop(pton("::ffff:a01:203"))`, Inet(AFInet6, []byte{10: 0xff, 11: 0xff, 12: 10, 1, 2, 3})},
				{`ntop(pton("::102:304"))`, Inet(AFInet6, []byte{12: 1, 2, 3, 4})},
				{"ntop(0x0100007f)", Inet(AFInet, []byte{127, 0, 0, 1})},
				{"ntop(0x0100007f)", Inet(AFInet, []byte{127, 0, 0, 1})}}},
			call{format: "%s|%s|%s|%s\n", args: []arg{
				{`ntop(pton("1:0:0:1:0:0:0:1"))`, Inet(AFInet6, []byte{1: 1, 7: 1, 15: 1})},
				{`ntop(pton("::"))`, Inet(AFInet6, make([]byte, 16))},
				{`ntop(pton("1::"))`, Inet(AFInet6, []byte{1: 1, 15: 0})},
				{`ntop(pton("1:2:3:4:5:6:0:8"))`, Inet(AFInet6, []byte{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 0, 0, 8})}}},
			call{format: "%s %s %s\n", args: []arg{
				{"strerror(0)", Strerror(0)}, {"strerror(41)", Strerror(41)}, {"strerror(133)", Strerror(133)}}},
		),
		callsCase("printf_buffers", nil,
			call{format: "%r|%rx|%rh|%s\n", args: []arg{
				{`buf("ab\x01\xff ~\x7f", 7)`, Buffer([]byte("ab\x01\xff ~\x7f"))},
				{`buf("ab\x01\xff ~\x7f", 7)`, Buffer([]byte("ab\x01\xff ~\x7f"))},
				{`buf("ab\x01\xff ~\x7f", 7)`, Buffer([]byte("ab\x01\xff ~\x7f"))},
				{`"x"`, String("x")}}},
			call{format: "%5r|%-4rx|%.2rh|%r|\n", args: []arg{
				{`buf("ab", 2)`, Buffer([]byte("ab"))}, {`buf("ab", 2)`, Buffer([]byte("ab"))},
				{`buf("ab", 2)`, Buffer([]byte("ab"))}, {`buf("", 0)`, Buffer(nil)}}},
			call{format: "% %r|%%r|\n", args: []arg{{`buf("ab", 2)`, Buffer([]byte("ab"))}, {`buf("ab", 2)`, Buffer([]byte("ab"))}}},
		),
		callsCase("printf_literals", nil,
			call{format: "100%% %d %% %%\n", args: []arg{i64("7", 7)}},
			call{format: "% %d|\n", args: []arg{i64("1", 1)}},
			call{format: "%5%%d|\n", args: []arg{i64("1", 1)}},
			call{format: "%y %-05.3y %lly %d\n", args: []arg{i64("3", 3)}},
			call{format: "%%%d%%\n", args: []arg{i64("5", 5)}},
			call{format: "%ld%%%d\n", args: []arg{i64("50", 50), i64("3", 3)}},
			call{format: "%%d %d\n", args: []arg{i64("1", 1), i64("2", 2)}},
			call{format: "no verbs 100%% %+d %y\n"},
			call{format: "%d trailing %+d %5 %\n", args: []arg{i64("9", 9)}},
			call{format: "%.3s%s%.10d\n", args: []arg{{`"abcdef"`, String("abcdef")}, {`""`, String("")}, i64("-12", -12)}},
			call{format: ""},
			call{format: "%-d|%-0d|%00d|%007d|\n", args: []arg{i64("1", 1), i64("2", 2), i64("3", 3), i64("4", 4)}},
		),
		callsCase("system", []string{"--unsafe"},
			call{fn: "system", format: "echo %d %s", args: []arg{i64("5", 5), {`"x"`, String("x")}}},
			call{fn: "system", format: "echo 100%%"},
		),
	)
}
