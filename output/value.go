package output

import (
	"fmt"
	"math"
)

// Kind says what a Value holds, and so how bpftrace prints it.
type Kind uint8

// The kinds of Value. Each has a constructor of the same name without the
// Kind prefix (KindInt: Int, Uint and IntN).
const (
	KindInvalid    Kind = iota // the zero Value; never printed
	KindInt                    // integers, booleans
	KindString                 // str(), comm, string literals
	KindTuple                  // (a, b, ...)
	KindArray                  // C arrays, pton() results
	KindBuffer                 // buf()
	KindKsym                   // ksym()
	KindUsym                   // usym()
	KindKstack                 // kstack
	KindUstack                 // ustack
	KindInet                   // ntop()
	KindUsername               // username
	KindProbe                  // probe
	KindTimestamp              // strftime()
	KindStrerror               // strerror()
	KindMacAddr                // macaddr()
	KindCgroupPath             // cgroup_path()
	KindPointer                // pointers
	KindCount                  // count()
	KindSum                    // sum()
	KindMin                    // min()
	KindMax                    // max()
	KindAvg                    // avg()
	KindStats                  // stats()
	KindHist                   // hist()
	KindLhist                  // lhist()
	KindRecord                 // C structs and unions
	KindBool                   // bpftrace 0.26's bool: true or false
	KindTSeries                // bpftrace 0.26's tseries()
	KindNone                   // what bpftrace 0.26 cannot represent, as a float member: null
)

var kindNames = [...]string{
	KindInvalid:    "invalid",
	KindInt:        "integer",
	KindString:     "string",
	KindTuple:      "tuple",
	KindArray:      "array",
	KindBuffer:     "buffer",
	KindKsym:       "ksym",
	KindUsym:       "usym",
	KindKstack:     "kstack",
	KindUstack:     "ustack",
	KindInet:       "inet",
	KindUsername:   "username",
	KindProbe:      "probe",
	KindTimestamp:  "timestamp",
	KindStrerror:   "strerror",
	KindMacAddr:    "mac_address",
	KindCgroupPath: "cgroup_path",
	KindPointer:    "pointer",
	KindCount:      "count",
	KindSum:        "sum",
	KindMin:        "min",
	KindMax:        "max",
	KindAvg:        "avg",
	KindStats:      "stats",
	KindHist:       "hist",
	KindLhist:      "lhist",
	KindRecord:     "record",
	KindBool:       "bool",
	KindTSeries:    "tseries",
	KindNone:       "none",
}

// String returns bpftrace's name for the kind, as in its type messages.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// StackMode is the layout of a printed stack: kstack(bpftrace),
// kstack(perf), kstack(raw) or ustack(build_id). bpftrace 0.17 has the
// first two only.
type StackMode uint8

const (
	// StackBpftrace prints one "symbol+offset" per line, indented.
	StackBpftrace StackMode = iota
	// StackPerf prints "\t<hex address> symbol+offset" per line, with
	// " (module)" after user-space symbols, as perf script does.
	StackPerf
	// StackRaw prints each address in hex, one per line, unindented.
	StackRaw
	// StackBuildID prints each user frame as the build ID of the file
	// holding it and the frame's offset in that file: "<build ID in
	// hex> 0x<offset>", or the address in hex where the kernel could
	// not read the build ID. Its frames keep the offset in Offset.
	StackBuildID
)

// Frame is one symbolized address of a stack.
type Frame struct {
	Addr   uint64
	Symbol string // the symbol containing Addr; "" when unresolved
	Offset uint64 // Addr minus the symbol's start; in StackBuildID, Addr's offset in its file
	Module string // the object holding Symbol, printed after user frames in perf mode
	// MapStart, MapEnd and MapOffset are the mapping of Module holding a
	// user frame's Addr, and BuildID Module's GNU build ID: what profiles
	// record of a frame and printing ignores.
	MapStart, MapEnd, MapOffset uint64
	BuildID                     string
	// Source is "FILE:LINE" of Addr in its function, which bpftrace
	// 0.26.1's show_debug_info prints after the symbol; "" for none.
	Source string
	// Inlined are the functions inlined at Addr, innermost first, that
	// show_debug_info prints before the frame.
	Inlined []Inlined
}

