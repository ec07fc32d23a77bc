package output

import (
	"math"
	"strconv"
)

// barWidth is the width of a histogram's bar column, in '@' signs.
const barWidth = 52

// histRange finds the first and last buckets with a positive count and the
// largest count. Like 0.17, it reads each count as a C int (its low 32
// bits), so a bucket over 2^31 counts in the wrong direction.
func histRange(counts []uint64) (first, last int, max int32) {
	first, last = -1, -1
	for i, c := range counts {
		v := int32(c)
		if v > 0 {
			if first == -1 {
				first = i
			}
			last = i
		}
		if v > max {
			max = v
		}
	}
	return first, last, max
}

// appendRow appends one table row: the label padded to 16 columns, the
// shown count right-aligned in 8, and a bar of count/max of barWidth '@'
// signs, computed in float arithmetic and truncated as bpftrace does.
func appendRow(b []byte, label string, count, shown uint64, max float32) []byte {
	b = append(b, label...)
	for i := len(label); i < 16; i++ {
		b = append(b, ' ')
	}
	num := strconv.AppendUint(nil, shown, 10)
	for i := len(num); i < 8; i++ {
		b = append(b, ' ')
	}
	b = append(b, num...)
	b = append(b, " |"...)
	f := float32(count) / max * barWidth
	n := barWidth // 0.17 would fail allocating a bar this long; cap it
	if f < math.MaxInt32 {
		n = int(f)
	}
	for i := 0; i < n; i++ {
		b = append(b, '@')
	}
	for i := n; i < barWidth; i++ {
		b = append(b, ' ')
	}
	return append(b, "|\n"...)
}

// histLabel is hist_index_label: 2^power with a K, M, G or T suffix.
func histLabel(b []byte, power int) []byte {
	suffix := byte(0)
	switch {
	case power >= 40:
		suffix, power = 'T', power-40
	case power >= 30:
		suffix, power = 'G', power-30
	case power >= 20:
		suffix, power = 'M', power-20
	case power >= 10:
		suffix, power = 'K', power-10
	}
	b = strconv.AppendInt(b, 1<<power, 10)
	if suffix != 0 {
		b = append(b, suffix)
	}
	return b
}

// appendHistText appends hist()'s table, counts divided by div.
func appendHistText(b []byte, counts []uint64, div uint64) []byte {
	first, last, max := histRange(counts)
	if last == -1 {
		return b
	}
	var label []byte
	for i := first; i <= last; i++ {
		label = label[:0]
		switch i {
		case 0:
			label = append(label, "(..., 0)"...)
		case 1:
			label = append(label, "[0]"...)
		case 2:
			label = append(label, "[1]"...)
		default:
			label = append(label, '[')
			label = histLabel(label, i-2)
			label = append(label, ", "...)
			label = histLabel(label, i-1)
			label = append(label, ')')
		}
		b = appendRow(b, string(label), counts[i], counts[i]/div, float32(max))
	}
	return b
}

