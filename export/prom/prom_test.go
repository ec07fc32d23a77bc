package prom_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/output"
)

// source is a fixed set of maps.
type source struct {
	maps []*output.Map
	lost uint64
	full []uint64
	err  error
}

func (s *source) Maps() ([]*output.Map, error) { return s.maps, s.err }
func (s *source) Lost() (uint64, error)        { return s.lost, nil }
func (s *source) Full() ([]uint64, error)      { return s.full, nil }

// scrape serves src and returns what /metrics answers.
func scrape(t *testing.T, src prom.Source) string {
	t.Helper()
	srv, err := prom.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if src != nil {
		var g prom.Gatherer
		g.SetSource(src)
		srv.Serve(g.Write)
	}
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestMetrics(t *testing.T) {
	tests := []struct {
		name string
		m    *output.Map
		want string
	}{
		{"count by two keys", &output.Map{Name: "@calls", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.String("sh"), output.Int(7)}, Value: output.Count(3)},
			{Key: []output.Value{output.String("ls"), output.Int(-1)}, Value: output.Count(12)},
		}}, `# HELP kinst_calls_total count map @calls of the kinst program.
# TYPE kinst_calls_total counter
kinst_calls_total{key0="ls",key1="-1"} 12
kinst_calls_total{key0="sh",key1="7"} 3
`},
		{"unnamed map", &output.Map{Name: "@", Kind: output.KindCount, Entries: []output.Entry{{Value: output.Count(9)}}},
			"# HELP kinst_map_total count map @ of the kinst program.\n# TYPE kinst_map_total counter\nkinst_map_total 9\n"},
		{"unsigned sum", &output.Map{Name: "@bytes", Kind: output.KindSum, Entries: []output.Entry{
			{Key: []output.Value{output.Ksym(0xffff, "vfs_read")}, Value: output.Sum(4096, false)},
		}}, "# HELP kinst_bytes_total sum map @bytes of the kinst program.\n# TYPE kinst_bytes_total counter\nkinst_bytes_total{key=\"vfs_read\"} 4096\n"},
		{"signed sum", &output.Map{Name: "@delta", Kind: output.KindSum, Entries: []output.Entry{{Value: output.Sum(uint64(1<<64-10), true)}}},
			"# HELP kinst_delta sum map @delta of the kinst program.\n# TYPE kinst_delta gauge\nkinst_delta -10\n"},
		{"min and max", &output.Map{Name: "@lo", Kind: output.KindMin, Entries: []output.Entry{{Value: output.Min(-3)}}},
			"# HELP kinst_lo min map @lo of the kinst program.\n# TYPE kinst_lo gauge\nkinst_lo -3\n"},
		{"avg", &output.Map{Name: "@lat", Kind: output.KindAvg, Entries: []output.Entry{
			{Key: []output.Value{output.String("read")}, Value: output.Avg(4, 1000)},
		}}, `# HELP kinst_lat avg map @lat of the kinst program.
# TYPE kinst_lat summary
kinst_lat_sum{key="read"} 1000
kinst_lat_count{key="read"} 4
`},
		{"stats", &output.Map{Name: "@sizes", Kind: output.KindStats, Entries: []output.Entry{{Value: output.Stats(2, -8)}}},
			"# HELP kinst_sizes stats map @sizes of the kinst program.\n# TYPE kinst_sizes summary\nkinst_sizes_sum -8\nkinst_sizes_count 2\n"},
		{"lhist", &output.Map{Name: "@l", Kind: output.KindLhist, Entries: []output.Entry{
			{Value: output.Lhist(10, 40, 10, []uint64{1, 2, 0, 3, 4})},
		}}, `# HELP kinst_l lhist map @l of the kinst program.
# TYPE kinst_l histogram
kinst_l_bucket{le="9"} 1
kinst_l_bucket{le="19"} 3
kinst_l_bucket{le="29"} 3
kinst_l_bucket{le="39"} 6
kinst_l_bucket{le="+Inf"} 10
kinst_l_sum NaN
kinst_l_count 10
`},
		{"tseries", &output.Map{Name: "@ts", Kind: output.KindTSeries, Entries: []output.Entry{
			{Key: []output.Value{output.Int(1)}, Value: output.TSeries(1e9, 5, true, []output.TSeriesPoint{{Epoch: 1.7e9, Value: 3}, {Epoch: 1.7e9 + 1, Value: 1<<64 - 2}})},
			{Key: []output.Value{output.Int(2)}, Value: output.TSeries(1e9, 5, true, []output.TSeriesPoint{{Epoch: 1.6e9, Value: 9}})},
		}}, "# HELP kinst_ts tseries map @ts of the kinst program.\n# TYPE kinst_ts gauge\nkinst_ts{key=\"1\"} -2\nkinst_ts{key=\"2\"} 9\n"},
		{"string values", &output.Map{Name: "@name", Kind: output.KindString, Entries: []output.Entry{
			{Key: []output.Value{output.Int(42)}, Value: output.String("bash")},
		}}, "# HELP kinst_name string map @name of the kinst program.\n# TYPE kinst_name gauge\nkinst_name{key=\"42\",value=\"bash\"} 1\n"},
		{"stack keys", &output.Map{Name: "@st", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.Kstack(output.StackBpftrace, []output.Frame{{Symbol: "a", Offset: 1}, {Symbol: "b", Offset: 2}})}, Value: output.Count(1)},
		}}, "# HELP kinst_st_total count map @st of the kinst program.\n# TYPE kinst_st_total counter\nkinst_st_total{key=\"a+1\\nb+2\"} 1\n"},
	}
	const lost = "# HELP kinst_lost_events_total Records probes sent that the ring buffer refused because it was full.\n# TYPE kinst_lost_events_total counter\nkinst_lost_events_total 0\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scrape(t, &source{maps: []*output.Map{tt.m}})
			promtool(t, got)
			got = strings.Replace(got, lost, "", 1)
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// promtool lints metrics as Prometheus's own checker does, where the
// prometheus package is installed: counters end in _total, among
// others.
func promtool(t *testing.T, metrics string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(metrics)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nmetrics:\n%s", err, out, metrics)
	}
}

