package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Kind says what sort of value a Type describes.
type Kind int

// The kinds of value.
const (
	Void       Kind = iota // statements and functions with no value
	Int                    // integers of 1, 2, 4 or 8 bytes, signed or not
	Str                    // NUL-padded character buffers of fixed size
	Tuple                  // (a, b, …)
	Ptr                    // a pointer into kernel or user memory
	Record                 // a struct or union: tracepoint args, BTF types
	Array                  // a fixed-size array inside a record
	Stack                  // kstack or ustack: an id into a stack-trace map
	Ksym                   // a kernel address printed as its symbol
	Usym                   // a user address printed as its symbol
	Inet                   // an address printed by ntop
	Buffer                 // raw bytes printed with escapes, from buf()
	ProbeName              // the probe builtin: a target index printed as its full name
	FuncName               // the func builtin: a target index printed as its function
	Username               // the username builtin: a uid printed as its user name
	Timestamp              // strftime(): nanoseconds since boot printed with a format (Name)
	Strerror               // strerror(): an errno printed as its message
	MacAddr                // macaddr(): 6 bytes printed as a MAC address
	CgroupPath             // cgroup_path(): a cgroup id printed as its paths, filtered by Name
	// Named is an integer printed as its name in a table (Name): a
	// system call's for syscall_name(), a signal's for signal_name(),
	// an error's for bpftrace 0.26's strerror().
	Named
	// Float is a C float, double or long double (Name) in a struct: it
	// takes its place in the layout, but no expression reads it, since
	// kinst, like bpftrace, computes with integers only.
	Float
	// Aggregations: values only maps hold; each CPU keeps its own part.
	Count
	Sum
	Min
	Max
	Avg
	Stats
	Hist
	Lhist
	// TSeries is bpftrace 0.26.1's tseries(): one element per interval
	// bucket, each CPU's part holding the value, what the aggregation
	// function keeps beside it, and the interval number it belongs to.
	TSeries
)

// AddrSpace says which memory a pointer points into; it picks the
// helper that reads through it.
type AddrSpace int

// The address spaces.
const (
	KernelSpace AddrSpace = iota
	UserSpace
)

// A Type describes a value.
type Type struct {
	Kind   Kind
	Size   int  // bytes the value takes in BPF memory
	Signed bool // Int, Sum, Min, Max, Avg, Stats
	// Flex marks the type bpftrace 0.26 gives a non-negative integer
	// literal: signed, but taking the sign of what it meets, so that
	// (uint64)x + 1 stays unsigned and warns of no mismatch.
	Flex bool
	// Enum, for an integer of an enum type, names its values: bpftrace
	// 0.26 prints such a value as its name.
	Enum *Enum

	Elems   []*Type // Tuple: element types
	Offsets []int   // Tuple: byte offset of each element
	// Names, set on a Tuple, makes it a record of bpftrace 0.26, (a =
	// 1, b = 2): one name per element.
	Names  []string
	Elem   *Type     // Ptr: pointee (nil for void *); Array: element
	Len    int       // Array: element count
	Space  AddrSpace // Ptr and Record: where the memory is
	BTF    btf.Type  // Record and Ptr to kernel types, when known
	Fields []*Field  // Record
	Name   string    // Record: "struct file"; Int: a typedef name, if any;
	// Timestamp: the strftime format; CgroupPath: the hierarchy filter
	calign int // the C alignment of a program-declared struct, or one aligned(N) set
	// VarLen marks a Buffer whose length byte, its last, says how many
	// of the bytes before it were read.
	VarLen bool

	// Stack: kernel or user, how many frames and how to print.
	User      bool
	Frames    int
	StackMode string // "bpftrace", "perf", "raw" or "build_id"

	// Hist: each power of two is split into 2^HistBits buckets.
	HistBits int

	// Lhist: the range and bucket width.
	LhistMin, LhistMax, LhistStep int64

	// TSeries: the interval's length in nanoseconds, how many intervals
	// are kept, and the aggregation function ("" keeps the last value).
	TSInterval, TSIntervals int64
	TSAgg                   string
}

// An Enum is a C enum's table of names.
type Enum struct {
	Tag   string           // "enum foo", or "enum <anonymous>"
	Names map[int64]string // the first name of each value
}

// enumName is the tag of t's enum, or "" for other types.
func (t *Type) enumName() string {
	if t.Enum == nil {
		return ""
	}
	return t.Enum.Tag
}

// A Field is a named member of a Record.
type Field struct {
	Name   string
	Type   *Type
	Offset int
	// Bits is the width of a bitfield, with BitOffset its first bit
	// within the word at Offset; Bits is 0 for ordinary fields.
	Bits, BitOffset int
	// DataLoc marks a tracepoint __data_loc field: a 32-bit word whose
	// low half is the data's offset from the record start.
	DataLoc bool
	// Lazy, when set, computes Type on first use: some field types take
	// the kernel's BTF to work out, which costs more than most programs
	// that never read the field should pay.
	Lazy func() *Type
}

