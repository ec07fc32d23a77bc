package kinst

import (
	"math"
	"net/netip"
	"syscall"
	"time"

	"kinst.dev/kinst/output"
)

// A Map is a map's contents, read from the kernel.
//
// Keys and values are Go values whose type follows the program's type:
// int64 or uint64 for integers (by their sign), bool for bools, uint64 for count(),
// int64 or uint64 for sum(), int64 for min() and max(), [Stats] for
// avg() and stats(), [Histogram] for hist() and lhist(), string for
// strings and the values printed as text (comm, username, probe,
// strftime(), macaddr(), cgroup_path()), uintptr for pointers, []any for
// tuples and arrays, []Field for structs, []byte for buf(), [Symbol]
// for ksym() and usym(), []Frame for kstack and ustack, netip.Addr for
// ntop(), syscall.Errno for strerror() and [TimeSeries] for tseries().
type Map struct {
	Name string
	// Entries are in the order bpftrace prints them: by value, then by
	// key. A map without keys has one entry, whose Key is nil.
	Entries []Entry
	src     *output.Map // what it was read as, for WriteProfile and Observer.Maps
}

// An Entry is one key and its value.
type Entry struct {
	Key   []any
	Value any
}

// Stats is the value of avg() and stats(): how many values were seen
// and their total.
type Stats struct {
	Count, Total int64
}

// Mean is the average, truncated toward zero as bpftrace prints it; 0
// for no values.
func (s Stats) Mean() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Total / s.Count
}

// Histogram is the value of hist() and lhist(): the buckets holding
// values, in increasing order.
type Histogram struct {
	Buckets []Bucket
}

// A Bucket counts the values from Min to Max, both included.
type Bucket struct {
	Min, Max int64
	Count    uint64
}

// TimeSeries is the value of tseries(): the intervals holding values in
// the window of the map, the intervals up to the latest any entry holds,
// oldest first.
type TimeSeries struct {
	Interval time.Duration
	Points   []TimePoint
}

// A TimePoint is one interval of a time series: its start, by the
// kernel's TAI clock read as Unix time, as bpftrace has it, and its
// value, int64 or uint64 by the sign of the values recorded.
type TimePoint struct {
	Start time.Time
	Value any
}

// Field is one field of a C struct or union. A floating-point field,
// which kinst cannot read, has a nil Value.
type Field struct {
	Name  string
	Value any
}

// Symbol is an address resolved to the symbol containing it; Name is ""
// when none does.
type Symbol struct {
	Addr uint64
	Name string
}

// Frame is one frame of a stack, innermost first.
type Frame struct {
	Addr   uint64
	Symbol string // "" when unresolved
	Offset uint64 // Addr less the symbol's start
	Module string // the file holding a user-space symbol
}

func convertMap(m *output.Map) *Map {
	entries := m.Sorted()
	cm := &Map{Name: m.Name, Entries: make([]Entry, len(entries)), src: m}
	var last uint64 // the end of a tseries map's window
	for _, e := range entries {
		last = max(last, e.Value.TSeriesLatest())
	}
	for i, e := range entries {
		v := convertValue(e.Value)
		if e.Value.Kind() == output.KindTSeries {
			v = timeSeries(e.Value, last)
		}
		cm.Entries[i] = Entry{Key: convertValues(e.Key), Value: v}
	}
	return cm
}

// timeSeries converts a tseries whose map's window ends at interval last.
func timeSeries(v output.Value, last uint64) TimeSeries {
	interval, _ := v.TSeriesInterval()
	ts := TimeSeries{Interval: time.Duration(interval)}
	for _, p := range v.TSeriesPoints(last) {
		var val any = p.Value
		if v.Signed() {
			val = int64(p.Value)
		}
		ts.Points = append(ts.Points, TimePoint{Start: time.Unix(0, int64(p.Epoch*interval)), Value: val})
	}
	return ts
}

func convertValues(vals []output.Value) []any {
	if vals == nil {
		return nil
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = convertValue(v)
	}
	return out
}

func convertValue(v output.Value) any {
	switch v.Kind() {
	case output.KindInt, output.KindSum:
		if v.Signed() {
			return v.Int()
		}
		return v.Uint()
	case output.KindBool:
		return v.Uint() != 0
	case output.KindCount:
		return v.Uint()
	case output.KindMin, output.KindMax:
		return v.Int()
	case output.KindPointer:
		return uintptr(v.Uint())
	case output.KindNone:
		return nil
	case output.KindTuple, output.KindArray:
		return convertValues(v.Elems())
	case output.KindRecord:
		names, vals := v.FieldNames(), v.Elems()
		fields := make([]Field, len(vals))
		for i := range vals {
			fields[i] = Field{Name: names[i], Value: convertValue(vals[i])}
		}
		return fields
	case output.KindBuffer:
		return []byte(v.Text())
	case output.KindKsym, output.KindUsym:
		return Symbol{Addr: v.Uint(), Name: v.Text()}
	case output.KindKstack, output.KindUstack:
		frames := make([]Frame, len(v.Frames()))
		for i, f := range v.Frames() {
			frames[i] = Frame{Addr: f.Addr, Symbol: f.Symbol, Offset: f.Offset, Module: f.Module}
		}
		return frames
	case output.KindInet:
		// An unknown family has no address; it prints as "".
		addr, _ := netip.ParseAddr(v.Text())
		return addr
	case output.KindStrerror:
		return syscall.Errno(v.Int())
	case output.KindAvg, output.KindStats:
		return Stats{Count: int64(v.Uint()), Total: v.Total()}
	case output.KindHist:
		return histogram(v)
	case output.KindLhist:
		return linearHistogram(v)
	}
	return v.Text()
}

// histogram turns hist()'s buckets, negatives, then those of each
// value below 2^bits and the 2^bits of each power of two above, into
// those that hold values.
func histogram(v output.Value) Histogram {
	var h Histogram
	for i, c := range v.Buckets() {
		if c == 0 {
			continue
		}
		b := Bucket{Count: c}
		b.Min, b.Max = v.HistBucketBounds(i)
		h.Buckets = append(h.Buckets, b)
	}
	return h
}

// linearHistogram turns lhist()'s buckets, below min, one per step, then
// from max on, into those that hold values.
func linearHistogram(v output.Value) Histogram {
	min, max, step := v.LhistBounds()
	n := int((max - min) / step)
	var h Histogram
	for i, c := range v.Buckets() {
		if c == 0 || i > n+1 {
			continue
		}
		b := Bucket{Count: c}
		switch {
		case i == 0:
			b.Min, b.Max = math.MinInt64, min-1
		case i == n+1:
			b.Min, b.Max = min+int64(n)*step, math.MaxInt64
		default:
			b.Min = min + int64(i-1)*step
			b.Max = b.Min + step - 1
		}
		h.Buckets = append(h.Buckets, b)
	}
	return h
}