func TestHistBounds(t *testing.T) {
	hist := make([]uint64, 66)
	hist[0], hist[1], hist[2], hist[4], hist[40] = 1, 2, 3, 4, 5
	// @__start is bookkeeping, not served.
	start := &output.Map{Name: "@__start", Kind: output.KindInt, Entries: []output.Entry{{Key: []output.Value{output.Int(1)}, Value: output.Int(5)}}}
	got := scrape(t, &source{maps: []*output.Map{start, {Name: "@h", Kind: output.KindHist, Entries: []output.Entry{{Value: output.Hist(hist)}}}}, lost: 7, full: []uint64{9, 3}})
	var b strings.Builder
	b.WriteString("# HELP kinst_h hist map @h of the kinst program.\n# TYPE kinst_h histogram\n")
	// Cumulative: 1 below zero, 2 zeros, 3 ones, 4 in [4, 8); the 5 in
	// [2^38, 2^39) count only in +Inf.
	cum := []string{"1", "3", "6", "6", "10"}
	les := []string{"-1", "0", "1", "3", "7", "15", "31", "63", "127", "255", "511", "1023", "2047", "4095", "8191", "16383",
		"32767", "65535", "131071", "262143", "524287", "1.048575e+06", "2.097151e+06", "4.194303e+06", "8.388607e+06",
		"1.6777215e+07", "3.3554431e+07", "6.7108863e+07", "1.34217727e+08", "2.68435455e+08", "5.36870911e+08",
		"1.073741823e+09", "2.147483647e+09", "4.294967295e+09"}
	if len(les) != prom.HistBounds {
		t.Fatalf("%d bounds listed, want %d", len(les), prom.HistBounds)
	}
	for i, le := range les {
		n := cum[min(i, len(cum)-1)]
		b.WriteString("kinst_h_bucket{le=\"" + le + "\"} " + n + "\n")
	}
	b.WriteString("kinst_h_bucket{le=\"+Inf\"} 15\nkinst_h_sum NaN\nkinst_h_count 15\n")
	b.WriteString("# HELP kinst_lost_events_total Records probes sent that the ring buffer refused because it was full.\n# TYPE kinst_lost_events_total counter\nkinst_lost_events_total 7\n")
	b.WriteString("# HELP kinst_map_full_total Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).\n# TYPE kinst_map_full_total counter\nkinst_map_full_total{map=\"@h\"} 3\n")
	if got != b.String() {
		t.Errorf("got:\n%s\nwant:\n%s", got, b.String())
	}
}

