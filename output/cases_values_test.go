package output

import "time"

func init() {
	bpftraceCases = append(bpftraceCases,
		printCase("print_values",
			i64("5", 5), i64("-5", -5), i64("0x7fffffffffffffff", 0x7fffffffffffffff),
			arg{"(uint64)-1", Uint(1<<64 - 1)},
			arg{"(int8)-1", IntN(0xff, 1, true)}, arg{"(uint8)255", IntN(0xff, 1, false)},
			arg{"(int16)-300", IntN(uint64(0x10000-300), 2, true)}, arg{"(uint32)-1", IntN(0xffffffff, 4, false)},
			i64("1 == 1", 1),
			arg{`"str"`, String("str")}, arg{`""`, String("")},
			arg{`"s\n\t\x01\x1f\"\\\xc3\xa9"`, String("s\n\t\x01\x1f\"\\\xc3\xa9")},
			arg{"comm", String("bpftrace")},
			arg{`(1, "a", (2, -3), "")`, Tuple(Int(1), String("a"), Tuple(Int(2), Int(-3)), String(""))},
			arg{`((int8)-1, (uint16)65535, "x\"y")`, Tuple(IntN(0xff, 1, true), IntN(0xffff, 2, false), String("x\"y"))},
			arg{`pton("1.2.3.4")`, Array(IntN(1, 1, false), IntN(2, 1, false), IntN(3, 1, false), IntN(4, 1, false))},
			arg{"ksym(0)", Ksym(0, "")}, arg{"ksym(0x1234)", Ksym(0x1234, "")}, arg{"usym(0)", Usym(0, "")},
			arg{"ntop(0x0100007f)", Inet(AFInet, []byte{127, 0, 0, 1})},
			arg{`ntop(pton("fe80::a:b"))`, Inet(AFInet6, []byte{0xfe, 0x80, 13: 0xa, 15: 0xb})},
			arg{"username", Username("root")}, arg{"probe", Probe("BEGIN")},
			arg{"strerror(1)", Strerror(1)}, arg{"strerror(200)", Strerror(200)},
			arg{`buf("ab\x00\x01\x7f\x80 ", 7)`, Buffer([]byte("ab\x00\x01\x7f\x80 "))},
			arg{`(1, ntop(0x0100007f), "z")`, Tuple(Int(1), Inet(AFInet, []byte{127, 0, 0, 1}), String("z"))},
		),
		// time() with formats whose output does not depend on the clock.
		bpftraceCase{
			name: "time",
			prog: `BEGIN { time("hello %%\n"); time("tab\t\"quoted\"\n"); time("%Q %f\n"); time(""); time("end\n"); exit(); }`,
			print: func(w *Writer) ([]*Map, error) {
				for _, f := range []string{"hello %%\n", "tab\t\"quoted\"\n", "%Q %f\n"} {
					if err := w.Time(f, fixedTime); err != nil {
						return nil, err
					}
				}
				if err := w.Time("", fixedTime); err != ErrStrftime {
					return nil, err
				}
				return nil, w.Time("end\n", fixedTime)
			},
		},
	)
}

var fixedTime = time.Date(2026, 11, 22, 3, 55, 8, 214230999, time.UTC)
