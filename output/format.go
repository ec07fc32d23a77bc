package output

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ArgKind is what a printf-style verb takes, or what an argument can be
// printed as.
type ArgKind uint8

const (
	// ArgNone is a value printf cannot print: tuples, arrays, aggregations.
	ArgNone ArgKind = iota
	// ArgInteger is an integer or a pointer: %d %u %o %x %X %c %p.
	ArgInteger
	// ArgString is a string or a value bpftrace resolves to text (symbols,
	// stacks, addresses, user names, probe names, times, MAC addresses,
	// cgroup paths, error messages): %s.
	ArgString
	// ArgBuffer is a buf() value: %r %rx %rh.
	ArgBuffer
)

// String returns bpftrace's name for the kind's type, as in its messages.
func (k ArgKind) String() string {
	switch k {
	case ArgInteger:
		return "integer"
	case ArgString:
		return "string"
	case ArgBuffer:
		return "buffer"
	}
	return "none"
}

// ArgKindOf reports what a value of kind k prints as in printf, system
// and cat.
func ArgKindOf(k Kind) ArgKind {
	switch k {
	case KindInt, KindPointer, KindBool:
		return ArgInteger
	case KindString, KindKsym, KindUsym, KindKstack, KindUstack, KindInet,
		KindUsername, KindProbe, KindTimestamp, KindStrerror, KindMacAddr,
		KindCgroupPath:
		return ArgString
	case KindBuffer:
		return ArgBuffer
	}
	return ArgNone
}

// Verb is one conversion of a format as bpftrace 0.17 finds them: a '%',
// an optional '-', digits, an optional precision, and one of s c d u o x X
// p r rx rh, the integer ones optionally after hh h l ll j z or t. Other
// '%' sequences are not verbs and take no argument: "%%" and "%+d" are
// literal text to 0.17 (see Format).
type Verb struct {
	Offset int     // byte offset of the verb's '%' in the format
	Text   string  // the verb as written, as "%-8.3lld"
	Arg    ArgKind // what it takes

	left   bool // '-'
	zero   bool // a '0' before the width
	width  int
	prec   int    // -1 when absent
	length string // hh h l ll j z t, or ""
	conv   string // s c d u o x X p r rx rh gr
}

// token is the verb's conversion without flags, width and precision, as
// 0.17 names it in messages: "lld", "s", "rx".
func (v *Verb) token() string { return v.length + v.conv }

// plain reports whether the verb has no flag, width or precision.
func (v *Verb) plain() bool { return !v.left && !v.zero && v.width == 0 && v.prec < 0 }

// Format is a parsed printf(), system() or cat() format.
//
// bpftrace 0.17 cuts a format after each verb and hands each piece, the
// literal text before the verb included, to C's snprintf with that verb's
// argument; the text after the last verb it copies as is. So "%%" prints
// "%" before a verb but "%%" after the last one, and "%" sequences in the
// text before a verb that C reads as conversions would read arguments
// that are not there. Format reproduces all of this, and Check rejects the
// last case, which 0.17 accepts and prints garbage for.
type Format struct {
	src   string
	verbs []Verb
	parts []part
	tail  string
}

// part is the output of one snprintf call of 0.17: lit, then the verb's
// argument unless the text before it swallowed the verb's '%' (as "% %d"
// does) or C does not know the conversion (as "%5r").
type part struct {
	lit    string
	active bool
	bad    *FormatError // a conversion in the text that would read an argument
}

// FormatError is a format, or a call's arguments, that bpftrace rejects.
type FormatError struct {
	Func   string // the call at fault, "printf", "system" or "cat"; "" when formatting
	Offset int    // byte offset in the format of the verb at fault; -1 when the call as a whole is
	Msg    string // what is wrong, as 0.17 words it where 0.17 rejects the call
}

// Error gives "printf: message", or the message alone without Func.
func (e *FormatError) Error() string {
	if e.Func == "" {
		return e.Msg
	}
	return e.Func + ": " + e.Msg
}