// resolve fills in a lazily typed field.
func (f *Field) resolve() *Field {
	if f.Type == nil && f.Lazy != nil {
		f.Type = f.Lazy()
		f.Lazy = nil
	}
	return f
}

// Common types.
var (
	TVoid   = &Type{Kind: Void}
	TInt64  = &Type{Kind: Int, Size: 8, Signed: true}
	TUint64 = &Type{Kind: Int, Size: 8}
	TInt32  = &Type{Kind: Int, Size: 4, Signed: true}
	TUint32 = &Type{Kind: Int, Size: 4}
	TUint16 = &Type{Kind: Int, Size: 2}
	TUint8  = &Type{Kind: Int, Size: 1}
	TInt8   = &Type{Kind: Int, Size: 1, Signed: true}
	TInt16  = &Type{Kind: Int, Size: 2, Signed: true}
	TKsym   = &Type{Kind: Ksym, Size: 8}
	TUsym   = &Type{Kind: Usym, Size: 16} // address and pid
	TCount  = &Type{Kind: Count, Size: 8}
	TProbe  = &Type{Kind: ProbeName, Size: 8}
	TFunc   = &Type{Kind: FuncName, Size: 8}
	TUser   = &Type{Kind: Username, Size: 8}
	// TBool is bpftrace 0.26's bool: a byte, 0 or 1, printed as false
	// or true. Being an integer, it computes as one.
	TBool = &Type{Kind: Int, Size: 1, Name: "bool"}
	// tLiteral types the literals of bpftrace 0.26 up to 1<<63-1 by
	// their size in bytes: the smallest signed type that holds them.
	tLiteral = map[int]*Type{
		1: {Kind: Int, Size: 1, Signed: true, Flex: true},
		2: {Kind: Int, Size: 2, Signed: true, Flex: true},
		4: {Kind: Int, Size: 4, Signed: true, Flex: true},
		8: {Kind: Int, Size: 8, Signed: true, Flex: true},
	}
)

// IsBool reports whether t is the bool type.
func (t *Type) IsBool() bool { return t.Kind == Int && t.Name == "bool" }

// IntType returns the integer type of the given size and sign.
// FloatType returns the type of a C floating-point member of size
// bytes, called name (float, double, long double).
func FloatType(size int, name string) *Type {
	return &Type{Kind: Float, Size: size, Name: name}
}

// hasFloat reports whether t is a float or an array of them.
func (t *Type) hasFloat() bool {
	for t != nil && t.Kind == Array {
		t = t.Elem
	}
	return t != nil && t.Kind == Float
}

func IntType(size int, signed bool) *Type {
	switch {
	case size == 8 && signed:
		return TInt64
	case size == 8:
		return TUint64
	case size == 4 && signed:
		return TInt32
	case size == 4:
		return TUint32
	case size == 2 && signed:
		return TInt16
	case size == 2:
		return TUint16
	case size == 1 && signed:
		return TInt8
	}
	return TUint8
}

// StrType returns a string type holding up to n bytes including the NUL.
func StrType(n int) *Type { return &Type{Kind: Str, Size: n} }

// TupleType lays out a tuple with natural alignment, so that every
// element can be loaded and stored with one aligned instruction.
func TupleType(elems []*Type) *Type {
	t := &Type{Kind: Tuple, Elems: elems, Offsets: make([]int, len(elems))}
	off, maxAlign := 0, 1
	for i, e := range elems {
		a := e.tupleAlign()
		off = alignUp(off, a)
		t.Offsets[i] = off
		off += e.Size
		if a > maxAlign {
			maxAlign = a
		}
	}
	t.Size = alignUp(off, maxAlign)
	return t
}

// RecordType lays out a record: a tuple whose elements have names.
func RecordType(names []string, elems []*Type) *Type {
	t := TupleType(elems)
	t.Names = names
	return t
}

// IsRecord reports whether t is a record, (a = 1, b = 2).
func (t *Type) IsRecord() bool { return t.Kind == Tuple && t.Names != nil }