// Inlined is a function inlined at a frame's address and the
// "FILE:LINE" the address is at within it ("" when unknown).
type Inlined struct {
	Name   string
	Source string
}

// Value is one thing bpftrace prints: an integer, a string, a tuple, a
// resolved symbol, an aggregation... The zero Value is invalid. Values are
// built with the constructors below; they are immutable and cheap to copy,
// and Int, Uint, IntN, String and Pointer allocate nothing.
type Value struct {
	kind   Kind
	signed bool      // KindInt, KindSum
	mode   StackMode // stacks
	n      uint64    // integer bits, count, address, errno, family, avg count
	m      int64     // avg and stats total
	s      string    // text, symbol name, buffer bytes, enum name
	ref    any       // []Value, []Frame, []uint64, *lhist, inet address
}

type lhist struct {
	min, max, step int64
	buckets        []uint64
}

// Kind reports what v holds.
func (v Value) Kind() Kind { return v.kind }

// Int returns a signed 64-bit integer.
func Int(v int64) Value { return Value{kind: KindInt, signed: true, n: uint64(v)} }

// Bool returns a bool, which prints as true or false, and as 1 or 0
// through printf's integer verbs.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.n = 1
	}
	return v
}

// Uint returns an unsigned 64-bit integer.
func Uint(v uint64) Value { return Value{kind: KindInt, n: v} }

// IntN returns an integer of size bytes (1, 2, 4 or 8) whose bits are the
// low size*8 bits of raw, sign- or zero-extended as bpftrace does before
// printing. Another size yields an invalid Value, which the Writer rejects.
func IntN(raw uint64, size int, signed bool) Value {
	var n uint64
	switch size {
	case 1:
		n = uint64(uint8(raw))
		if signed {
			n = uint64(int64(int8(raw)))
		}
	case 2:
		n = uint64(uint16(raw))
		if signed {
			n = uint64(int64(int16(raw)))
		}
	case 4:
		n = uint64(uint32(raw))
		if signed {
			n = uint64(int64(int32(raw)))
		}
	case 8:
		n = raw
	default:
		return Value{}
	}
	return Value{kind: KindInt, signed: signed, n: n}
}

// Enum returns an integer of an enum type, as IntN, that bpftrace 0.26
// prints as name in text (and through printf's %s), and as a number in
// JSON; name is "" for a value the enum does not name.
func Enum(raw uint64, size int, signed bool, name string) Value {
	v := IntN(raw, size, signed)
	v.s = name
	return v
}

// String returns a string value. bpftrace strings end at their first NUL,
// so s should hold the bytes before it.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Tuple returns a tuple of elems.
func Tuple(elems ...Value) Value { return Value{kind: KindTuple, ref: elems} }

// Array returns a C array of elems, as pton() or a struct field gives.
func Array(elems ...Value) Value { return Value{kind: KindArray, ref: elems} }

// Record returns a C struct or union: its fields' names and values, in
// order.
func Record(names []string, vals []Value) Value {
	return Value{kind: KindRecord, ref: &record{names, vals}}
}

type record struct {
	names []string
	vals  []Value
}

// Buffer returns the bytes buf() captured (its length, not its capacity).
func Buffer(b []byte) Value { return Value{kind: KindBuffer, s: string(b)} }

// Ksym returns ksym(addr): symbol is the kernel symbol containing addr, or
// "" when addr resolves to none.
func Ksym(addr uint64, symbol string) Value { return Value{kind: KindKsym, n: addr, s: symbol} }

// Usym returns usym(addr): symbol is the user symbol containing addr, or ""
// when addr resolves to none.
func Usym(addr uint64, symbol string) Value { return Value{kind: KindUsym, n: addr, s: symbol} }

