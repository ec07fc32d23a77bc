package prom

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/runtime"
)

// Source is what a Collector reads at each scrape; runtime.MapReader is
// one.
type Source interface {
	Maps() ([]*output.Map, error)
	Lost() (uint64, error)
	// Full gives, per map in the order of Maps, the updates it refused
	// because it was full.
	Full() ([]uint64, error)
}

// Collector turns a Source's maps into metrics at each scrape.
type Collector struct {
	mu  sync.Mutex
	src Source
	// labels names the key labels of maps, by map name; a map missing
	// here has its keys labelled by place: key, or key0, key1, …
	labels map[string][]string
}

// SetSource makes later scrapes read src; until then they find no
// metrics.
func (c *Collector) SetSource(src Source) {
	c.mu.Lock()
	c.src = src
	c.mu.Unlock()
}

// Describe sends nothing: the metrics are known only once the maps are
// read, which makes the collector unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

var (
	lostDesc = prometheus.NewDesc("kinst_lost_events_total", "Records probes sent that the ring buffer refused because it was full.", nil, nil)
	fullDesc = prometheus.NewDesc("kinst_map_full_total", "Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).", []string{"map"}, nil)
)

// Collect reads every map and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src, labels := c.src, c.labels
	c.mu.Unlock()
	if src == nil {
		return
	}
	lost, err := src.Lost()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lostDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(lost))
	maps, err := src.Maps()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("kinst_maps", "The program's maps.", nil, nil), err)
		return
	}
	full, err := src.Full()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(fullDesc, err)
		return
	}
	for i, m := range maps {
		if strings.HasPrefix(m.Name, "@__") {
			continue // an instrument's bookkeeping: calls in progress, processes seen
		}
		if i < len(full) {
			ch <- prometheus.MustNewConstMetric(fullDesc, prometheus.CounterValue, float64(full[i]), m.Name)
		}
		collectMap(ch, m, labels[m.Name])
	}
}

// metricName is the metric name of a map.
func metricName(mapName string) string {
	name := strings.TrimPrefix(mapName, "@")
	if name == "" {
		name = "map"
	}
	return "kinst_" + name
}

// labelNames names a map's key labels.
func labelNames(n int) []string {
	if n == 1 {
		return []string{"key"}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "key" + strconv.Itoa(i)
	}
	return names
}

// collectMap sends one metric per entry of m, its keys labelled by
// names or, where names do not fit, by place.
func collectMap(ch chan<- prometheus.Metric, m *output.Map, names []string) {
	nkeys := 0
	if len(m.Entries) > 0 {
		nkeys = len(m.Entries[0].Key)
	}
	labels := labelNames(nkeys)
	if len(names) == nkeys {
		labels = slices.Clone(names)
	}
	info := false
	switch m.Kind {
	case output.KindInt, output.KindPointer, output.KindCount, output.KindSum, output.KindMin, output.KindMax,
		output.KindAvg, output.KindStats, output.KindHist, output.KindLhist:
	default:
		// Text becomes the value label of an info metric.
		info = true
		labels = append(labels, "value")
	}
	desc := prometheus.NewDesc(metricName(m.Name), fmt.Sprintf("%s map %s of the kinst program.", m.Kind, m.Name), labels, nil)
	for _, e := range m.Entries {
		values, err := labelValues(e.Key)
		if err == nil && info {
			var text string
			text, err = e.Value.KeyText()
			values = append(values, text)
		}
		if err != nil {
			ch <- prometheus.NewInvalidMetric(desc, fmt.Errorf("map %s: %w", m.Name, err))
			continue
		}
		ch <- metric(desc, e.Value, info, values)
	}
}

// labelValues renders a key as label values, each element as bpftrace
// prints it in a map key.
func labelValues(key []output.Value) ([]string, error) {
	values := make([]string, len(key))
	for i, k := range key {
		text, err := k.KeyText()
		if err != nil {
			return nil, err
		}
		if k.Kind() == output.KindKstack || k.Kind() == output.KindUstack {
			// One frame a line, without the indent of printed keys.
			lines := strings.Split(strings.Trim(text, "\n"), "\n")
			for j, l := range lines {
				lines[j] = strings.TrimSpace(l)
			}
			text = strings.Join(lines, "\n")
		}
		values[i] = text
	}
	return values, nil
}

