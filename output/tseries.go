package output

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// TSeriesPoint is one interval of a tseries() map entry: its number,
// the interval's start divided by its length, and the value the CPUs'
// parts of it reduce to (raw bits; signed or not as the series is).
type TSeriesPoint struct {
	Epoch uint64
	Value uint64
}

type tseries struct {
	interval, intervals uint64
	signed              bool
	points              []TSeriesPoint // by epoch, each epoch once
}

// TSeries returns the value of a tseries(v, interval, intervals[, agg])
// map entry: the intervals its buckets hold, in any order; of points of
// one epoch the first counts. An interval or intervals of 0 yields an
// invalid Value.
func TSeries(interval, intervals uint64, signed bool, points []TSeriesPoint) Value {
	if interval == 0 || intervals == 0 {
		return Value{}
	}
	ps := slices.Clone(points)
	slices.SortStableFunc(ps, func(a, b TSeriesPoint) int {
		switch {
		case a.Epoch < b.Epoch:
			return -1
		case a.Epoch > b.Epoch:
			return 1
		}
		return 0
	})
	ps = slices.CompactFunc(ps, func(a, b TSeriesPoint) bool { return a.Epoch == b.Epoch })
	return Value{kind: KindTSeries, signed: signed, ref: &tseries{interval: interval, intervals: intervals, signed: signed, points: ps}}
}

// TSeriesInterval returns a tseries' interval in nanoseconds and how
// many intervals it keeps.
func (v Value) TSeriesInterval() (interval, intervals uint64) {
	if t := v.tseries(); t != nil {
		return t.interval, t.intervals
	}
	return 0, 0
}

// TSeriesLatest returns the number of the latest interval a tseries
// holds: a map shows the window of intervals ending at the latest of
// all its entries.
func (v Value) TSeriesLatest() uint64 {
	if t := v.tseries(); t != nil {
		return t.latest()
	}
	return 0
}

// TSeriesPoints returns the intervals with values of a tseries in the
// window ending at interval last, oldest first, as bpftrace prints them.
func (v Value) TSeriesPoints(last uint64) []TSeriesPoint {
	t := v.tseries()
	if t == nil {
		return nil
	}
	var ps []TSeriesPoint
	for _, r := range t.rows(last) {
		if r.ok {
			ps = append(ps, TSeriesPoint{Epoch: r.start / t.interval, Value: r.value})
		}
	}
	return ps
}

func (v Value) tseries() *tseries { t, _ := v.ref.(*tseries); return t }

// latest is the last interval a tseries holds, 0 for none.
func (t *tseries) latest() uint64 {
	if len(t.points) == 0 {
		return 0
	}
	return t.points[len(t.points)-1].Epoch
}

// tsRow is one printed interval: its start in nanoseconds since the
// Unix epoch, and its value when it has one.
type tsRow struct {
	start uint64
	value uint64
	ok    bool
}

// rows are the intervals bpftrace prints of t when the map's latest
// interval is last: those of the window of t.intervals ending at last,
// from the first this entry has a value for (or only the last, when it
// has none there), the ones without a value included.
func (t *tseries) rows(last uint64) []tsRow {
	first := last - t.intervals + 1 // wraps as bpftrace's does
	from := last
	for _, p := range t.points {
		if p.Epoch >= first {
			from = min(from, p.Epoch)
		}
	}
	if first > last {
		return nil
	}
	from = max(from, first)
	var rows []tsRow
	i, _ := slices.BinarySearchFunc(t.points, from, func(p TSeriesPoint, e uint64) int {
		switch {
		case p.Epoch < e:
			return -1
		case p.Epoch > e:
			return 1
		}
		return 0
	})
	for e := from; ; e++ {
		r := tsRow{start: e * t.interval}
		if i < len(t.points) && t.points[i].Epoch == e {
			r.value, r.ok = t.points[i].Value, true
			i++
		}
		rows = append(rows, r)
		if e == last {
			break
		}
	}
	return rows
}

// appendTSeriesJSON appends the intervals with values, as objects of
// their start, in UTC, and value.
func appendTSeriesJSON(b []byte, t *tseries, last uint64) []byte {
	b = append(b, '[')
	first := true
	for _, r := range t.rows(last) {
		if !r.ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"interval_start":"`...)
		b = time.Unix(0, int64(r.start)).UTC().AppendFormat(b, "2006-01-02 15:04:05.000000000")
		b = append(b, `","value":`...)
		b = t.appendNum(b, r.value)
		b = append(b, '}')
	}
	return append(b, ']')
}