// Kstack returns a kernel stack, innermost frame first. A stack with no
// frames (the kernel had none to give, as for kstack in a user-space
// probe) prints as an empty string, as 0.17 prints a stack id it cannot
// look up.
func Kstack(mode StackMode, frames []Frame) Value {
	return Value{kind: KindKstack, mode: mode, ref: frames}
}

// Ustack returns a user stack, innermost frame first; see Kstack.
func Ustack(mode StackMode, frames []Frame) Value {
	return Value{kind: KindUstack, mode: mode, ref: frames}
}

// Address families of Inet, as Linux numbers them.
const (
	AFInet  = 2
	AFInet6 = 10
)

// Inet returns ntop(): addr holds 4 bytes for AFInet, 16 for AFInet6. Any
// other family, or an address of the wrong length, prints as an empty
// string, as 0.17 prints an unknown family.
func Inet(family int64, addr []byte) Value {
	return Value{kind: KindInet, n: uint64(family), s: ntop(family, addr), ref: string(addr)}
}

// Username returns the user name bpftrace found for a uid in /etc/passwd
// ("" when none).
func Username(name string) Value { return Value{kind: KindUsername, s: name} }

// Probe returns the full name of a probe, such as "tracepoint:sched:sched_switch".
func Probe(name string) Value { return Value{kind: KindProbe, s: name} }

// Timestamp returns a formatted strftime() result; see Strftime.
func Timestamp(text string) Value { return Value{kind: KindTimestamp, s: text} }

// Strerror returns strerror(errno), which prints glibc's message for errno.
func Strerror(errno int64) Value { return Value{kind: KindStrerror, n: uint64(errno)} }

// MacAddr returns macaddr(): six bytes printed as "AA:BB:CC:DD:EE:FF".
func MacAddr(b [6]byte) Value {
	const hex = "0123456789ABCDEF"
	var t [17]byte
	for i, c := range b {
		if i > 0 {
			t[3*i-1] = ':'
		}
		t[3*i] = hex[c>>4]
		t[3*i+1] = hex[c&15]
	}
	return Value{kind: KindMacAddr, s: string(t[:])}
}

// CgroupPath returns the text of cgroup_path(): each hierarchy's name and
// path joined as "name:path", separated by commas, as
// "unified:/user.slice,memory:/user.slice".
func CgroupPath(path string) Value { return Value{kind: KindCgroupPath, s: path} }

// Pointer returns a pointer value, printed in hex.
func Pointer(addr uint64) Value { return Value{kind: KindPointer, n: addr} }

// Count returns the value of a count() map entry.
func Count(n uint64) Value { return Value{kind: KindCount, n: n} }

// Sum returns the value of a sum() map entry: the sum of its per-CPU
// values as 64-bit two's complement bits, printed signed when the summed
// expression is signed.
func Sum(raw uint64, signed bool) Value { return Value{kind: KindSum, n: raw, signed: signed} }

// Min returns the value of a min() map entry.
func Min(v int64) Value { return Value{kind: KindMin, n: uint64(v)} }

// Max returns the value of a max() map entry.
func Max(v int64) Value { return Value{kind: KindMax, n: uint64(v)} }

// Avg returns the value of an avg() map entry from its count and total.
func Avg(count, total int64) Value { return Value{kind: KindAvg, n: uint64(count), m: total} }

// Stats returns the value of a stats() map entry from its count and total.
func Stats(count, total int64) Value { return Value{kind: KindStats, n: uint64(count), m: total} }

// Hist returns the value of a hist() map entry. buckets[0] counts values
// below 0, buckets[1] zeros, buckets[2] ones and buckets[k] values in
// [2^(k-2), 2^(k-1)); bpftrace 0.17 keeps 65 buckets and never fills one
// above 33 (its log2 puts every value from 2^31 up in [2G, 4G)).
func Hist(buckets []uint64) Value { return Value{kind: KindHist, ref: buckets} }

// None returns the value bpftrace 0.26 gives what it cannot represent,
// such as a struct's floating-point member: it prints as null.
func None() Value { return Value{kind: KindNone} }

