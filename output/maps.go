package output

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Map is a BPF map as the runtime read it, ready to print.
type Map struct {
	Name    string  // as written in the program, with the @: "@", "@bytes"
	Kind    Kind    // the kind of its values, needed even when it is empty
	Entries []Entry // in any order; a map without keys has one entry with a nil Key
}

// Entry is one element of a Map.
type Entry struct {
	Key   []Value // the map's key, one Value per [k1, k2, ...] element
	Value Value
}

// ErrMapKind reports a Map whose entries do not fit its declared shape.
var ErrMapKind = errors.New("malformed map")

func (m *Map) check() error {
	if m.Kind == KindInvalid {
		return fmt.Errorf("map %s: %w: no value kind", m.Name, ErrMapKind)
	}
	for i, e := range m.Entries {
		if e.Value.kind != m.Kind {
			return fmt.Errorf("map %s: %w: entry %d holds a %s value in a %s map", m.Name, ErrMapKind, i, e.Value.kind, m.Kind)
		}
		if len(e.Key) != len(m.Entries[0].Key) {
			return fmt.Errorf("map %s: %w: entry %d has %d keys, entry 0 has %d", m.Name, ErrMapKind, i, len(e.Key), len(m.Entries[0].Key))
		}
	}
	if len(m.Entries) > 1 && len(m.Entries[0].Key) == 0 {
		return fmt.Errorf("map %s: %w: %d entries without keys", m.Name, ErrMapKind, len(m.Entries))
	}
	return nil
}

// Sorted puts m's entries in the order bpftrace 0.17 prints them, in
// place, and returns them.
//
// 0.17 reads entries in the kernel's hash order, or, for hist, lhist, avg
// and stats maps, in the byte order of their keys; then it sorts them with
// std::sort by value (integers, count, sum, min, max), by total count
// (hist, lhist), by average (avg, stats), and otherwise stably by key,
// last key element first, comparing integers as unsigned and strings as
// strncmp does and leaving other key kinds where they are. Starting from
// the byte order of the keys for every map, as this does, makes ties come
// out as 0.17 prints them where its order is not left to the hash.
func (m *Map) Sorted() []Entry {
	// The byte orders of all keys share one buffer, and a permutation is
	// sorted rather than the entries, which it then reorders in place: a
	// map of a million elements is sorted in a few bytes an element.
	var orders []byte
	ends := make([]int, len(m.Entries))
	for i, e := range m.Entries {
		for _, k := range e.Key {
			orders = appendOrder(orders, k)
		}
		ends[i] = len(orders)
	}
	order := func(i int32) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return orders[start:ends[i]]
	}
	perm := make([]int32, len(m.Entries))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return bytes.Compare(order(a), order(b)) })
	entries := m.Entries
	permute(entries, perm)

	switch m.Kind {
	case KindInt, KindSum:
		stdSort(entries, func(a, b *Entry) bool {
			if a.Value.signed {
				return int64(a.Value.n) < int64(b.Value.n)
			}
			return a.Value.n < b.Value.n
		})
	case KindCount:
		stdSort(entries, func(a, b *Entry) bool { return a.Value.n < b.Value.n })
	case KindMin, KindMax:
		stdSort(entries, func(a, b *Entry) bool { return int64(a.Value.n) < int64(b.Value.n) })
	case KindHist, KindLhist:
		type totalled struct {
			total uint64
			e     Entry
		}
		pairs := make([]totalled, len(entries))
		for i, e := range entries {
			pairs[i] = totalled{histTotal(e.Value), e}
		}
		stdSort(pairs, func(a, b *totalled) bool { return a.total < b.total })
		for i := range pairs {
			entries[i] = pairs[i].e
		}
	case KindAvg, KindStats:
		stdSort(entries, func(a, b *Entry) bool { return a.Value.average() < b.Value.average() })
	case KindTSeries:
		// From the least to the most recently updated.
		stdSort(entries, func(a, b *Entry) bool { return a.Value.tseries().latest() < b.Value.tseries().latest() })
	default:
		sortByKey(entries)
	}
	return entries
}

// permute moves s[perm[i]] to s[i] for every i, following each cycle of
// the permutation, which it uses up.
func permute[T any](s []T, perm []int32) {
	for i := range perm {
		if perm[i] < 0 {
			continue
		}
		held := s[i]
		j := i
		for int(perm[j]) != i {
			next := int(perm[j])
			s[j] = s[next]
			perm[j] = -1
			j = next
		}
		s[j] = held
		perm[j] = -1
	}
}

// sortByKey is bpftrace's sort_by_key: a stable sort on each key element
// from the last to the first, for integer and string elements only.
func sortByKey(entries []Entry) {
	if len(entries) == 0 {
		return
	}
	for i := len(entries[0].Key) - 1; i >= 0; i-- {
		switch entries[0].Key[i].kind {
		case KindInt:
			slices.SortStableFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Key[i].n, b.Key[i].n) })
		case KindString:
			slices.SortStableFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Key[i].s, b.Key[i].s) })
		}
	}
}

func histTotal(v Value) uint64 {
	var sum uint64
	if l := v.lhist(); l != nil {
		for _, c := range l.buckets {
			sum += c
		}
		return sum
	}
	for _, c := range v.buckets() {
		sum += c
	}
	return sum
}

// appendOrder appends the bytes bpftrace 0.17 keeps for a key element, or
// for kinds whose raw form the Value does not carry, bytes that sort the
// same way their text does. Integers are 8 bytes little-endian, as 0.17
// widens every integer key to 64 bits.
func appendOrder(b []byte, v Value) []byte {
	switch v.kind {
	case KindInt, KindKsym, KindUsym, KindPointer, KindStrerror, KindBool:
		return binary.LittleEndian.AppendUint64(b, v.n)
	case KindInet:
		b = binary.LittleEndian.AppendUint64(b, v.n)
		addr, _ := v.ref.(string)
		var raw [16]byte
		copy(raw[:], addr)
		return append(b, raw[:]...)
	case KindBuffer:
		b = append(b, byte(len(v.s)))
		return append(append(b, v.s...), 0)
	case KindArray, KindRecord:
		for _, e := range v.elems() {
			b = appendOrder(b, e)
		}
		return b
	case KindKstack, KindUstack:
		text := appendStack(nil, v, keyStackIndent)
		return append(append(b, text...), 0)
	}
	return append(append(b, v.s...), 0)
}
