package output

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"kinst.dev/kinst/compat"
)

// The forms of bpftrace 0.26.1, from its src/output/{text,json}.cpp and
// the expected outputs of its tests/runtime.

func TestMessagesCurrent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		print      func(w *Writer) error
		text, json string
	}{
		{"attached one", func(w *Writer) error { return w.AttachedProbes(1) },
			"Attached 1 probe\n", `{"type": "attached_probes", "count": 1, "data": {"probes": 1}}` + "\n"},
		{"attached many", func(w *Writer) error { return w.AttachedProbes(3) },
			"Attached 3 probes\n", `{"type": "attached_probes", "count": 3, "data": {"probes": 3}}` + "\n"},
		{"lost", func(w *Writer) error { return w.Lost(12) },
			"Lost 12 events\n", `{"type": "lost_events", "count": 12, "data": {"events": 12}}` + "\n"},
		{"end", func(w *Writer) error { return w.End() }, "\n\n", ""},
		{"helper error", func(w *Writer) error {
			e := HelperError{Helper: "probe_read", Retcode: -14, File: "stdin", Line: 1, Column: 38}
			e.Warning = "stdin:1:38-45: WARNING: " + e.Message(false) + "\n"
			return w.HelperError(e)
		}, "stdin:1:38-45: WARNING: Bad address\nAdditional Info - helper: probe_read, retcode: -14\n",
			`{"type": "helper_error", "msg": "Bad address", "helper": "probe_read", "retcode": -14, "filename": "stdin", "line": 1, "col": 38}` + "\n"},
		{"struct", func(w *Writer) error { return w.Value(Record([]string{"m", "n"}, []Value{Int(2), Int(3)})) },
			"{ .m = 2, .n = 3 }\n", `{"type": "value", "data": {"m": 2, "n": 3}}` + "\n"},
		{"tuple with struct", func(w *Writer) error {
			return w.Value(Tuple(Int(0), Record([]string{"m", "n"}, []Value{Int(2), Int(3)})))
		}, "(0, { .m = 2, .n = 3 })\n", `{"type": "value", "data": [0,{"m": 2, "n": 3}]}` + "\n"},
		{"large unsigned", func(w *Writer) error { return w.Value(Uint(1<<64 - 1)) },
			"18446744073709551615\n", `{"type": "value", "data": "18446744073709551615"}` + "\n"},
		{"enum", func(w *Writer) error { return w.Value(Tuple(Enum(1, 4, true, "ONE"), Enum(444, 4, true, ""))) },
			"(ONE, 444)\n", `{"type": "value", "data": [1,444]}` + "\n"},
		{"inexact signed", func(w *Writer) error { return w.Value(Tuple(Int(1<<53+1), Int(-1<<53), Int(-1<<63))) },
			"(9007199254740993, -9007199254740992, -9223372036854775808)\n",
			`{"type": "value", "data": ["9007199254740993",-9007199254740992,-9223372036854775808]}` + "\n"},
	} {
		text, json := bothIn(t, compat.Current, tc.print)
		if text != tc.text || json != tc.json {
			t.Errorf("%s:\n text %q\n want %q\n json %q\n want %q", tc.name, text, tc.text, json, tc.json)
		}
	}
}

