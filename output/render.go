package output

import (
	"fmt"
	"strconv"
)

// Indentation of stack frames: bpftrace indents a stack printed as a value
// by 8 spaces and one printed as a map key by 4.
const (
	valueStackIndent = 8
	keyStackIndent   = 4
)

// A style is how values are printed: as text or JSON, in the forms of
// bpftrace 0.26.1 or, when old, of 0.17.
type style struct {
	json bool
	old  bool
}

// quotedInJSON reports whether a value of kind k is a JSON string.
// bpftrace 0.17 (old) does not quote strftime() results, strerror()
// texts, MAC addresses or cgroup paths, so those come out as bare
// (invalid) JSON, as 0.17 prints them; 0.26.1 quotes them.
func quotedInJSON(k Kind, old bool) bool {
	switch k {
	case KindString, KindBuffer, KindKsym, KindUsym, KindKstack, KindUstack,
		KindInet, KindUsername, KindProbe:
		return true
	case KindTimestamp, KindStrerror, KindMacAddr, KindCgroupPath:
		return !old
	}
	return false
}

// appendValue appends v as bpftrace prints a map value or a print()ed
// value, with integers divided by div (print's third argument; 1 when
// absent). Tuples and arrays pass div on to their elements, as 0.17 does.
func appendValue(b []byte, v Value, div uint64, st style) ([]byte, error) {
	if st.json && quotedInJSON(v.kind, st.old) {
		start := len(b)
		b, err := appendValue(b, v, div, style{old: st.old})
		if err != nil {
			return b, err
		}
		text := string(b[start:]) // b[:start] is about to be overwritten
		return appendJSONString(b[:start], text), nil
	}
	switch v.kind {
	case KindInt, KindSum:
		if v.s != "" && !st.json {
			return append(b, v.s...), nil // an enum's name
		}
		return appendInt(b, v.n, v.signed, div, st), nil
	case KindBool:
		return strconv.AppendBool(b, v.n != 0), nil
	case KindCount:
		return appendInt(b, v.n, false, div, st), nil
	case KindMin, KindMax:
		return appendInt(b, v.n, true, div, st), nil
	case KindAvg:
		return appendInt(b, uint64(v.average()/int64(div)), true, 1, st), nil
	case KindStats:
		return appendStats(b, v, st), nil
	case KindString, KindUsername, KindProbe, KindTimestamp, KindMacAddr,
		KindCgroupPath, KindInet:
		return append(b, v.s...), nil
	case KindBuffer:
		return appendHexBuffer(b, v.s, true, true), nil
	case KindKsym, KindUsym:
		return appendSymbol(b, v.n, v.s), nil
	case KindKstack, KindUstack:
		return appendStack(b, v, valueStackIndent), nil
	case KindStrerror:
		return append(b, strerror(int64(v.n))...), nil
	case KindPointer:
		if st.json {
			// 0.26.1's JSON keeps pointers numbers.
			return appendInt(b, v.n, false, 1, st), nil
		}
		b = append(b, "0x"...)
		return strconv.AppendUint(b, v.n, 16), nil
	case KindTuple:
		open, sep, close := "(", ", ", ")"
		if st.json {
			open, sep, close = "[", ",", "]"
		}
		return appendElems(b, v.elems(), open, sep, close, div, st)
	case KindArray:
		return appendElems(b, v.elems(), "[", ",", "]", div, st)
	case KindRecord:
		return appendRecord(b, v, div, st)
	case KindNone:
		return append(b, "null"...), nil
	}
	return b, fmt.Errorf("cannot print a %s value", v.kind)
}

// appendRecord prints a struct as bpftrace does: "{ .a = 1, .b = 2 }", or
// in JSON as "{ "a": 1, "b": 2 }" (0.17) or "{"a": 1, "b": 2}" (0.26.1).
func appendRecord(b []byte, v Value, div uint64, st style) ([]byte, error) {
	open, eq, sep, close := "{ ", " = ", ", ", " }"
	if st.json {
		eq = ": "
		if !st.old {
			open, close = "{", "}"
		}
	}
	b = append(b, open...)
	names := v.fieldNames()
	for i, e := range v.elems() {
		if i > 0 {
			b = append(b, sep...)
		}
		if st.json {
			b = appendJSONString(b, names[i])
		} else {
			b = append(append(b, '.'), names[i]...)
		}
		b = append(b, eq...)
		var err error
		if b, err = appendValue(b, e, div, st); err != nil {
			return b, err
		}
	}
	return append(b, close...), nil
}