// ParseFormat splits a format (escape sequences already resolved) into
// verbs and literal text, as bpftrace 0.17 does. Every string parses;
// Check reports what is wrong with a call.
func ParseFormat(format string) *Format {
	f := &Format{src: format}
	start := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		v, end, ok := matchVerb(format, i)
		if !ok {
			continue
		}
		f.verbs = append(f.verbs, v)
		f.parts = append(f.parts, scanPart(format, start, &f.verbs[len(f.verbs)-1], end))
		start = end
		i = end - 1
	}
	f.tail = format[start:]
	return f
}

// String returns the format as written.
func (f *Format) String() string { return f.src }

// Verbs returns the format's verbs in order; a call takes one argument per
// verb.
func (f *Format) Verbs() []Verb { return f.verbs }

// matchVerb matches 0.17's verb pattern at s[i] == '%'.
func matchVerb(s string, i int) (Verb, int, bool) {
	v := Verb{Offset: i, prec: -1}
	j := i + 1
	if j < len(s) && s[j] == '-' {
		v.left = true
		j++
	}
	for j < len(s) && s[j] == '0' {
		v.zero = true
		j++
	}
	w := j
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	v.width = atoiClamp(s[w:j])
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		p := j + 1
		j = p
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		v.prec = atoiClamp(s[p:j])
	}
	rest := s[j:]
	switch {
	case strings.HasPrefix(rest, "rx"), strings.HasPrefix(rest, "rh"):
		v.conv, v.Arg = rest[:2], ArgBuffer
	case strings.HasPrefix(rest, "gr"):
		// bpftrace 0.26.1's GFP flags, by name.
		v.conv, v.Arg = "gr", ArgInteger
	case strings.HasPrefix(rest, "r"):
		v.conv, v.Arg = "r", ArgBuffer
	case strings.HasPrefix(rest, "s"):
		v.conv, v.Arg = "s", ArgString
	case strings.HasPrefix(rest, "c"):
		v.conv, v.Arg = "c", ArgInteger
	default:
		for _, l := range [...]string{"hh", "h", "ll", "l", "j", "z", "t", ""} {
			if len(rest) > len(l) && strings.HasPrefix(rest, l) && strings.IndexByte("duoxXp", rest[len(l)]) >= 0 {
				v.length, v.conv, v.Arg = l, rest[len(l):len(l)+1], ArgInteger
				break
			}
		}
		if v.conv == "" {
			return Verb{}, 0, false
		}
	}
	end := j + len(v.length) + len(v.conv)
	v.Text = s[i:end]
	return v, end, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// atoiClamp reads decimal digits, saturating at MaxInt32 as glibc does.
func atoiClamp(digits string) int {
	n := 0
	for i := 0; i < len(digits); i++ {
		n = n*10 + int(digits[i]-'0')
		if n > math.MaxInt32 {
			return math.MaxInt32
		}
	}
	return n
}

// scanPart reads s[start:end], which ends with verb v, as glibc's snprintf
// reads the piece 0.17 gives it, and returns what it prints besides v's
// argument.
func scanPart(s string, start int, v *Verb, end int) part {
	if v.Arg == ArgBuffer && !v.plain() {
		// 0.17 turns only a bare %r, %rx or %rh into %s; C prints any
		// other back as it is, 'r' being no conversion of its.
		p := scanLiteral(s[start:v.Offset], start)
		if p.bad != nil {
			return p
		}
		lit := appendUnknownSpec([]byte(p.lit), cspec{left: v.left, zero: v.zero && !v.left, width: v.width, prec: v.prec, conv: 'r'})
		return part{lit: string(append(lit, s[v.Offset+len(v.Text)-len(v.conv)+1:end]...))}
	}
	piece := s[start:end]
	if v.Arg == ArgBuffer || v.conv == "gr" {
		piece = s[start:v.Offset] + "%s"
	}
	p := scanLiteral(piece, start)
	if p.bad == nil && p.active && (v.width == math.MaxInt32 || v.prec == math.MaxInt32) {
		p.bad = &FormatError{Offset: v.Offset, Msg: fmt.Sprintf("format verb %q at offset %d is too wide", v.Text, v.Offset)}
	}
	return p
}