func TestHelperErrorMessageCurrent(t *testing.T) {
	for _, tc := range []struct {
		e    HelperError
		want string
	}{
		{HelperError{Helper: "map_update_elem", Retcode: -7}, "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`\nAdditional Info - helper: map_update_elem, retcode: -7"},
		{HelperError{Helper: "map_delete_elem", Retcode: -2}, "Can't delete map element because it does not exist.\nAdditional Info - helper: map_delete_elem, retcode: -2"},
		{HelperError{Helper: "map_lookup_elem", Retcode: 0}, "Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0"},
		{HelperError{Helper: "probe_read_str", Retcode: -1000}, "Unknown error 1000\nAdditional Info - helper: probe_read_str, retcode: -1000"},
	} {
		if got := tc.e.Message(false); got != tc.want {
			t.Errorf("%+v.Message(false) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestMapsCurrent(t *testing.T) {
	record := func(m, n int64) Value { return Record([]string{"m", "n"}, []Value{Int(m), Int(n)}) }
	for _, tc := range []struct {
		name       string
		m          *Map
		text, json string
	}{
		{"empty keyed", &Map{Name: "@e", Kind: KindInt}, "", ""},
		{"empty hist", &Map{Name: "@h", Kind: KindHist}, "", ""},
		{"stats", &Map{Name: "@", Kind: KindStats, Entries: scalar(Stats(3, -10))},
			"@: { .count = 3, .average = -3, .total = -10 }\n",
			`{"type": "stats", "data": {"@": {"count": 3, "average": -3, "total": -10}}}` + "\n"},
		{"keyed stats", &Map{Name: "@s", Kind: KindStats, Entries: []Entry{keyed(1, Stats(1, 5)), keyed(2, Stats(2, 20))}},
			"@s[1]: { .count = 1, .average = 5, .total = 5 }\n@s[2]: { .count = 2, .average = 10, .total = 20 }\n",
			`{"type": "stats", "data": {"@s": {"1": {"count": 1, "average": 5, "total": 5}, "2": {"count": 2, "average": 10, "total": 20}}}}` + "\n"},
		{"avg", &Map{Name: "@a", Kind: KindAvg, Entries: scalar(Avg(2, 10))},
			"@a: 5\n", `{"type": "stats", "data": {"@a": 5}}` + "\n"},
		{"hist", &Map{Name: "@", Kind: KindHist, Entries: scalar(Hist([]uint64{1, 0, 0, 2, 1, 0, 1}))},
			"@:\n" +
				"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
				"[0]                    0 |                                                    |\n" +
				"[1]                    0 |                                                    |\n" +
				"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
				"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
				"[8, 16)                0 |                                                    |\n" +
				"[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n\n",
			`{"type": "hist", "data": {"@": [{"max": -1, "count": 1}, {"min": 0, "max": 0, "count": 0}, {"min": 1, "max": 1, "count": 0}, {"min": 2, "max": 3, "count": 2}, {"min": 4, "max": 7, "count": 1}, {"min": 8, "max": 15, "count": 0}, {"min": 16, "max": 31, "count": 1}]}}` + "\n"},
		{"lhist", &Map{Name: "@", Kind: KindLhist, Entries: scalar(Lhist(0, 10, 2, []uint64{1, 0, 2, 0, 1, 0, 1}))},
			"@:\n" +
				"(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
				"[0, 2)                 0 |                                                    |\n" +
				"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
				"[4, 6)                 0 |                                                    |\n" +
				"[6, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
				"[8, 10)                0 |                                                    |\n" +
				"[10, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n\n",
			`{"type": "hist", "data": {"@": [{"max": -1, "count": 1}, {"min": 0, "max": 1, "count": 0}, {"min": 2, "max": 3, "count": 2}, {"min": 4, "max": 5, "count": 0}, {"min": 6, "max": 7, "count": 1}, {"min": 8, "max": 9, "count": 0}, {"min": 10, "count": 1}]}}` + "\n"},
		{"lhist step 512", &Map{Name: "@l", Kind: KindLhist, Entries: []Entry{keyed(1, Lhist(0, 2048, 512, []uint64{0, 0, 1, 1, 0, 0}))}},
			"@l[1]:\n" +
				"[512, 1024)            1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
				"[1024, 1536)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n",
			`{"type": "hist", "data": {"@l": {"1": [{"min": 512, "max": 1023, "count": 1}, {"min": 1024, "max": 1535, "count": 1}]}}}` + "\n"},
		{"lhist step 1024", &Map{Name: "@l", Kind: KindLhist, Entries: scalar(Lhist(0, 4096, 1024, []uint64{0, 0, 1, 1, 0, 0}))},
			"@l:\n" +
				"[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
				"[2K, 3K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n",
			`{"type": "hist", "data": {"@l": [{"min": 1024, "max": 2047, "count": 1}, {"min": 2048, "max": 3071, "count": 1}]}}` + "\n"},
		{"struct key", &Map{Name: "@s", Kind: KindInt, Entries: []Entry{{Key: []Value{record(2, 3)}, Value: Int(0)}}},
			"@s[{ .m = 2, .n = 3 }]: 0\n", `{"type": "map", "data": {"@s": {"{.m=2,.n=3}": 0}}}` + "\n"},
		{"key with spaces", &Map{Name: "@d", Kind: KindInt, Entries: []Entry{{Key: []Value{Int(1), String("a b")}, Value: Int(1)}}},
			"@d[1, a b]: 1\n", `{"type": "map", "data": {"@d": {"1,ab": 1}}}` + "\n"},
		{"large value", &Map{Name: "@u", Kind: KindInt, Entries: scalar(Uint(1<<64 - 1))},
			"@u: 18446744073709551615\n", `{"type": "map", "data": {"@u": "18446744073709551615"}}` + "\n"},
		{"unsigned key", &Map{Name: "@a", Kind: KindInt, Entries: []Entry{{Key: []Value{Uint(1<<64 - 1), Int(-1)}, Value: Int(0)}}},
			"@a[18446744073709551615, -1]: 0\n", `{"type": "map", "data": {"@a": {"18446744073709551615,-1": 0}}}` + "\n"},
		{"enum key and value", &Map{Name: "@", Kind: KindInt, Entries: []Entry{{Key: []Value{Enum(1, 4, true, "ONE")}, Value: Enum(2, 4, true, "TWO")}}},
			"@[ONE]: TWO\n", `{"type": "map", "data": {"@": {"ONE": 2}}}` + "\n"},
		{"float member", &Map{Name: "@", Kind: KindRecord, Entries: []Entry{{Key: []Value{Record([]string{"f"}, []Value{None()})}, Value: Record([]string{"i", "f"}, []Value{Int(5), None()})}}},
			"@[{ .f = null }]: { .i = 5, .f = null }\n", `{"type": "map", "data": {"@": {"{.f=null}": {"i": 5, "f": null}}}}` + "\n"},
		{"struct value", &Map{Name: "@", Kind: KindTuple, Entries: scalar(Tuple(Int(0), record(2, 3)))},
			"@: (0, { .m = 2, .n = 3 })\n", `{"type": "map", "data": {"@": [0,{"m": 2, "n": 3}]}}` + "\n"},
	} {
		text, json := bothIn(t, compat.Current, func(w *Writer) error { return w.Map(tc.m, 0, 0) })
		if text != tc.text || json != tc.json {
			t.Errorf("%s:\n text %q\n want %q\n json %q\n want %q", tc.name, text, tc.text, json, tc.json)
		}
	}
}

// TestFineHist prints hist(n, bits) maps as 0.26.1 does: single values
// up to bucket 2<<bits, then ranges labelled by the power of 1024 below
// them, bounds beyond 32 bits included.
func TestFineHist(t *testing.T) {
	// fine makes the buckets of a hist with the given bits, counting
	// count in bucket i for each i, count pair.
	fine := func(bits int, counts ...int) Value {
		b := make([]uint64, (64-bits)<<bits+1)
		for i := 0; i < len(counts); i += 2 {
			b[counts[i]] = uint64(counts[i+1])
		}
		return FineHist(bits, b)
	}
	bar := func(n int) string { return strings.Repeat("@", n) + strings.Repeat(" ", 52-n) }
	for _, tc := range []struct {
		name       string
		m          *Map
		div        uint32
		text, json string
	}{
		{"bits 2", &Map{Name: "@", Kind: KindHist, Entries: scalar(fine(2, 0, 1, 3, 1, 9, 2, 10, 1))}, 0,
			"@:\n" +
				"(..., 0)               1 |" + bar(26) + "|\n" +
				"[0]                    0 |" + bar(0) + "|\n" +
				"[1]                    0 |" + bar(0) + "|\n" +
				"[2]                    1 |" + bar(26) + "|\n" +
				"[3]                    0 |" + bar(0) + "|\n" +
				"[4]                    0 |" + bar(0) + "|\n" +
				"[5]                    0 |" + bar(0) + "|\n" +
				"[6]                    0 |" + bar(0) + "|\n" +
				"[7]                    0 |" + bar(0) + "|\n" +
				"[8, 10)                2 |" + bar(52) + "|\n" +
				"[10, 12)               1 |" + bar(26) + "|\n\n",
			`{"type": "hist", "data": {"@": [{"max": -1, "count": 1}, {"min": 0, "max": 0, "count": 0}, {"min": 1, "max": 1, "count": 0}, ` +
				`{"min": 2, "max": 2, "count": 1}, {"min": 3, "max": 3, "count": 0}, {"min": 4, "max": 4, "count": 0}, {"min": 5, "max": 5, "count": 0}, ` +
				`{"min": 6, "max": 6, "count": 0}, {"min": 7, "max": 7, "count": 0}, {"min": 8, "max": 9, "count": 2}, {"min": 10, "max": 11, "count": 1}]}}` + "\n"},
		// The bars scale to the largest count after the division.
		{"bits 3 divided", &Map{Name: "@", Kind: KindHist, Entries: scalar(fine(3, 160, 7, 161, 30))}, 10,
			"@:\n" +
				"[3840K, 4096K)         0 |" + bar(0) + "|\n" +
				"[4096K, 4608K)         3 |" + bar(52) + "|\n\n",
			`{"type": "hist", "data": {"@": [{"min": 3932160, "max": 4194303, "count": 0}, {"min": 4194304, "max": 4718591, "count": 3}]}}` + "\n"},
		{"beyond 32 bits", &Map{Name: "@", Kind: KindHist, Entries: []Entry{keyed(1, fine(0, 35, 1)), keyed(2, fine(0, 64, 1))}}, 0,
			"@[1]:\n[8G, 16G)              1 |" + bar(52) + "|\n\n" +
				"@[2]:\n[4E, 8E)               1 |" + bar(52) + "|\n\n",
			`{"type": "hist", "data": {"@": {"1": [{"min": 8589934592, "max": 17179869183, "count": 1}], "2": [{"min": 4611686018427387904, "max": 9223372036854775807, "count": 1}]}}}` + "\n"},
	} {
		text, json := bothIn(t, compat.Current, func(w *Writer) error { return w.Map(tc.m, 0, tc.div) })
		if text != tc.text || json != tc.json {
			t.Errorf("%s:\n text %q\n want %q\n json %q\n want %q", tc.name, text, tc.text, json, tc.json)
		}
	}
}

func TestHistBucketBounds(t *testing.T) {
	for _, tc := range []struct {
		bits, i         int
		least, greatest int64
	}{
		{0, 0, math.MinInt64, -1},
		{0, 1, 0, 0},
		{0, 2, 1, 1},
		{0, 3, 2, 3},
		{0, 35, 8 << 30, 16<<30 - 1},
		{0, 64, 1 << 62, math.MaxInt64},
		{2, 4, 3, 3},
		{2, 8, 7, 7},
		{2, 9, 8, 9},
		{2, 36, 896, 1023},
		{5, 1888, 63 << 57, math.MaxInt64},
	} {
		least, greatest := FineHist(tc.bits, nil).HistBucketBounds(tc.i)
		if least != tc.least || greatest != tc.greatest {
			t.Errorf("bits %d bucket %d: [%d, %d], want [%d, %d]", tc.bits, tc.i, least, greatest, tc.least, tc.greatest)
		}
	}
}

// TestMapsByRelease prints the same maps as 0.17 and 0.26.1 do, where
// they differ.
func TestMapsByRelease(t *testing.T) {
	maps := []*Map{
		{Name: "@e", Kind: KindCount},
		{Name: "@h", Kind: KindHist, Entries: scalar(Hist([]uint64{0, 0, 1}))},
		{Name: "@k", Kind: KindInt, Entries: []Entry{{Key: []Value{Uint(1<<64 - 1)}, Value: Int(0)}}},
		{Name: "@s", Kind: KindStats, Entries: scalar(Stats(1, 5))},
	}
	for _, tc := range []struct {
		v    compat.Version
		want string
	}{
		{compat.V017, "\n" +
			"@h: \n[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@k[-1]: 0\n" +
			"@s: count 1, average 5, total 5\n\n"},
		{compat.Current, "@h:\n[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
			"@k[18446744073709551615]: 0\n" +
			"@s: { .count = 1, .average = 5, .total = 5 }\n"},
	} {
		var buf bytes.Buffer
		if err := NewText(&buf, tc.v).Maps(maps); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.v, buf.String(), tc.want)
		}
	}
}

// 0.26.1's JSON quotes the texts 0.17 left bare: strftime() results,
// strerror() texts, MAC addresses and cgroup paths.
func TestJSONQuotesTextsCurrent(t *testing.T) {
	v := Tuple(CgroupPath("unified:/,memory:/"), MacAddr([6]byte{1, 2, 3, 4, 5, 0xab}), Timestamp("12:00"), Strerror(2), String("q"))
	_, json := bothIn(t, compat.Current, func(w *Writer) error { return w.Value(v) })
	want := `{"type": "value", "data": ["unified:/,memory:/","01:02:03:04:05:AB","12:00","No such file or directory","q"]}` + "\n"
	if json != want {
		t.Errorf("got  %s\nwant %s", json, want)
	}
}