func appendElems(b []byte, elems []Value, open, sep, close string, div uint64, st style) ([]byte, error) {
	b = append(b, open...)
	for i, e := range elems {
		if i > 0 {
			b = append(b, sep...)
		}
		var err error
		if b, err = appendValue(b, e, div, st); err != nil {
			return b, err
		}
	}
	return append(b, close...), nil
}

// appendInt appends an integer divided by div. 0.26.1's JSON quotes one
// that a double cannot hold exactly, as JSON readers keep numbers in
// doubles.
func appendInt(b []byte, n uint64, signed bool, div uint64, st style) []byte {
	var exact bool
	if signed {
		n = uint64(int64(n) / int64(div))
		exact = int64(float64(int64(n))) == int64(n) && float64(int64(n)) != 0x1p63
	} else {
		n /= div
		exact = uint64(float64(n)) == n && float64(n) != 0x1p64
	}
	quote := st.json && !st.old && !exact
	if quote {
		b = append(b, '"')
	}
	if signed {
		b = strconv.AppendInt(b, int64(n), 10)
	} else {
		b = strconv.AppendUint(b, n, 10)
	}
	if quote {
		b = append(b, '"')
	}
	return b
}

// appendStats appends a stats() value: "count 1, average 5, total 5" in
// 0.17's text, a record "{ .count = 1, .average = 5, .total = 5 }" in
// 0.26.1's, an object in JSON.
func appendStats(b []byte, v Value, st style) []byte {
	count, avg, total := int64(v.n), v.average(), v.m
	switch {
	case st.json:
		b = append(b, `{"count": `...)
		b = appendInt(b, uint64(count), true, 1, st)
		b = append(b, `, "average": `...)
		b = appendInt(b, uint64(avg), true, 1, st)
		b = append(b, `, "total": `...)
		b = appendInt(b, uint64(total), true, 1, st)
		return append(b, '}')
	case !st.old:
		b = append(b, "{ .count = "...)
		b = strconv.AppendInt(b, count, 10)
		b = append(b, ", .average = "...)
		b = strconv.AppendInt(b, avg, 10)
		b = append(b, ", .total = "...)
		b = strconv.AppendInt(b, total, 10)
		return append(b, " }"...)
	}
	b = append(b, "count "...)
	b = strconv.AppendInt(b, count, 10)
	b = append(b, ", average "...)
	b = strconv.AppendInt(b, avg, 10)
	b = append(b, ", total "...)
	return strconv.AppendInt(b, total, 10)
}

// appendKey appends one element of a map key as bpftrace prints keys:
// integers always signed in 0.17 and by their type's sign in 0.26.1,
// stacks indented by 4, structs without spaces in 0.17 ("{.a=1,.b=2}")
// and as values in 0.26.1.
func appendKey(b []byte, v Value, old bool) ([]byte, error) {
	switch v.kind {
	case KindInt:
		if v.s != "" {
			return append(b, v.s...), nil // an enum's name
		}
		if !old && !v.signed {
			return strconv.AppendUint(b, v.n, 10), nil
		}
		return strconv.AppendInt(b, int64(v.n), 10), nil
	case KindBool:
		return strconv.AppendBool(b, v.n != 0), nil
	case KindKstack, KindUstack:
		return appendStack(b, v, keyStackIndent), nil
	case KindArray:
		b = append(b, '[')
		for i, e := range v.elems() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendKey(b, e, old); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case KindTuple:
		// A tuple inside a key, as bpftrace 0.26.1 takes them.
		b = append(b, '(')
		for i, e := range v.elems() {
			if i > 0 {
				b = append(b, ", "...)
			}
			var err error
			if b, err = appendKey(b, e, old); err != nil {
				return b, err
			}
		}
		return append(b, ')'), nil
	case KindRecord:
		open, eq, sep, close := "{", "=", ",", "}"
		if !old {
			open, eq, sep, close = "{ ", " = ", ", ", " }"
		}
		b = append(b, open...)
		names := v.fieldNames()
		for i, e := range v.elems() {
			if i > 0 {
				b = append(b, sep...)
			}
			b = append(append(append(b, '.'), names[i]...), eq...)
			var err error
			if b, err = appendKey(b, e, old); err != nil {
				return b, err
			}
		}
		return append(b, close...), nil
	case KindString, KindBuffer, KindKsym, KindUsym, KindInet, KindUsername,
		KindProbe, KindTimestamp, KindMacAddr, KindPointer, KindNone:
		return appendValue(b, v, 1, style{old: old})
	}
	// 0.17 aborts ("invalid mapkey argument type") on any other key.
	return b, fmt.Errorf("a %s value cannot be a map key", v.kind)
}