// ElemIndex returns the index of a tuple's element named by a field
// access: a number, or a record's field name; -1 if there is none.
func (t *Type) ElemIndex(name string) int {
	if t.Names != nil {
		return slices.Index(t.Names, name)
	}
	i, err := strconv.Atoi(name)
	if err != nil || i < 0 || i >= len(t.Elems) {
		return -1
	}
	return i
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// tupleAlign is the alignment of t as a tuple's element, as bpftrace
// lays tuples out: a struct is a run of bytes, an array aligns as its
// element.
func (t *Type) tupleAlign() int {
	switch t.Kind {
	case Record:
		return 1
	case Array:
		return t.Elem.tupleAlign()
	case Tuple:
		a := 1
		for _, e := range t.Elems {
			a = max(a, e.tupleAlign())
		}
		return a
	}
	return t.Align()
}

// Align is the alignment kinst gives a value of type t in BPF memory.
func (t *Type) Align() int {
	switch t.Kind {
	case Int:
		return t.Size
	case Str, Buffer, MacAddr:
		return 1
	case Tuple:
		a := 1
		for _, e := range t.Elems {
			if e.Align() > a {
				a = e.Align()
			}
		}
		return a
	case Record, Array:
		if t.Size >= 8 {
			return 8
		}
		return 1
	}
	return 8
}

// IsAggregation reports whether t is a map-only aggregation such as count.
func (t *Type) IsAggregation() bool { return t.Kind >= Count }

// IsInt reports whether values of t are integers in registers: ints,
// pointers, symbols and the scalar aggregations once read.
func (t *Type) IsInt() bool {
	switch t.Kind {
	case Int, Ptr, Ksym:
		return true
	}
	return false
}

// InRegister reports whether a value of t fits a register, as opposed to
// living in memory (strings, tuples, records, usym and inet values).
func (t *Type) InRegister() bool {
	switch t.Kind {
	case Int, Ptr, Ksym, Stack, ProbeName, FuncName, Username, Timestamp, Strerror, CgroupPath, Named,
		Count, Sum, Min, Max:
		return true
	}
	return false
}

// Equal reports whether t and u describe the same values.
func (t *Type) Equal(u *Type) bool {
	if t == u {
		return true
	}
	if t == nil || u == nil || t.Kind != u.Kind || t.Size != u.Size || t.Signed != u.Signed {
		return false
	}
	switch t.Kind {
	case Int:
		return t.IsBool() == u.IsBool() && t.enumName() == u.enumName()
	case Tuple:
		if len(t.Elems) != len(u.Elems) || !slices.Equal(t.Names, u.Names) {
			return false
		}
		for i := range t.Elems {
			if !t.Elems[i].Equal(u.Elems[i]) {
				return false
			}
		}
	case Ptr:
		if (t.Elem == nil) != (u.Elem == nil) || t.Elem != nil && !t.Elem.Equal(u.Elem) {
			return false
		}
	case Record, Timestamp, CgroupPath, Named:
		return t.Name == u.Name
	case Array:
		return t.Len == u.Len && t.Elem.Equal(u.Elem)
	case Stack:
		return t.User == u.User && t.Frames == u.Frames && t.StackMode == u.StackMode
	case Hist:
		return t.HistBits == u.HistBits
	case Lhist:
		return t.LhistMin == u.LhistMin && t.LhistMax == u.LhistMax && t.LhistStep == u.LhistStep
	case TSeries:
		return t.TSInterval == u.TSInterval && t.TSIntervals == u.TSIntervals && t.TSAgg == u.TSAgg && t.Signed == u.Signed
	}
	return true
}

func (t *Type) String() string {
	if t == nil {
		return "none"
	}
	switch t.Kind {
	case Void:
		return "none"
	case Int:
		if t.IsBool() {
			return "bool"
		}
		if t.Signed {
			return fmt.Sprintf("int%d", t.Size*8)
		}
		return fmt.Sprintf("uint%d", t.Size*8)
	case Str:
		return fmt.Sprintf("string[%d]", t.Size)
	case Tuple:
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = e.String()
			if t.Names != nil {
				parts[i] = "." + t.Names[i] + " = " + parts[i]
			}
		}
		if t.Names != nil {
			return "record { " + strings.Join(parts, ", ") + " }"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case Ptr:
		if t.Elem == nil {
			return "void *"
		}
		return t.Elem.String() + " *"
	case Record, Float:
		return t.Name
	case Array:
		return fmt.Sprintf("%s[%d]", t.Elem, t.Len)
	case Stack:
		if t.User {
			return "ustack"
		}
		return "kstack"
	}
	return kindNames[t.Kind]
}

var kindNames = map[Kind]string{
	Ksym: "ksym", Usym: "usym", Inet: "inet", Buffer: "buffer",
	ProbeName: "probe", FuncName: "func", Username: "username",
	Timestamp: "timestamp", Strerror: "strerror", MacAddr: "macaddr", CgroupPath: "cgroup_path", Named: "string",
	Count: "count", Sum: "sum", Min: "min", Max: "max", Avg: "avg",
	Stats: "stats", Hist: "hist", Lhist: "lhist", TSeries: "tseries",
}