// scanLiteral reads piece, found at offset base of the format, as glibc's
// printf reads a format given one argument: the literal text, then, if
// piece ends with the conversion that takes it, the argument. "%%" and
// conversions C does not know print as text; any other conversion before
// the last would read an argument that is not there.
func scanLiteral(piece string, base int) part {
	var lit []byte
	for i := 0; i < len(piece); {
		if piece[i] != '%' {
			lit = append(lit, piece[i])
			i++
			continue
		}
		sp, next := parseCSpec(piece, i, len(piece))
		switch {
		case sp.conv == '%' && !sp.reads:
			lit = append(lit, '%')
		case strings.IndexByte("diouxXeEfFgGaAcspnmCS", sp.conv) < 0 && !sp.reads:
			lit = appendUnknownSpec(lit, sp)
		case next == len(piece) && !sp.reads && sp.conv != 'n' && sp.conv != 'm':
			return part{lit: string(lit), active: true}
		default:
			return part{lit: string(lit), bad: &FormatError{Offset: base + i, Msg: fmt.Sprintf("%q at offset %d is no verb bpftrace knows, but C would read an argument for it; write %%%% for a literal %%", piece[i:next], base+i)}}
		}
		i = next
	}
	return part{lit: string(lit)}
}

// cspec is a conversion as glibc's printf parses it.
type cspec struct {
	alt, group, plus, space, left, zero, i18n bool
	width, prec                               int
	conv                                      byte
	reads                                     bool // takes an argument for '*' or n$
}

// parseCSpec parses the conversion at s[i] == '%', within s[:end].
func parseCSpec(s string, i, end int) (cspec, int) {
	sp := cspec{prec: -1}
	j := i + 1
	k := j
	for k < end && isDigit(s[k]) {
		k++
	}
	if k > j && k < end && s[k] == '$' {
		sp.reads = true
		j = k + 1
	}
flags:
	for ; j < end; j++ {
		switch s[j] {
		case '#':
			sp.alt = true
		case '\'':
			sp.group = true
		case '+':
			sp.plus = true
		case ' ':
			sp.space = true
		case '-':
			sp.left = true
		case '0':
			sp.zero = true
		case 'I':
			sp.i18n = true
		default:
			break flags
		}
	}
	if sp.left {
		sp.zero = false
	}
	if j < end && s[j] == '*' {
		sp.reads = true
		j++
	}
	w := j
	for j < end && isDigit(s[j]) {
		j++
	}
	sp.width = atoiClamp(s[w:j])
	if j < end && s[j] == '.' {
		j++
		if j < end && s[j] == '*' {
			sp.reads = true
			j++
		}
		p := j
		for j < end && isDigit(s[j]) {
			j++
		}
		sp.prec = atoiClamp(s[p:j])
	}
	for _, l := range [...]string{"hh", "h", "ll", "l", "L", "q", "j", "z", "Z", "t"} {
		if strings.HasPrefix(s[j:end], l) {
			j += len(l)
			break
		}
	}
	if j < end {
		sp.conv = s[j]
		j++
	}
	return sp, j
}

// appendUnknownSpec appends a conversion glibc does not know as glibc
// prints it back: flags in its own order, width, precision, conversion.
func appendUnknownSpec(b []byte, sp cspec) []byte {
	b = append(b, '%')
	if sp.alt {
		b = append(b, '#')
	}
	if sp.group {
		b = append(b, '\'')
	}
	if sp.plus {
		b = append(b, '+')
	} else if sp.space {
		b = append(b, ' ')
	}
	if sp.left {
		b = append(b, '-')
	}
	if sp.zero {
		b = append(b, '0')
	}
	if sp.i18n {
		b = append(b, 'I')
	}
	if sp.width != 0 {
		b = strconv.AppendInt(b, int64(sp.width), 10)
	}
	if sp.prec >= 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(sp.prec), 10)
	}
	return append(b, sp.conv)
}

