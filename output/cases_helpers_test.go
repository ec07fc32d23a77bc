package output

import (
	"fmt"
	"math/bits"
	"strings"
)

// btString quotes s as a bpftrace string literal.
func btString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// arg is a bpftrace expression and the Value the runtime would decode
// from what it yields.
type arg struct {
	expr string
	v    Value
}

// call is one printf, system or cat call of a case.
type call struct {
	fn     string // "printf" when empty
	format string
	args   []arg
}

// callsCase is a BEGIN program making the calls, then exiting.
func callsCase(name string, flags []string, calls ...call) bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	for _, c := range calls {
		fn := c.fn
		if fn == "" {
			fn = "printf"
		}
		prog.WriteString("\t" + fn + "(" + btString(c.format))
		for _, a := range c.args {
			prog.WriteString(", " + a.expr)
		}
		prog.WriteString(");\n")
	}
	prog.WriteString("\texit();\n}\n")
	return bpftraceCase{
		name:  name,
		prog:  prog.String(),
		flags: flags,
		print: func(w *Writer) ([]*Map, error) {
			for _, c := range calls {
				f := ParseFormat(c.format)
				var kinds []Kind
				var values []Value
				for _, a := range c.args {
					kinds = append(kinds, a.v.Kind())
					values = append(values, a.v)
				}
				fn := c.fn
				if fn == "" {
					fn = "printf"
				}
				if err := f.Check(fn, kinds); err != nil {
					return nil, err
				}
				var err error
				switch fn {
				case "printf":
					err = w.Printf(f, values)
				case "system":
					err = w.System(fakeShell(f, values))
				}
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
	}
}

// fakeShell stands in for running system()'s command in the cases, which
// only use echo.
func fakeShell(f *Format, args []Value) string {
	cmd, err := f.Sprint(args)
	if err != nil {
		return err.Error()
	}
	return strings.TrimPrefix(cmd, "echo ") + "\n"
}

// printCase is a BEGIN program print()ing each expression, then exiting.
func printCase(name string, values ...arg) bpftraceCase {
	var prog strings.Builder
	prog.WriteString("BEGIN {\n")
	for _, a := range values {
		prog.WriteString("\tprint(" + a.expr + ");\n")
	}
	prog.WriteString("\texit();\n}\n")
	return bpftraceCase{
		name: name,
		prog: prog.String(),
		print: func(w *Writer) ([]*Map, error) {
			for _, a := range values {
				if err := w.Value(a.v); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
	}
}

// histBucket is where bpftrace 0.17's hist() puts v: its log2 stops at
// 2^31, so larger values share the [2G, 4G) bucket.
func histBucket(v int64) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return 1
	}
	return 2 + min(bits.Len64(uint64(v))-1, 31)
}

// histOf returns the hist() value counting samples.
func histOf(samples ...int64) Value {
	buckets := make([]uint64, 65)
	for _, v := range samples {
		buckets[histBucket(v)]++
	}
	return Hist(buckets)
}

// lhistOf returns the lhist(min, max, step) value counting samples, as
// 0.17 buckets them: a value equal to max, or above the last full step,
// lands in the open bucket above.
func lhistOf(lo, hi, step int64, samples ...int64) Value {
	buckets := make([]uint64, 1002)
	n := (hi - lo) / step
	for _, v := range samples {
		switch {
		case v < lo:
			buckets[0]++
		case v > hi:
			buckets[n+1]++
		default:
			buckets[1+(v-lo)/step]++
		}
	}
	return Lhist(lo, hi, step, buckets)
}

// keyed returns a map entry with an integer key.
func keyed(k int64, v Value) Entry { return Entry{Key: []Value{Int(k)}, Value: v} }

// scalar returns the single entry of a map without keys.
func scalar(v Value) []Entry { return []Entry{{Value: v}} }
