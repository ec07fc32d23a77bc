package output

import (
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/compat"
)

// points makes a tseries' points of consecutive intervals from the
// first, with the values given.
func points(first uint64, values ...int64) []TSeriesPoint {
	ps := make([]TSeriesPoint, len(values))
	for i, v := range values {
		ps[i] = TSeriesPoint{Epoch: first + uint64(i), Value: uint64(v)}
	}
	return ps
}

// TestTSeriesCurrent prints tseries maps as bpftrace 0.26.1 does. The
// first series are those of its runtime tests, whose intervals begin at
// the Unix epoch; %H stands for the hour of local time there.
func TestTSeriesCurrent(t *testing.T) {
	hour := time.Unix(0, 0).Format("15")
	ms100 := uint64(100 * time.Millisecond)
	for _, tc := range []struct {
		name       string
		m          *Map
		text, json string
	}{
		{"last values", &Map{Name: "@a", Kind: KindTSeries, Entries: scalar(TSeries(ms100, 5, false, points(5, 9, 9, 9, 9, 9)))},
			"@a:\n" +
				"             8                                                  10\n" +
				"hh:mm:ss.ms  |___________________________________________________|\n" +
				"%H:00:00.500 |                         *                         | 9\n" +
				"%H:00:00.600 |                         *                         | 9\n" +
				"%H:00:00.700 |                         *                         | 9\n" +
				"%H:00:00.800 |                         *                         | 9\n" +
				"%H:00:00.900 |                         *                         | 9\n" +
				"             v___________________________________________________v\n" +
				"             8                                                  10\n" +
				"\n",
			`{"type": "tseries", "data": {"@a": [{"interval_start":"1970-01-01 00:00:00.500000000","value":9},{"interval_start":"1970-01-01 00:00:00.600000000","value":9},{"interval_start":"1970-01-01 00:00:00.700000000","value":9},{"interval_start":"1970-01-01 00:00:00.800000000","value":9},{"interval_start":"1970-01-01 00:00:00.900000000","value":9}]}}` + "\n"},
		// "one" holds a bucket of interval 0, the one no CPU wrote:
		// bpftrace shows it as 0 when the window reaches back to it.
		{"keys", &Map{Name: "@a", Kind: KindTSeries, Entries: []Entry{
			{Key: []Value{String("two")}, Value: TSeries(ms100, 10, false, points(5, 4, 4, 4, 4, 4))},
			{Key: []Value{String("one")}, Value: TSeries(ms100, 10, false, points(0, 0, 5, 5, 5, 5))},
		}},
			"@a[one]:\n" +
				"             0                                                   5\n" +
				"hh:mm:ss.ms  |___________________________________________________|\n" +
				"%H:00:00.000 *                                                   | 0\n" +
				"%H:00:00.100 |                                                   * 5\n" +
				"%H:00:00.200 |                                                   * 5\n" +
				"%H:00:00.300 |                                                   * 5\n" +
				"%H:00:00.400 |                                                   * 5\n" +
				"%H:00:00.500 |                                                   | -\n" +
				"%H:00:00.600 |                                                   | -\n" +
				"%H:00:00.700 |                                                   | -\n" +
				"%H:00:00.800 |                                                   | -\n" +
				"%H:00:00.900 |                                                   | -\n" +
				"             v___________________________________________________v\n" +
				"             0                                                   5\n" +
				"\n" +
				"@a[two]:\n" +
				"             3                                                   5\n" +
				"hh:mm:ss.ms  |___________________________________________________|\n" +
				"%H:00:00.500 |                         *                         | 4\n" +
				"%H:00:00.600 |                         *                         | 4\n" +
				"%H:00:00.700 |                         *                         | 4\n" +
				"%H:00:00.800 |                         *                         | 4\n" +
				"%H:00:00.900 |                         *                         | 4\n" +
				"             v___________________________________________________v\n" +
				"             3                                                   5\n" +
				"\n",
			`{"type": "tseries", "data": {"@a": {"one": [{"interval_start":"1970-01-01 00:00:00.000000000","value":0},{"interval_start":"1970-01-01 00:00:00.100000000","value":5},{"interval_start":"1970-01-01 00:00:00.200000000","value":5},{"interval_start":"1970-01-01 00:00:00.300000000","value":5},{"interval_start":"1970-01-01 00:00:00.400000000","value":5}], "two": [{"interval_start":"1970-01-01 00:00:00.500000000","value":4},{"interval_start":"1970-01-01 00:00:00.600000000","value":4},{"interval_start":"1970-01-01 00:00:00.700000000","value":4},{"interval_start":"1970-01-01 00:00:00.800000000","value":4},{"interval_start":"1970-01-01 00:00:00.900000000","value":4}]}}}` + "\n"},
		{"zigzag", &Map{Name: "@", Kind: KindTSeries, Entries: scalar(TSeries(ms100, 20, true, points(1, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 4, 3, 2, 1, 0, -1, -2, -3, -4)))},
			"@:\n" +
				"             -5                                                  5\n" +
				"hh:mm:ss.ms  |___________________________________________________|\n" +
				"%H:00:00.100 *                         .                         | -5\n" +
				"%H:00:00.200 |    *                    .                         | -4\n" +
				"%H:00:00.300 |         *               .                         | -3\n" +
				"%H:00:00.400 |              *          .                         | -2\n" +
				"%H:00:00.500 |                   *     .                         | -1\n" +
				"%H:00:00.600 |                         *                         | 0\n" +
				"%H:00:00.700 |                         .    *                    | 1\n" +
				"%H:00:00.800 |                         .         *               | 2\n" +
				"%H:00:00.900 |                         .              *          | 3\n" +
				"%H:00:01.000 |                         .                   *     | 4\n" +
				"%H:00:01.100 |                         .                         * 5\n" +
				"%H:00:01.200 |                         .                   *     | 4\n" +
				"%H:00:01.300 |                         .              *          | 3\n" +
				"%H:00:01.400 |                         .         *               | 2\n" +
				"%H:00:01.500 |                         .    *                    | 1\n" +
				"%H:00:01.600 |                         *                         | 0\n" +
				"%H:00:01.700 |                   *     .                         | -1\n" +
				"%H:00:01.800 |              *          .                         | -2\n" +
				"%H:00:01.900 |         *               .                         | -3\n" +
				"%H:00:02.000 |    *                    .                         | -4\n" +
				"             v___________________________________________________v\n" +
				"             -5                                                  5\n" +
				"\n", ""},
		// zero() leaves every bucket unwritten.
		{"zeroed", &Map{Name: "@a", Kind: KindTSeries, Entries: scalar(TSeries(ms100, 5, false, []TSeriesPoint{{}}))},
			"@a:\n<no data>\n", `{"type": "tseries", "data": {"@a": []}}` + "\n"},
		// A key updated before the window of the latest shows the last
		// interval without a value, the bounds null; one interval has
		// no step between intervals, which shows as nanoseconds.
		{"stale key", &Map{Name: "@s", Kind: KindTSeries, Entries: []Entry{
			keyed(2, TSeries(uint64(time.Second), 2, false, points(9, 7, 8))),
			keyed(1, TSeries(uint64(time.Second), 2, false, points(1, 3))),
		}},
			"@s[1]:\n" +
				"                   null                                             null\n" +
				"hh:mm:ss.ns        |___________________________________________________|\n" +
				"%H:00:10.000000000 |                                                   | -\n" +
				"                   v___________________________________________________v\n" +
				"                   null                                             null\n" +
				"\n" +
				"@s[2]:\n" +
				"         7                                                   8\n" +
				"hh:mm:ss |___________________________________________________|\n" +
				"%H:00:09 *                                                   | 7\n" +
				"%H:00:10 |                                                   * 8\n" +
				"         v___________________________________________________v\n" +
				"         7                                                   8\n" +
				"\n",
			`{"type": "tseries", "data": {"@s": {"1": [], "2": [{"interval_start":"1970-01-01 00:00:09.000000000","value":7},{"interval_start":"1970-01-01 00:00:10.000000000","value":8}]}}}` + "\n"},
		// The μ of microseconds takes two bytes, and the column is
		// padded by bytes; a gap shows as -. The unsigned maximum
		// measures as -1 from 0, as bpftrace's distances do, which
		// puts 1 at the left edge.
		{"microseconds", &Map{Name: "@u", Kind: KindTSeries, Entries: scalar(TSeries(uint64(250*time.Microsecond), 4, false, []TSeriesPoint{{Epoch: 1, Value: 1}, {Epoch: 3, Value: 0}, {Epoch: 4, Value: 1<<64 - 1}}))},
			"@u:\n" +
				"                0                                18446744073709551615\n" +
				"hh:mm:ss.μs    |___________________________________________________|\n" +
				"%H:00:00.000250 *                                                   | 1\n" +
				"%H:00:00.000500 |                                                   | -\n" +
				"%H:00:00.000750 *                                                   | 0\n" +
				"%H:00:00.001000 |                                                   * 18446744073709551615\n" +
				"                v___________________________________________________v\n" +
				"                0                                18446744073709551615\n" +
				"\n", ""},
	} {
		// print(@m, top, div) prints every entry, undivided.
		text, json := bothIn(t, compat.Current, func(w *Writer) error { return w.Map(tc.m, 1, 2) })
		want := strings.ReplaceAll(tc.text, "%H", hour)
		if text != want {
			t.Errorf("%s: text\n%s\nwant\n%s", tc.name, text, want)
		}
		if tc.json != "" && json != tc.json {
			t.Errorf("%s: json\n%s\nwant\n%s", tc.name, json, tc.json)
		}
	}
}
