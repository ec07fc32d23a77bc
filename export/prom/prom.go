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
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
)

// Source is what a Gatherer reads at each scrape; session.MapReader is
// one.
type Source interface {
	Maps() ([]*output.Map, error)
	Lost() (uint64, error)
	// Full gives, per map in the order of Maps, the updates it refused
	// because it was full.
	Full() ([]uint64, error)
}

// Gatherer turns a Source's maps into metric families at each scrape.
// Its Gather method is client_golang's prometheus.Gatherer, so a program
// using that client serves kinst's maps beside its own through
// prometheus.Gatherers; kinst itself does without the client, whose
// default registry costs every run a millisecond of start-up.
type Gatherer struct {
	mu  sync.Mutex
	src Source
	// labels names the key labels of maps, by map name; a map missing
	// here has its keys labelled by place: key, or key0, key1, …
	labels map[string][]string
}

// SetSource makes later scrapes read src; until then they find no
// metrics.
func (g *Gatherer) SetSource(src Source) {
	g.mu.Lock()
	g.src = src
	g.mu.Unlock()
}

// Gather reads every map and returns its metrics, the families sorted by
// name and each family's metrics by their label values, as client_golang
// gathers them.
func (g *Gatherer) Gather() ([]*dto.MetricFamily, error) {
	g.mu.Lock()
	src, labels := g.src, g.labels
	g.mu.Unlock()
	if src == nil {
		return nil, nil
	}
	lost, err := src.Lost()
	if err != nil {
		return nil, fmt.Errorf("read the lost events: %w", err)
	}
	lostFam := family("kinst_lost_events_total", "Records probes sent that the ring buffer refused because it was full.", dto.MetricType_COUNTER)
	lostFam.Metric = []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(float64(lost))}}}
	maps, err := src.Maps()
	if err != nil {
		return nil, fmt.Errorf("read the maps: %w", err)
	}
	full, err := src.Full()
	if err != nil {
		return nil, fmt.Errorf("read the full-map counts: %w", err)
	}
	fullFam := family("kinst_map_full_total", "Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).", dto.MetricType_COUNTER)
	fams := []*dto.MetricFamily{lostFam}
	for i, m := range maps {
		if strings.HasPrefix(m.Name, "@__") {
			continue // an instrument's bookkeeping: calls in progress, processes seen
		}
		if i < len(full) {
			fullFam.Metric = append(fullFam.Metric, &dto.Metric{
				Label:   pairs([]string{"map"}, []string{m.Name}),
				Counter: &dto.Counter{Value: proto.Float64(float64(full[i]))},
			})
		}
		f, err := mapFamily(m, labels[m.Name])
		if err != nil {
			return nil, err
		}
		if len(f.Metric) > 0 {
			fams = append(fams, f)
		}
	}
	if len(fullFam.Metric) > 0 {
		fams = append(fams, fullFam)
	}
	for _, f := range fams {
		slices.SortStableFunc(f.Metric, compareLabels)
		for i := 1; i < len(f.Metric); i++ {
			if compareLabels(f.Metric[i-1], f.Metric[i]) == 0 {
				return nil, fmt.Errorf("%s: two entries give the labels %s", f.GetName(), labelText(f.Metric[i].Label))
			}
		}
	}
	slices.SortFunc(fams, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return fams, nil
}

func family(name, help string, typ dto.MetricType) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
}