// appendHistJSON appends hist()'s buckets as JSON objects, each but the
// first (of the negative values, which has only "max": -1) with the least
// and greatest value bounds gives it.
func appendHistJSON(b []byte, counts []uint64, div uint64, bounds func(i int) (lo, hi int64)) []byte {
	first, last, _ := histRange(counts)
	if last == -1 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i := first; i <= last; i++ {
		if i > first {
			b = append(b, ", "...)
		}
		b = append(b, '{')
		if i == 0 {
			b = append(b, `"max": -1, `...)
		} else {
			lo, hi := bounds(i)
			b = append(b, `"min": `...)
			b = strconv.AppendInt(b, lo, 10)
			b = append(b, `, "max": `...)
			b = strconv.AppendInt(b, hi, 10)
			b = append(b, ", "...)
		}
		b = append(b, `"count": `...)
		b = strconv.AppendUint(b, counts[i]/div, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// oldHistBounds are bpftrace 0.17's JSON bounds of hist() bucket i > 0,
// computed in 32-bit int arithmetic, so [2G, 4G) comes out as min
// -2147483648, max 0, and higher buckets wrap around likewise.
func oldHistBounds(i int) (lo, hi int64) {
	switch i {
	case 1:
		return 0, 0
	case 2:
		return 1, 1
	}
	return int64(int32(1) << ((i - 2) & 31)), int64(int32(1)<<((i-1)&31) - 1)
}

// fineBound is the bound bpftrace 0.26 puts between buckets j and j+1 of
// a hist() with 2^bits buckets per power of two: the least value of
// bucket j+1, and its label, empty while buckets hold a single value
// each (up to bucket 2<<bits), where the label is the plain number.
func fineBound(j, bits int) (n uint64, label string) {
	if j <= 2<<bits {
		return uint64(j), ""
	}
	// j's high bits give the power of two, its low bits the part of it.
	parts := 1 << bits
	part := uint64(parts + j&(parts-1))
	power := j>>bits - 1
	// The label scales by the largest power of 1024 below it.
	decade := power / 10
	label = strconv.FormatUint(uint64(1)<<(power-10*decade)*part, 10)
	if decade > 0 {
		label += string("KMGTPE"[decade-1])
	}
	return uint64(1) << power * part, label
}

// appendFineHistText appends a hist()'s table as bpftrace 0.26 prints
// it, counts divided by div: a bucket of one value shows it, [v], the
// others [least, next); the bars scale to the largest divided count.
func appendFineHistText(b []byte, counts []uint64, bits int, div uint64) []byte {
	first, last, _ := histRange(counts)
	if last == -1 {
		return b
	}
	var top uint64
	for _, c := range counts[first : last+1] {
		top = max(top, c/div)
	}
	var label []byte
	for i := first; i <= last; i++ {
		label = label[:0]
		switch {
		case i == 0:
			label = append(label, "(..., 0)"...)
		case i <= 2<<bits:
			label = append(label, '[')
			label = strconv.AppendInt(label, int64(i-1), 10)
			label = append(label, ']')
		default:
			lo, loLabel := fineBound(i-1, bits)
			_, hiLabel := fineBound(i, bits)
			if loLabel == "" {
				loLabel = strconv.FormatUint(lo, 10)
			}
			label = append(label, '[')
			label = append(label, loLabel...)
			label = append(label, ", "...)
			label = append(label, hiLabel...)
			label = append(label, ')')
		}
		b = appendRow(b, string(label), counts[i]/div, counts[i]/div, float32(top))
	}
	return b
}

// lhistRange is lhist_prepare: the last bucket with any count (-1 when all
// are zero), the largest count read as a C int, and the first and last
// buckets with a positive count among those in range.
func lhistRange(l *lhist) (last int, max int32, start, end int) {
	last = -1
	for i, c := range l.buckets {
		v := int32(c)
		if v != 0 {
			last = i
		}
		if v > max {
			max = v
		}
	}
	if last == -1 {
		return
	}
	start = -1
	for i, n := 0, l.nbuckets(); i <= n+1; i++ {
		if l.buckets[i] > 0 {
			if start == -1 {
				start = i
			}
			end = i
		}
	}
	if start == -1 {
		start = 0
	}
	return
}

// nbuckets is the number of in-range buckets, without the two open ones.
func (l *lhist) nbuckets() int { return int((uint64(l.max) - uint64(l.min)) / uint64(l.step)) }

// lhistLabel is lhist_index_label: n, or n/1024 with K or n/1048576 with M
// when it divides exactly. 0.26.1 uses the suffixes only when the step is
// a multiple of 1024; 0.17 (old) whatever the step.
func lhistLabel(b []byte, n, step int64, old bool) []byte {
	switch {
	case !old && step%1024 != 0:
		return strconv.AppendInt(b, n, 10)
	case n == 0:
		return append(b, '0')
	case n%1048576 == 0:
		return append(strconv.AppendInt(b, n/1048576, 10), 'M')
	case n%1024 == 0:
		return append(strconv.AppendInt(b, n/1024, 10), 'K')
	}
	return strconv.AppendInt(b, n, 10)
}

// appendLhistText appends lhist()'s table; bpftrace ignores print()'s
// divisor for lhist.
func appendLhistText(b []byte, l *lhist, old bool) []byte {
	last, max, start, end := lhistRange(l)
	if last == -1 {
		return b
	}
	var label []byte
	for i := start; i <= end; i++ {
		label = label[:0]
		switch i {
		case 0:
			label = append(label, "(..., "...)
			label = lhistLabel(label, l.min, l.step, old)
			label = append(label, ')')
		case l.nbuckets() + 1:
			label = append(label, '[')
			label = lhistLabel(label, l.max, l.step, old)
			label = append(label, ", ...)"...)
		default:
			label = append(label, '[')
			label = lhistLabel(label, int64(i-1)*l.step+l.min, l.step, old)
			label = append(label, ", "...)
			label = lhistLabel(label, int64(i)*l.step+l.min, l.step, old)
			label = append(label, ')')
		}
		b = appendRow(b, string(label), l.buckets[i], l.buckets[i], float32(max))
	}
	return b
}

// appendLhistJSON appends lhist()'s buckets as JSON objects.
func appendLhistJSON(b []byte, l *lhist) []byte {
	last, _, start, end := lhistRange(l)
	if last == -1 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i := start; i <= end; i++ {
		if i > start {
			b = append(b, ", "...)
		}
		b = append(b, '{')
		switch i {
		case 0:
			b = append(b, `"max": `...)
			b = strconv.AppendInt(b, l.min-1, 10)
			b = append(b, ", "...)
		case l.nbuckets() + 1:
			b = append(b, `"min": `...)
			b = strconv.AppendInt(b, l.max, 10)
			b = append(b, ", "...)
		default:
			b = append(b, `"min": `...)
			b = strconv.AppendInt(b, int64(i-1)*l.step+l.min, 10)
			b = append(b, `, "max": `...)
			b = strconv.AppendInt(b, int64(i)*l.step+l.min-1, 10)
			b = append(b, ", "...)
		}
		b = append(b, `"count": `...)
		b = strconv.AppendUint(b, l.buckets[i], 10)
		b = append(b, '}')
	}
	return append(b, ']')
}