// appendSymbol appends a resolved symbol, or the address as C++ streams a
// void pointer when there is none: "0" for null, else 0x and hex digits.
func appendSymbol(b []byte, addr uint64, symbol string) []byte {
	if symbol != "" {
		return append(b, symbol...)
	}
	if addr == 0 {
		return append(b, '0')
	}
	b = append(b, "0x"...)
	return strconv.AppendUint(b, addr, 16)
}

// appendStack appends a stack as bpftrace's get_stack prints it: a newline,
// then one line per frame. A stack without frames is an empty string.
func appendStack(b []byte, v Value, indent int) []byte {
	frames := v.frames()
	if len(frames) == 0 {
		return b
	}
	b = append(b, '\n')
	for _, f := range frames {
		switch {
		case v.mode == StackRaw, v.mode == StackBuildID && f.BuildID == "":
			b = strconv.AppendUint(b, f.Addr, 16)
			b = append(b, '\n')
			continue
		case v.mode == StackBuildID:
			b = append(b, f.BuildID...)
			b = append(b, " 0x"...)
			if f.Offset < 0x10 {
				b = append(b, '0') // two digits at least, as bpftrace pads it
			}
			b = strconv.AppendUint(b, f.Offset, 16)
			b = append(b, '\n')
			continue
		}
		for _, in := range f.Inlined {
			b = appendFrameStart(b, v.mode, f.Addr, indent)
			if v.mode == StackPerf {
				b = append(b, in.Name...)
				b = append(b, " (inlined)\n"...)
				continue
			}
			b = append(b, "[inlined] "...)
			b = append(b, in.Name...)
			b = appendSource(b, in.Source)
			b = append(b, '\n')
		}
		b = appendFrameStart(b, v.mode, f.Addr, indent)
		if f.Symbol != "" {
			b = append(b, f.Symbol...)
			b = append(b, '+')
			b = strconv.AppendUint(b, f.Offset, 10)
		} else {
			b = appendSymbol(b, f.Addr, "")
		}
		if v.mode != StackPerf {
			b = appendSource(b, f.Source)
		}
		if v.mode == StackPerf && v.kind == KindUstack {
			switch {
			case f.Symbol == "":
				b = append(b, " ([unknown])"...)
			default:
				b = append(b, " ("...)
				b = append(b, f.Module...)
				b = append(b, ')')
			}
		}
		b = append(b, '\n')
	}
	return b
}

// appendFrameStart begins a line of a stack: the indent, or in perf
// mode a tab and the address in hex.
func appendFrameStart(b []byte, mode StackMode, addr uint64, indent int) []byte {
	if mode == StackPerf {
		b = append(b, '\t')
		b = strconv.AppendUint(b, addr, 16)
		return append(b, ' ')
	}
	for range indent {
		b = append(b, ' ')
	}
	return b
}

// appendSource appends a frame's source location, "@FILE:LINE", as
// bpftrace 0.26.1's show_debug_info prints it; nothing for none.
func appendSource(b []byte, source string) []byte {
	if source == "" {
		return b
	}
	return append(append(b, '@'), source...)
}

// appendHexBuffer appends buf() bytes as bpftrace's hex_format_buffer does:
// printable ASCII kept when keepASCII, other bytes as \xNN when escape, or
// as space-separated hex pairs otherwise (%rh).
func appendHexBuffer(b []byte, data string, keepASCII, escape bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case keepASCII && c >= 32 && c <= 126:
			b = append(b, c)
		case escape:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, hex[c>>4], hex[c&15])
			if i < len(data)-1 {
				b = append(b, ' ')
			}
		}
	}
	return b
}

// appendJSONString appends s quoted and escaped as bpftrace 0.17's
// json_escape does. Its escape tests a signed char, so every byte from 0x80
// up comes out as \uffffffXX, breaking UTF-8 text as 0.17 does.
func appendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		case c >= 0x80:
			b = append(b, `\uffffff`...)
			b = append(b, hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