// FineHist returns the value of a hist(n, bits) map entry of bpftrace
// 0.26, which splits each power of two into 2^bits buckets: buckets[0]
// counts values below 0, buckets[1+v] each value v below 2^bits, and
// the buckets after those split [2^p, 2^(p+1)) evenly, for p from bits
// up. With bits 0 it is Hist.
func FineHist(bits int, buckets []uint64) Value {
	return Value{kind: KindHist, n: uint64(bits), ref: buckets}
}

// Lhist returns the value of an lhist(x, min, max, step) map entry.
// buckets[0] counts values below min, buckets[i] values in
// [min+(i-1)*step, min+i*step) and buckets[(max-min)/step+1] the rest; it
// may be longer (0.17 keeps 1002 buckets), but not shorter. A step below 1
// or max below min yields an invalid Value.
func Lhist(min, max, step int64, buckets []uint64) Value {
	if step < 1 || max < min || uint64(len(buckets)) < (uint64(max)-uint64(min))/uint64(step)+2 {
		return Value{}
	}
	return Value{kind: KindLhist, ref: &lhist{min: min, max: max, step: step, buckets: buckets}}
}

// Accessors, for programs that render values their own way.

// Uint returns the bits of an integer, pointer, count, sum, min or max,
// the address of a ksym or usym, and the count of an avg or stats.
func (v Value) Uint() uint64 { return v.n }

// Int returns Uint's bits as a signed integer.
func (v Value) Int() int64 { return int64(v.n) }

// Signed reports whether an integer or a sum is printed signed.
func (v Value) Signed() bool { return v.signed }

// Total returns the total of an avg or stats.
func (v Value) Total() int64 { return v.m }

// Text returns a string's text, or the symbol of a ksym or usym.
func (v Value) Text() string { return v.s }

// Elems returns the elements of a tuple or an array.
func (v Value) Elems() []Value { return v.elems() }

// FieldNames returns the names of a record's fields, in the order of
// Elems.
func (v Value) FieldNames() []string { return v.fieldNames() }

// Frames returns the frames of a stack.
func (v Value) Frames() []Frame { return v.frames() }

// Buckets returns the buckets of a hist, or of an lhist.
func (v Value) Buckets() []uint64 {
	if l := v.lhist(); l != nil {
		return l.buckets
	}
	return v.buckets()
}

// HistBits returns the bits of a hist: each power of two is split into
// 2^bits buckets.
func (v Value) HistBits() int { return int(v.n) }

// HistBucketBounds returns the least and the greatest value bucket i of
// a hist counts; bucket 0 counts the negatives, from math.MinInt64.
func (v Value) HistBucketBounds(i int) (least, greatest int64) {
	if i == 0 {
		return math.MinInt64, -1
	}
	lo, _ := fineBound(i-1, v.HistBits())
	next, _ := fineBound(i, v.HistBits())
	return int64(lo), int64(next - 1)
}

// LhistBounds returns the min, max and step of an lhist.
func (v Value) LhistBounds() (min, max, step int64) {
	if l := v.lhist(); l != nil {
		return l.min, l.max, l.step
	}
	return 0, 0, 0
}

// KeyText returns v as bpftrace 0.17 prints it as an element of a map key.
func (v Value) KeyText() (string, error) {
	b, err := appendKey(nil, v, true)
	return string(b), err
}

func (v Value) elems() []Value {
	if r, ok := v.ref.(*record); ok {
		return r.vals
	}
	e, _ := v.ref.([]Value)
	return e
}

func (v Value) fieldNames() []string {
	if r, ok := v.ref.(*record); ok {
		return r.names
	}
	return nil
}

func (v Value) frames() []Frame   { f, _ := v.ref.([]Frame); return f }
func (v Value) buckets() []uint64 { b, _ := v.ref.([]uint64); return b }
func (v Value) lhist() *lhist     { l, _ := v.ref.(*lhist); return l }

// average is avg()'s and stats()'s integer mean, truncated toward zero as
// C++ divides, and 0 for an empty entry.
func (v Value) average() int64 {
	if count := int64(v.n); count != 0 {
		return v.m / count
	}
	return 0
}
