package session

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
)

// pair is one CPU's part of a 16-byte aggregation: min and max keep the
// value and a set flag, avg and stats a count and a total.
type pair struct{ A, B uint64 }

// readMap reads a whole map and decodes it for printing with dec.
func (s *Session) readMap(gm *codegen.Map, dec *decoder) (*output.Map, error) {
	m := s.coll.Maps[gm.Spec]
	om := &output.Map{Name: gm.Display(), Kind: check.OutputKind(gm.Value)}
	vt := gm.Value
	if vt.Kind == check.Ptr && s.out.Compat != compat.V017 {
		om.Kind = output.KindPointer // decoded as the value's address
	}
	keyed := gm.Keys != nil
	var keys keySlab
	// Hist and lhist elements are spread over one key per bucket; they
	// are gathered per user key.
	type hist struct {
		key     []output.Value
		buckets []uint64
	}
	var hists map[string]*hist
	var series map[string]*tseriesEntry
	var order []string
	var err error
	switch {
	case !gm.PerCPU:
		size := int(m.ValueSize())
		var vals []byte
		err = readBatches(m, func(n int) any {
			out, b := byteRows(n, size)
			vals = b
			return out
		}, func(i int, key []byte) {
			val := vals[i*size : (i+1)*size]
			om.Entries = append(om.Entries, output.Entry{Key: keys.decode(dec, gm, key, keyed), Value: dec.value(vt, val, asValue)})
		})
	case gm.ValueSize == 8:
		var all []uint64
		err = readBatches(m, func(n int) any {
			all = make([]uint64, n*s.ncpu)
			return all
		}, func(i int, key []byte) {
			vals := all[i*s.ncpu : (i+1)*s.ncpu]
			switch vt.Kind {
			case check.Hist, check.Lhist:
				userKey := key[:len(key)-8]
				bucket := le.Uint64(key[len(key)-8:])
				if hists == nil {
					hists = map[string]*hist{}
				}
				h := hists[string(userKey)]
				if h == nil {
					// Hist buckets: 0 for negatives, then 2^bits for
					// the values below 2^bits and for each power of two
					// from there up to 2^63.
					n := (64-vt.HistBits)<<vt.HistBits + 1
					if vt.Kind == check.Lhist {
						n = int((vt.LhistMax-vt.LhistMin)/vt.LhistStep) + 2
					}
					h = &hist{key: keys.decode(dec, gm, key, keyed), buckets: make([]uint64, n)}
					hists[string(userKey)] = h
					order = append(order, string(userKey))
				}
				if bucket < uint64(len(h.buckets)) {
					h.buckets[bucket] += sumU64(vals)
				}
			case check.Count:
				om.Entries = append(om.Entries, output.Entry{Key: keys.decode(dec, gm, key, keyed), Value: output.Count(sumU64(vals))})
			case check.Sum:
				om.Entries = append(om.Entries, output.Entry{Key: keys.decode(dec, gm, key, keyed), Value: output.Sum(sumU64(vals), vt.Signed)})
			}
		})
	case vt.Kind == check.TSeries:
		var all []tsPart
		err = readBatches(m, func(n int) any {
			all = make([]tsPart, n*s.ncpu)
			return all
		}, func(i int, key []byte) {
			userKey := key[:len(key)-8]
			if series == nil {
				series = map[string]*tseriesEntry{}
			}
			e := series[string(userKey)]
			if e == nil {
				e = &tseriesEntry{key: keys.decode(dec, gm, key, keyed)}
				series[string(userKey)] = e
				order = append(order, string(userKey))
			}
			e.points = append(e.points, reduceTSeries(vt, all[i*s.ncpu:(i+1)*s.ncpu]))
		})
	default:
		var all []pair
		err = readBatches(m, func(n int) any {
			all = make([]pair, n*s.ncpu)
			return all
		}, func(i int, key []byte) {
			if v, ok := combine(vt, all[i*s.ncpu:(i+1)*s.ncpu]); ok {
				om.Entries = append(om.Entries, output.Entry{Key: keys.decode(dec, gm, key, keyed), Value: v})
			}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", gm.Display(), err)
	}
	// bpftrace 0.17 shows a count map without keys as 0 until it counts,
	// and after clear().
	if vt.Kind == check.Count && !keyed && len(om.Entries) == 0 && s.out.Compat == compat.V017 {
		om.Entries = append(om.Entries, output.Entry{Value: output.Count(0)})
	}
	if vt.Kind == check.TSeries {
		for _, k := range order {
			e := series[k]
			v := output.TSeries(uint64(vt.TSInterval), uint64(vt.TSIntervals), vt.Signed, e.points)
			om.Entries = append(om.Entries, output.Entry{Key: e.key, Value: v})
		}
		return om, nil
	}
	for _, k := range order {
		h := hists[k]
		var v output.Value
		if vt.Kind == check.Hist {
			v = output.FineHist(vt.HistBits, h.buckets)
		} else {
			v = output.Lhist(vt.LhistMin, vt.LhistMax, vt.LhistStep, h.buckets)
		}
		om.Entries = append(om.Entries, output.Entry{Key: h.key, Value: v})
	}
	return om, nil
}

// tsPart is one CPU's part of a tseries() bucket: the value, what the
// aggregation function keeps beside it (the time of a last value, the
// count of an average, the set flag of a min or max) and the interval
// the part is of, 0 for a part never written.
type tsPart struct{ Value, Meta, Epoch uint64 }

// tseriesEntry gathers the buckets of one key of a tseries() map.
type tseriesEntry struct {
	key    []output.Value
	points []output.TSeriesPoint
}

// reduceTSeries combines the CPUs' parts of a tseries() bucket: those of
// its latest interval, by the aggregation function. A bucket no CPU has
// written, as zero() leaves it, is interval 0 with value 0, as bpftrace
// has it.
func reduceTSeries(t *check.Type, parts []tsPart) output.TSeriesPoint {
	var latest uint64
	for _, p := range parts {
		latest = max(latest, p.Epoch)
	}
	if latest == 0 {
		return output.TSeriesPoint{}
	}
	var cur tsPart
	found := false
	for _, p := range parts {
		if p.Epoch != latest {
			continue
		}
		if !found {
			cur, found = p, true
			continue
		}
		switch t.TSAgg {
		case "":
			// The value written last wins.
			if p.Meta > cur.Meta {
				cur = p
			}
		case "avg":
			cur.Value += p.Value
			cur.Meta += p.Meta
		case "sum":
			cur.Value += p.Value
		case "min", "max":
			k := &check.Type{Kind: check.Min, Signed: t.Signed}
			if t.TSAgg == "max" {
				k.Kind = check.Max
			}
			if better(k, p.Value, cur.Value) {
				cur.Value = p.Value
			}
		}
	}
	v := cur.Value
	if t.TSAgg == "avg" && cur.Meta != 0 {
		if t.Signed {
			v = uint64(int64(v) / int64(cur.Meta))
		} else {
			v /= cur.Meta
		}
	}
	return output.TSeriesPoint{Epoch: latest, Value: v}
}

// batchSize is how many elements one system call reads at first.
const batchSize = 256

// readBatches reads every element of m a batch at a time: newValues
// makes the slice that receives the values of n elements, and fn is
// called with the index and key of each element read into it.
func readBatches(m *ebpf.Map, newValues func(n int) any, fn func(i int, key []byte)) error {
	keySize := int(m.KeySize())
	var cursor ebpf.MapBatchCursor
	for n := batchSize; ; {
		keysOut, keys := byteRows(n, keySize)
		got, err := m.BatchLookup(&cursor, keysOut, newValues(n), nil)
		if errors.Is(err, unix.ENOSPC) {
			// A hash bucket holds more elements than the batch; the
			// kernel read none of them.
			n *= 2
			continue
		}
		for i := range got {
			fn(i, keys[i*keySize:(i+1)*keySize])
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// byteRows makes a slice of n arrays of size bytes, the shape batch
// lookups fill, and returns it with the bytes behind it.
func byteRows(n, size int) (any, []byte) {
	v := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(size, reflect.TypeFor[byte]())), n, n)
	return v.Interface(), unsafe.Slice((*byte)(v.UnsafePointer()), n*size)
}

func sumU64(vals []uint64) uint64 {
	var n uint64
	for _, v := range vals {
		n += v
	}
	return n
}

// combine merges the CPUs' parts of a 16-byte aggregation; ok is false
// when no CPU holds a value.
func combine(t *check.Type, vals []pair) (output.Value, bool) {
	switch t.Kind {
	case check.Avg, check.Stats:
		var count, total uint64
		for _, v := range vals {
			count += v.A
			total += v.B
		}
		if t.Kind == check.Avg {
			return output.Avg(int64(count), int64(total)), true
		}
		return output.Stats(int64(count), int64(total)), true
	case check.Min, check.Max:
		var best uint64
		found := false
		for _, v := range vals {
			if v.B == 0 {
				continue
			}
			if !found || better(t, v.A, best) {
				best, found = v.A, true
			}
		}
		if !found {
			return output.Value{}, false
		}
		if t.Kind == check.Min {
			return output.Min(int64(best)), true
		}
		return output.Max(int64(best)), true
	}
	return output.Value{}, false
}

// better reports whether a should replace b as the min or max.
func better(t *check.Type, a, b uint64) bool {
	if t.Signed {
		if t.Kind == check.Min {
			return int64(a) < int64(b)
		}
		return int64(a) > int64(b)
	}
	if t.Kind == check.Min {
		return a < b
	}
	return a > b
}

// A keySlab hands out the keys of a map's entries from chunks of
// values: one allocation per element made reading a million-element map
// a million small objects for the collector.
type keySlab struct{ free []output.Value }

// keySlabChunk is how many values a chunk holds.
const keySlabChunk = 4096

// decode decodes a stored key into the map's key values.
func (s *keySlab) decode(dec *decoder, gm *codegen.Map, key []byte, keyed bool) []output.Value {
	if !keyed {
		return nil
	}
	n := len(gm.Keys)
	if len(s.free) < n {
		s.free = make([]output.Value, max(n, keySlabChunk))
	}
	vals := s.free[:n:n]
	s.free = s.free[n:]
	// The stored key lays the keys out first; hist and lhist only add
	// the bucket after them.
	for i, t := range gm.Keys {
		vals[i] = dec.value(t, key[gm.Key.Offsets[i]:], asKey)
	}
	return vals
}

// clearMap deletes every element, or with zero sets every value to zero.
func (s *Session) clearMap(gm *codegen.Map, zero bool) error {
	m := s.coll.Maps[gm.Spec]
	var keys [][]byte
	var cur any // nil asks for the first key
	for {
		var next []byte
		if err := m.NextKey(cur, &next); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				break
			}
			return fmt.Errorf("clear %s: %w", gm.Display(), err)
		}
		keys = append(keys, next)
		cur = next
	}
	var errs []error
	for _, k := range keys {
		var err error
		switch {
		case !zero:
			if err = m.Delete(k); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case !gm.PerCPU:
			err = m.Put(k, make([]byte, gm.ValueSize))
		case gm.ValueSize == 8:
			err = m.Put(k, make([]uint64, s.ncpu))
		case gm.Value.Kind == check.TSeries:
			err = m.Put(k, make([]tsPart, s.ncpu))
		default:
			err = m.Put(k, make([]pair, s.ncpu))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