func (t *tseries) appendNum(b []byte, v uint64) []byte {
	if t.signed {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendUint(b, v, 10)
}

// Layout of the graph: its width with the two borders, and the width
// the low bound takes above and below it.
const (
	tsGraphWidth = 53
	tsLowWidth   = 21
)

// tsBound is the low or high bound of a graph: null when no interval
// has a value.
type tsBound struct {
	v  uint64
	ok bool
}

// appendTSeriesText appends the graph bpftrace 0.26.1 draws of a
// tseries: a row per interval, its start in local time, a * placed
// between the lowest and the highest value, and the value; the graph
// ends with a newline, "<no data>" without one.
func appendTSeriesText(b []byte, t *tseries, last uint64) []byte {
	rows := t.rows(last)
	if len(rows) == 0 {
		return append(b, "<no data>"...)
	}
	less := func(a, c uint64) bool {
		if t.signed {
			return int64(a) < int64(c)
		}
		return a < c
	}
	lo := tsBound{rows[0].value, rows[0].ok}
	hi := lo
	for _, r := range rows {
		if !r.ok {
			continue
		}
		// A missing first row leaves the bounds null: bpftrace orders
		// a missing value below every number.
		if lo.ok && less(r.value, lo.v) {
			lo.v = r.value
		}
		if !hi.ok || less(hi.v, r.value) {
			hi = tsBound{r.value, true}
		}
	}
	if lo == hi && lo.ok {
		// Leave room on both sides of a flat line, short of overflowing.
		switch {
		case t.signed && int64(lo.v) > -1<<63, !t.signed && lo.v > 0:
			lo.v--
		}
		switch {
		case t.signed && int64(hi.v) < 1<<63-1, !t.signed && hi.v < 1<<64-1:
			hi.v++
		}
	}

	// The time column shows the unit of the interval between rows.
	step := (rows[len(rows)-1].start - rows[0].start) / uint64(max(len(rows)-1, 1))
	frac := 9 // digits of the second shown
	unit := "ns"
	switch {
	case step >= uint64(time.Second):
		frac, unit = 0, ""
	case step >= uint64(time.Millisecond):
		frac, unit = 3, "ms"
	case step >= uint64(time.Microsecond):
		frac, unit = 6, "μs"
	}
	timeFmt := "hh:mm:ss"
	timeSize := 8
	if frac > 0 {
		timeFmt += "." + unit
		timeSize += 1 + frac
	}

	bound := func(v tsBound) string {
		if !v.ok {
			return "null"
		}
		return string(t.appendNum(nil, v.v))
	}
	bounds := func(b []byte) []byte {
		b = appendPadRight(b, bound(lo), tsLowWidth)
		b = appendPadLeft(b, bound(hi), tsGraphWidth-tsLowWidth)
		return append(b, '\n')
	}
	b = append(b, strings.Repeat(" ", timeSize+1)...)
	b = bounds(b)
	b = appendPadRight(b, timeFmt, timeSize+1)
	b = append(b, '|')
	b = append(b, strings.Repeat("_", tsGraphWidth-2)...)
	b = append(b, "|\n"...)

	// A dotted column marks zero when the range spans it.
	zero := 0
	if dl, dh := tsDistance(t, lo, 0), tsDistance(t, tsBound{0, true}, tsBoundInt(t, hi)); dl < 0 && dh < 0 {
		zero = int(float32(tsGraphWidth) * float32(dl) / float32(tsDistance(t, lo, tsBoundInt(t, hi))))
	}
	line := make([]byte, tsGraphWidth)
	for _, r := range rows {
		tm := time.Unix(0, int64(r.start))
		b = tm.AppendFormat(b, "15:04:05")
		if frac > 0 {
			b = append(b, '.')
			ns := r.start % uint64(time.Second)
			for range 9 - frac {
				ns /= 10
			}
			s := strconv.FormatUint(ns, 10)
			b = append(b, strings.Repeat("0", frac-len(s))...)
			b = append(b, s...)
		}
		b = append(b, ' ')
		for i := range line {
			line[i] = ' '
		}
		line[0], line[tsGraphWidth-1] = '|', '|'
		if zero > 0 {
			line[zero] = '.'
		}
		if !r.ok {
			b = append(b, line...)
			b = append(b, " -\n"...)
			continue
		}
		at := tsGraphWidth / 2
		if lo != hi {
			at = int(float32(tsGraphWidth-1) * float32(tsDistance(t, lo, int64(r.value))) / float32(tsDistance(t, lo, tsBoundInt(t, hi))))
		}
		line[max(0, min(tsGraphWidth-1, at))] = '*'
		b = append(b, line...)
		b = append(b, ' ')
		b = t.appendNum(b, r.value)
		b = append(b, '\n')
	}
	b = append(b, strings.Repeat(" ", timeSize+1)...)
	b = append(b, 'v')
	b = append(b, strings.Repeat("_", tsGraphWidth-2)...)
	b = append(b, "v\n"...)
	b = append(b, strings.Repeat(" ", timeSize+1)...)
	return bounds(b)
}

// tsBoundInt is a bound as the signed number bpftrace measures
// distances to; a null bound measures as 0.
func tsBoundInt(t *tseries, v tsBound) int64 {
	if !v.ok {
		return 0
	}
	return int64(v.v)
}

// tsDistance is v - other as bpftrace computes it for the graph, in
// 64-bit integers; 0 for a null v.
func tsDistance(t *tseries, v tsBound, other int64) int64 {
	if !v.ok {
		return 0
	}
	if t.signed {
		return int64(v.v) - other
	}
	switch {
	case other < 0:
		return int64(uint64(-other) + v.v)
	case v.v > uint64(other):
		return int64(v.v - uint64(other))
	}
	return -int64(uint64(other) - v.v)
}

// appendPadRight appends s left-justified in width bytes, as a C++
// stream pads it: by bytes, not characters.
func appendPadRight(b []byte, s string, width int) []byte {
	b = append(b, s...)
	return append(b, strings.Repeat(" ", max(width-len(s), 0))...)
}

// appendPadLeft appends s right-justified in width bytes.
func appendPadLeft(b []byte, s string, width int) []byte {
	b = append(b, strings.Repeat(" ", max(width-len(s), 0))...)
	return append(b, s...)
}