// Before the run gives the collector its maps, a scrape finds nothing;
// a failing read is reported, the lost counter still served.
func TestNoSourceAndErrors(t *testing.T) {
	if got := scrape(t, nil); got != "" {
		t.Errorf("scrape without a source: %q, want nothing", got)
	}
	got := scrape(t, &source{err: errors.New("read @x: boom")})
	want := "An error has occurred while serving metrics:\n\nread the maps: read @x: boom\n"
	if got != want {
		t.Errorf("scrape of a failing source:\n%s", got)
	}
}

// Entries whose keys print alike, and a key that is not UTF-8, cannot be
// served: the scrape fails and says which map.
func TestUnservableMaps(t *testing.T) {
	tests := []struct {
		m    *output.Map
		want string
	}{
		{&output.Map{Name: "@f", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.Ksym(0xff01, "vfs_read")}, Value: output.Count(1)},
			{Key: []output.Value{output.Ksym(0xff02, "vfs_read")}, Value: output.Count(2)},
		}}, `kinst_f_total: two entries give the labels {key="vfs_read"}`},
		{&output.Map{Name: "@c", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.String("a\xff")}, Value: output.Count(1)},
		}}, "map @c: a label value is not UTF-8"},
	}
	for _, tt := range tests {
		got := scrape(t, &source{maps: []*output.Map{tt.m}})
		if want := "An error has occurred while serving metrics:\n\n" + tt.want + "\n"; got != want {
			t.Errorf("scrape of %s:\n%q\nwant\n%q", tt.m.Name, got, want)
		}
	}
}

func TestListenErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	_, err = prom.Listen(addr)
	if !errors.Is(err, syscall.EADDRINUSE) || err.Error() != "listen tcp "+addr+": bind: address already in use" {
		t.Errorf("listen on a busy address: %v", err)
	}
	_, err = prom.Listen("9100")
	if err == nil || err.Error() != "listen tcp: address 9100: missing port in address" {
		t.Errorf("listen on a malformed address: %v", err)
	}
}

// BenchmarkScrape10000 times a scrape of a count() map of 10,000
// entries already read, the rendering alone; BenchmarkPrometheusScrape
// in cmd/kinst adds reading the map from the kernel.
func BenchmarkScrape10000(b *testing.B) {
	m := &output.Map{Name: "@m", Kind: output.KindCount}
	for i := range 10000 {
		m.Entries = append(m.Entries, output.Entry{Key: []output.Value{output.Int(int64(i))}, Value: output.Count(uint64(i))})
	}
	srv, err := prom.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var g prom.Gatherer
	g.SetSource(&source{maps: []*output.Map{m}, full: []uint64{0}})
	srv.Serve(g.Write)
	u := "http://" + srv.Addr().String() + "/metrics"
	for b.Loop() {
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// SetLabels names the keys of the maps it lists; the others keep their
// place names.
func TestSetLabels(t *testing.T) {
	srv, err := prom.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var g prom.Gatherer
	srv.Serve(g.Write)
	g.SetLabels(map[string][]string{"@calls": {"comm", "key1"}})
	g.SetSource(&source{maps: []*output.Map{
		{Name: "@calls", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.String("sh"), output.Int(7)}, Value: output.Count(3)},
		}},
		{Name: "@fds", Kind: output.KindCount, Entries: []output.Entry{
			{Key: []output.Value{output.Int(4)}, Value: output.Count(2)},
		}},
	}})
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kinst_calls_total{comm=\"sh\",key1=\"7\"} 3\n", "kinst_fds_total{key=\"4\"} 2\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