// Check reports whether a call fn(format, args...) is valid, with args the
// kinds of its arguments, as bpftrace 0.17 checks it and in its words
// but lowercase ("printf: too many arguments for format string (2
// supplied, 1 expected)"); fn is "printf", "system" or "cat". It then also rejects the
// calls whose output 0.17 leaves to chance.
func (f *Format) Check(fn string, args []Kind) *FormatError {
	if len(args) < len(f.verbs) {
		return &FormatError{Func: fn, Offset: -1, Msg: fmt.Sprintf("not enough arguments for format string (%d supplied, %d expected)", len(args), len(f.verbs))}
	}
	if len(args) > len(f.verbs) {
		return &FormatError{Func: fn, Offset: -1, Msg: fmt.Sprintf("too many arguments for format string (%d supplied, %d expected)", len(args), len(f.verbs))}
	}
	for i := range f.verbs {
		v := &f.verbs[i]
		if got := ArgKindOf(args[i]); got != v.Arg {
			supplied := args[i].String()
			if got != ArgNone {
				supplied = got.String()
			}
			return &FormatError{Func: fn, Offset: v.Offset, Msg: fmt.Sprintf("%%%s specifier expects a value of type %s (%s supplied)", v.token(), v.Arg, supplied)}
		}
	}
	for _, p := range f.parts {
		if p.bad != nil {
			return &FormatError{Func: fn, Offset: p.bad.Offset, Msg: p.bad.Msg}
		}
	}
	return nil
}

// Sprint returns the format applied to args, as for the command of
// system() or the file name of cat().
func (f *Format) Sprint(args []Value) (string, error) {
	b, err := f.Append(nil, args)
	return string(b), err
}