// pairs makes a metric's labels, sorted by name as the exposition
// formats want them.
func pairs(names, values []string) []*dto.LabelPair {
	ps := make([]*dto.LabelPair, len(names))
	for i := range names {
		ps[i] = &dto.LabelPair{Name: proto.String(names[i]), Value: proto.String(values[i])}
	}
	slices.SortFunc(ps, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return ps
}

// labelText writes labels as the text format does: {name="value",…}.
func labelText(ps []*dto.LabelPair) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.GetName() + "=" + strconv.Quote(p.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// compareLabels orders the metrics of one family, whose label names are
// the same, by their label values.
func compareLabels(a, b *dto.Metric) int {
	for i := range min(len(a.Label), len(b.Label)) {
		if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return len(a.Label) - len(b.Label)
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

// mapFamily makes the family of m, a metric per entry, its keys labelled
// by names or, where names do not fit, by place.
func mapFamily(m *output.Map, names []string) (*dto.MetricFamily, error) {
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
	f := family(metricName(m.Name), fmt.Sprintf("%s map %s of the kinst program.", m.Kind, m.Name), dto.MetricType_GAUGE)
	for _, e := range m.Entries {
		values, err := labelValues(e.Key)
		if err == nil && info {
			var text string
			text, err = e.Value.KeyText()
			values = append(values, text)
		}
		if err == nil && slices.ContainsFunc(values, func(v string) bool { return !utf8.ValidString(v) }) {
			err = errors.New("a label value is not UTF-8")
		}
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", m.Name, err)
		}
		metric, typ := entryMetric(e.Value, info)
		metric.Label = pairs(labels, values)
		f.Type = typ.Enum()
		f.Metric = append(f.Metric, metric)
	}
	// Prometheus names a counter for what it counts, with _total.
	if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(f.GetName(), "_total") {
		f.Name = proto.String(f.GetName() + "_total")
	}
	return f, nil
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

// entryMetric makes the metric of one entry and says its type, which is
// the same for every entry of a map.
func entryMetric(v output.Value, info bool) (*dto.Metric, dto.MetricType) {
	gauge := func(x float64) (*dto.Metric, dto.MetricType) {
		return &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(x)}}, dto.MetricType_GAUGE
	}
	counter := func(x float64) (*dto.Metric, dto.MetricType) {
		return &dto.Metric{Counter: &dto.Counter{Value: proto.Float64(x)}}, dto.MetricType_COUNTER
	}
	histogram := func(count uint64, buckets []*dto.Bucket) (*dto.Metric, dto.MetricType) {
		return &dto.Metric{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(count), SampleSum: proto.Float64(math.NaN()), Bucket: buckets,
		}}, dto.MetricType_HISTOGRAM
	}
	if info {
		return gauge(1)
	}
	switch v.Kind() {
	case output.KindCount:
		return counter(float64(v.Uint()))
	case output.KindSum:
		if v.Signed() {
			return gauge(float64(v.Int()))
		}
		return counter(float64(v.Uint()))
	case output.KindInt:
		if v.Signed() {
			return gauge(float64(v.Int()))
		}
		return gauge(float64(v.Uint()))
	case output.KindAvg, output.KindStats:
		return &dto.Metric{Summary: &dto.Summary{
			SampleCount: proto.Uint64(v.Uint()), SampleSum: proto.Float64(float64(v.Total())),
		}}, dto.MetricType_SUMMARY
	case output.KindHist:
		return histogram(histBuckets(v.Buckets()))
	case output.KindLhist:
		min, max, step := v.LhistBounds()
		return histogram(lhistBuckets(min, max, step, v.Buckets()))
	}
	// Pointers, min and max.
	return gauge(float64(v.Int()))
}

// HistBounds is how many buckets of a hist() become le bounds: below
// zero, zero, then up to [2^31, 2^32), the last bpftrace 0.17 fills.
const HistBounds = 34

// histBuckets turns hist() buckets into cumulative counts by le bound.
// Values are integers, so the bucket [2^(k-2), 2^(k-1)) is le 2^(k-1)-1.
func histBuckets(counts []uint64) (uint64, []*dto.Bucket) {
	buckets := make([]*dto.Bucket, 0, HistBounds)
	var total uint64
	for k, n := range counts {
		total += n
		if k < HistBounds {
			buckets = append(buckets, bucket(histBound(k), total))
		}
	}
	return total, buckets
}

func bucket(le float64, cumulative uint64) *dto.Bucket {
	return &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(cumulative)}
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
func lhistBuckets(min, max, step int64, counts []uint64) (uint64, []*dto.Bucket) {
	n := int((max-min)/step) + 1
	buckets := make([]*dto.Bucket, 0, n)
	var total uint64
	for i, c := range counts {
		total += c
		if i < n {
			buckets = append(buckets, bucket(float64(min+int64(i)*step-1), total))
		}
	}
	return total, buckets
}

// Server serves /metrics over HTTP.
type Server struct {
	Gatherer Gatherer
	ln       net.Listener
	srv      *http.Server
	done     chan error
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
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", s.serveMetrics)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// serveMetrics answers a scrape in the format it asks for: Prometheus's
// protobuf or text format. A map that cannot be read fails the scrape,
// as promhttp's HTTPErrorOnError fails it.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	fams, err := s.Gatherer.Gather()
	if err != nil {
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
	w.Header().Set("Content-Type", string(format))
	enc := expfmt.NewEncoder(w, format)
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return // the scraper went away, or the family cannot be written: the scrape fails short
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		c.Close()
	}
}

// Feed makes the maps of a run of out the server's metrics, their keys
// labelled as KeyLabels names them. The maps are then not printed at
// exit as bpftrace prints them; a caller's own exit hook, an
// instrument's table or profile, still runs.
func (s *Server) Feed(out *codegen.Output, opts *session.Options) {
	s.Gatherer.mu.Lock()
	s.Gatherer.labels = KeyLabels(out)
	s.Gatherer.mu.Unlock()
	opts.Maps = func(r *session.MapReader) { s.Gatherer.SetSource(r) }
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