// metric makes the metric of one entry.
func metric(desc *prometheus.Desc, v output.Value, info bool, labels []string) prometheus.Metric {
	if info {
		return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 1, labels...)
	}
	switch v.Kind() {
	case output.KindCount:
		return prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v.Uint()), labels...)
	case output.KindSum:
		if v.Signed() {
			return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v.Int()), labels...)
		}
		return prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v.Uint()), labels...)
	case output.KindInt:
		if v.Signed() {
			return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v.Int()), labels...)
		}
		return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v.Uint()), labels...)
	case output.KindAvg, output.KindStats:
		return prometheus.MustNewConstSummary(desc, v.Uint(), float64(v.Total()), nil, labels...)
	case output.KindHist:
		count, buckets := histBuckets(v.Buckets())
		return prometheus.MustNewConstHistogram(desc, count, math.NaN(), buckets, labels...)
	case output.KindLhist:
		min, max, step := v.LhistBounds()
		count, buckets := lhistBuckets(min, max, step, v.Buckets())
		return prometheus.MustNewConstHistogram(desc, count, math.NaN(), buckets, labels...)
	}
	// Pointers, min and max.
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v.Int()), labels...)
}

// HistBounds is how many buckets of a hist() become le bounds: below
// zero, zero, then up to [2^31, 2^32), the last bpftrace 0.17 fills.
const HistBounds = 34

// histBuckets turns hist() buckets into cumulative counts by le bound.
// Values are integers, so the bucket [2^(k-2), 2^(k-1)) is le 2^(k-1)-1.
func histBuckets(counts []uint64) (uint64, map[float64]uint64) {
	bounds := make(map[float64]uint64, HistBounds)
	var total uint64
	for k, n := range counts {
		total += n
		if k < HistBounds {
			bounds[histBound(k)] = total
		}
	}
	return total, bounds
}

func histBound(k int) float64 {
	switch k {
	case 0:
		return -1
	case 1:
		return 0
	}
	return float64(uint64(1)<<(k-1) - 1)
}

// lhistBuckets turns lhist() buckets into cumulative counts by le bound:
// below min is le min-1, [min+(i-1)*step, min+i*step) is le
// min+i*step-1, and the values from max up count only in +Inf.
func lhistBuckets(min, max, step int64, counts []uint64) (uint64, map[float64]uint64) {
	n := int((max-min)/step) + 1
	bounds := make(map[float64]uint64, n)
	var total uint64
	for i, c := range counts {
		total += c
		if i < n {
			bounds[float64(min+int64(i)*step-1)] = total
		}
	}
	return total, bounds
}

// Server serves /metrics over HTTP.
type Server struct {
	Collector Collector
	ln        net.Listener
	srv       *http.Server
	done      chan error
}

// Listen listens on addr (host:port) and serves /metrics from it, before
// anything is attached, so that a busy or malformed address fails the
// run at once. Scrapes find kinst_lost_events_total and the maps once
// SetSource gives them a source.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, done: make(chan error, 1)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&s.Collector)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Feed makes the maps of a run of out the server's metrics, their keys
// labelled as KeyLabels names them. The maps are then not printed at
// exit as bpftrace prints them; a caller's own exit hook, an
// instrument's table or profile, still runs.
func (s *Server) Feed(out *codegen.Output, opts *runtime.Options) {
	s.Collector.mu.Lock()
	s.Collector.labels = KeyLabels(out)
	s.Collector.mu.Unlock()
	opts.Maps = func(r *runtime.MapReader) { s.Collector.SetSource(r) }
	if opts.ExitMaps == nil {
		opts.ExitMaps = func([]*output.Map) error { return nil }
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving.
func (s *Server) Close() error {
	err := s.srv.Close()
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