// Append appends the format applied to args to b, as bpftrace 0.17's
// printf prints it. Each argument must be of the kind its verb takes.
func (f *Format) Append(b []byte, args []Value) ([]byte, error) {
	if len(args) != len(f.verbs) {
		return b, &FormatError{Offset: -1, Msg: fmt.Sprintf("format %q takes %d arguments, got %d", f.src, len(f.verbs), len(args))}
	}
	for i := range f.parts {
		p := &f.parts[i]
		if p.bad != nil {
			return b, p.bad
		}
		start := len(b)
		b = append(b, p.lit...)
		if p.active {
			var err error
			if b, err = f.verbs[i].appendArg(b, args[i]); err != nil {
				return b[:start], err
			}
		}
		// 0.17 streams each piece as a C string, so a NUL from %c ends it.
		if n := indexNUL(b[start:]); n >= 0 {
			b = b[:start+n]
		}
	}
	return append(b, f.tail...), nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// appendArg appends a as C's snprintf formats it for the verb, given the
// 64-bit value bpftrace passes for integers (sign-extended when signed).
func (v *Verb) appendArg(b []byte, a Value) ([]byte, error) {
	// An integer reaching %s is of an enum, which the check let through:
	// its name, or its number when the enum names none.
	if ArgKindOf(a.kind) != v.Arg && !(a.kind == KindInt && v.Arg == ArgString) {
		return b, &FormatError{Offset: v.Offset, Msg: fmt.Sprintf("%s takes %s, got a %s value", v.Text, v.Arg, a.kind)}
	}
	switch v.conv {
	case "s":
		return v.appendString(b, a)
	case "r", "rx", "rh":
		var text []byte
		text = appendHexBuffer(text, a.s, v.conv == "r", v.conv != "rh")
		return v.pad(b, text), nil
	case "c":
		c := [1]byte{byte(a.n)}
		return v.pad(b, c[:]), nil
	case "gr":
		// bpftrace pads the names as a C++ stream does: with '0' after a
		// 0 flag, on either side.
		text := appendGFP(nil, uint64(a.n))
		if !v.zero {
			return v.pad(b, text), nil
		}
		fill := bytes.Repeat([]byte{'0'}, max(v.width-len(text), 0))
		if v.left {
			return append(append(b, text...), fill...), nil
		}
		return append(append(b, fill...), text...), nil
	case "p":
		if a.n == 0 {
			return v.pad(b, []byte("(nil)")), nil
		}
		return v.appendNumber(b, a.n, false, 16, false, "0x"), nil
	}
	n, neg := a.n, false
	if v.conv == "d" {
		var s int64
		switch v.length {
		case "hh":
			s = int64(int8(n))
		case "h":
			s = int64(int16(n))
		case "":
			s = int64(int32(n))
		default:
			s = int64(n)
		}
		if s < 0 {
			n, neg = uint64(-s), true
		} else {
			n = uint64(s)
		}
	} else {
		switch v.length {
		case "hh":
			n = uint64(uint8(n))
		case "h":
			n = uint64(uint16(n))
		case "":
			n = uint64(uint32(n))
		}
	}
	switch v.conv {
	case "o":
		return v.appendNumber(b, n, false, 8, false, ""), nil
	case "x":
		return v.appendNumber(b, n, false, 16, false, ""), nil
	case "X":
		return v.appendNumber(b, n, false, 16, true, ""), nil
	}
	return v.appendNumber(b, n, neg, 10, false, ""), nil
}

func (v *Verb) appendString(b []byte, a Value) ([]byte, error) {
	if a.kind == KindString {
		s := a.s
		if v.prec >= 0 && v.prec < len(s) {
			s = s[:v.prec]
		}
		fill := v.width - len(s)
		for ; !v.left && fill > 0; fill-- {
			b = append(b, ' ')
		}
		b = append(b, s...)
		for ; fill > 0; fill-- {
			b = append(b, ' ')
		}
		return b, nil
	}
	var text []byte
	if a.kind == KindKstack || a.kind == KindUstack {
		text = appendStack(nil, a, valueStackIndent)
	} else {
		var err error
		if text, err = appendValue(nil, a, 1, style{}); err != nil {
			return b, err
		}
	}
	if v.prec >= 0 && v.prec < len(text) {
		text = text[:v.prec]
	}
	return v.pad(b, text), nil
}

// appendNumber appends magnitude n in base with C's integer rules:
// precision is a minimum digit count (0 prints nothing for 0), the '0'
// flag pads after the sign or prefix unless a precision is given.
func (v *Verb) appendNumber(b []byte, n uint64, neg bool, base int, upper bool, prefix string) []byte {
	var buf [64]byte
	digits := buf[:0]
	if n != 0 || v.prec != 0 {
		digits = strconv.AppendUint(digits, n, base)
	}
	if upper {
		for i, c := range digits {
			if c >= 'a' {
				digits[i] = c - 'a' + 'A'
			}
		}
	}
	head := len(prefix)
	if neg {
		head++
	}
	zeros := max(v.prec-len(digits), 0)
	if v.zero && !v.left && v.prec < 0 {
		zeros = max(v.width-head-len(digits), 0)
	}
	fill := v.width - head - zeros - len(digits)
	for ; !v.left && fill > 0; fill-- {
		b = append(b, ' ')
	}
	if neg {
		b = append(b, '-')
	}
	b = append(b, prefix...)
	for range zeros {
		b = append(b, '0')
	}
	b = append(b, digits...)
	for ; fill > 0; fill-- {
		b = append(b, ' ')
	}
	return b
}

// pad appends text padded with spaces to the verb's width.
func (v *Verb) pad(b, text []byte) []byte {
	fill := v.width - len(text)
	for ; !v.left && fill > 0; fill-- {
		b = append(b, ' ')
	}
	b = append(b, text...)
	for ; fill > 0; fill-- {
		b = append(b, ' ')
	}
	return b
}
