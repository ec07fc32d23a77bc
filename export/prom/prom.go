package prom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"kinst.dev/kinst/output"
)

// Source is what a Gatherer reads at each scrape: the runtime's reader
// of a running program's maps is one.
type Source interface {
	Maps() ([]*output.Map, error)
	Lost() (uint64, error)
	// Full gives, per map in the order of Maps, the updates it refused
	// because it was full.
	Full() ([]uint64, error)
}

// Gatherer turns a Source's maps into metric families at each scrape.
// kinst writes Prometheus's text format itself: the client library's
// encoders and their protobuf runtime were a twentieth of the binary,
// for a format every Prometheus server reads.
type Gatherer struct {
	mu  sync.Mutex
	src Source
	// labels names the key labels of maps, by map name; a map missing
	// here has its keys labelled by place: key, or key0, key1, …
	labels map[string][]string
}

// A family is one metric family: a map, or one of kinst's own counters.
type family struct {
	name, help string
	typ        string // counter, gauge, summary or histogram
	metrics    []metric
}

// A metric is one entry of a map: its labels, sorted by name as the
// format wants them, and its samples.
type metric struct {
	labels  []labelPair
	samples []sample
}

type labelPair struct{ name, value string }

// A sample is one line: the family's name with suffix (_bucket, _sum,
// _count or none), the le bound of a bucket, and the value.
type sample struct {
	suffix string
	le     float64
	value  float64
}

// SetSource makes later scrapes read src; until then they find no
// metrics.
func (g *Gatherer) SetSource(src Source) {
	g.mu.Lock()
	g.src = src
	g.mu.Unlock()
}

// SetLabels names the key labels of maps, by map name, as KeyLabels
// returns them; a map it leaves out has its keys labelled by place.
func (g *Gatherer) SetLabels(labels map[string][]string) {
	g.mu.Lock()
	g.labels = labels
	g.mu.Unlock()
}

// gather reads every map and makes its metrics, the families sorted by
// name and each family's metrics by their label values, as Prometheus's
// client libraries write them.
func (g *Gatherer) gather() ([]*family, error) {
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
	lostFam := &family{name: "kinst_lost_events_total", help: "Records probes sent that the ring buffer refused because it was full.", typ: "counter"}
	lostFam.metrics = []metric{{samples: value(float64(lost))}}
	maps, err := src.Maps()
	if err != nil {
		return nil, fmt.Errorf("read the maps: %w", err)
	}
	full, err := src.Full()
	if err != nil {
		return nil, fmt.Errorf("read the full-map counts: %w", err)
	}
	fullFam := &family{name: "kinst_map_full_total", help: "Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).", typ: "counter"}
	fams := []*family{lostFam}
	for i, m := range maps {
		if strings.HasPrefix(m.Name, "@__") {
			continue // an instrument's bookkeeping: calls in progress, processes seen
		}
		if i < len(full) {
			fullFam.metrics = append(fullFam.metrics, metric{
				labels:  pairs([]string{"map"}, []string{m.Name}),
				samples: value(float64(full[i])),
			})
		}
		f, err := mapFamily(m, labels[m.Name])
		if err != nil {
			return nil, err
		}
		if len(f.metrics) > 0 {
			fams = append(fams, f)
		}
	}
	if len(fullFam.metrics) > 0 {
		fams = append(fams, fullFam)
	}
	for _, f := range fams {
		slices.SortStableFunc(f.metrics, compareLabels)
		for i := 1; i < len(f.metrics); i++ {
			if compareLabels(f.metrics[i-1], f.metrics[i]) == 0 {
				return nil, fmt.Errorf("%s: two entries give the labels %s", f.name, labelText(f.metrics[i].labels))
			}
		}
	}
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	return fams, nil
}

// write writes f in the text format. Names are the format's plain
// names (a map's name is an identifier), so only help text and label
// values need escaping.
func (f *family) write(b *bufio.Writer) {
	b.WriteString("# HELP " + f.name + " ")
	helpEscaper.WriteString(b, f.help)
	b.WriteString("\n# TYPE " + f.name + " " + f.typ + "\n")
	for _, m := range f.metrics {
		for _, s := range m.samples {
			b.WriteString(f.name + s.suffix)
			sep := byte('{')
			for _, l := range m.labels {
				b.WriteByte(sep)
				b.WriteString(l.name + `="`)
				valueEscaper.WriteString(b, l.value)
				b.WriteByte('"')
				sep = ','
			}
			if s.suffix == "_bucket" {
				b.WriteByte(sep)
				b.WriteString(`le="` + formatFloat(s.le) + `"`)
				sep = ','
			}
			if sep == ',' {
				b.WriteByte('}')
			}
			b.WriteString(" " + formatFloat(s.value) + "\n")
		}
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatFloat writes a value as the format and Go's client write it:
// the shortest form that reads back the same, NaN and ±Inf by name.
func formatFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// pairs makes a metric's labels, sorted by name as the exposition
// format wants them.
func pairs(names, values []string) []labelPair {
	ps := make([]labelPair, len(names))
	for i := range names {
		ps[i] = labelPair{names[i], values[i]}
	}
	slices.SortFunc(ps, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	return ps
}

// labelText writes labels for an error message: {name="value",…}.
func labelText(ps []labelPair) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.name + "=" + strconv.Quote(p.value)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// compareLabels orders the metrics of one family, whose label names are
// the same, by their label values.
func compareLabels(a, b metric) int {
	for i := range min(len(a.labels), len(b.labels)) {
		if c := strings.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
			return c
		}
	}
	return len(a.labels) - len(b.labels)
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
func mapFamily(m *output.Map, names []string) (*family, error) {
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
		output.KindAvg, output.KindStats, output.KindHist, output.KindLhist, output.KindTSeries:
	default:
		// Text becomes the value label of an info metric.
		info = true
		labels = append(labels, "value")
	}
	f := &family{name: metricName(m.Name), help: fmt.Sprintf("%s map %s of the kinst program.", m.Kind, m.Name), typ: "gauge"}
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
		samples, typ := entrySamples(e.Value, info)
		f.typ = typ
		f.metrics = append(f.metrics, metric{labels: pairs(labels, values), samples: samples})
	}
	// Prometheus names a counter for what it counts, with _total.
	if f.typ == "counter" && !strings.HasSuffix(f.name, "_total") {
		f.name += "_total"
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

// entrySamples makes the samples of one entry and says its type, which
// is the same for every entry of a map.
func entrySamples(v output.Value, info bool) ([]sample, string) {
	if info {
		return value(1), "gauge"
	}
	switch v.Kind() {
	case output.KindCount:
		return value(float64(v.Uint())), "counter"
	case output.KindSum:
		if v.Signed() {
			return value(float64(v.Int())), "gauge"
		}
		return value(float64(v.Uint())), "counter"
	case output.KindInt:
		if v.Signed() {
			return value(float64(v.Int())), "gauge"
		}
		return value(float64(v.Uint())), "gauge"
	case output.KindAvg, output.KindStats:
		return []sample{{suffix: "_sum", value: float64(v.Total())}, {suffix: "_count", value: float64(v.Uint())}}, "summary"
	case output.KindHist:
		// Up to [2^31, 2^32): 2^bits buckets per power of two from 2^bits.
		bits := v.HistBits()
		bound := func(i int) float64 { _, hi := v.HistBucketBounds(i); return float64(hi) }
		return histogram(v.Buckets(), (33-bits)<<bits+1, bound), "histogram"
	case output.KindLhist:
		min, max, step := v.LhistBounds()
		// Below min is le min-1, [min+(i-1)*step, min+i*step) is le
		// min+i*step-1, and the values from max up count only in +Inf.
		bound := func(i int) float64 { return float64(min + int64(i)*step - 1) }
		return histogram(v.Buckets(), int((max-min)/step)+1, bound), "histogram"
	case output.KindTSeries:
		// The value of the entry's latest interval: the series as it
		// stands now.
		var x float64
		if ps := v.TSeriesPoints(v.TSeriesLatest()); len(ps) > 0 {
			x = float64(ps[len(ps)-1].Value)
			if v.Signed() {
				x = float64(int64(ps[len(ps)-1].Value))
			}
		}
		return value(x), "gauge"
	}
	// Pointers, min and max.
	return value(float64(v.Int())), "gauge"
}

// value is the one sample of a counter or gauge.
func value(x float64) []sample { return []sample{{value: x}} }

// HistBounds is how many buckets of a hist() become le bounds: below
// zero, zero, then up to [2^31, 2^32), the last bpftrace 0.17 fills. A
// hist(n, bits) of 0.26 has (33-bits)<<bits+1.
const HistBounds = 34

// histogram turns the first n buckets into cumulative counts by the le
// bound gives them, then +Inf, _sum and _count. Neither hist() nor
// lhist() keeps a total, so _sum is NaN.
func histogram(counts []uint64, n int, bound func(int) float64) []sample {
	samples := make([]sample, 0, n+3)
	var total uint64
	for i, c := range counts {
		total += c
		if i < n {
			samples = append(samples, sample{suffix: "_bucket", le: bound(i), value: float64(total)})
		}
	}
	return append(samples,
		sample{suffix: "_bucket", le: math.Inf(1), value: float64(total)},
		sample{suffix: "_sum", value: math.NaN()},
		sample{suffix: "_count", value: float64(total)})
}

// Server serves /metrics over HTTP.
type Server struct {
	mu    sync.Mutex
	write func(w io.Writer) error // what a scrape writes; nil until Serve
	ln    net.Listener
	srv   *http.Server
	done  chan error
}

// Serve makes later scrapes answer what write writes, the metrics in
// the text format; until then they find none. A Gatherer's Write is
// one.
func (s *Server) Serve(write func(w io.Writer) error) {
	s.mu.Lock()
	s.write = write
	s.mu.Unlock()
}

// Write writes the metrics of the Source's maps in the text format.
// Nothing is written when a map cannot be read.
func (g *Gatherer) Write(w io.Writer) error {
	fams, err := g.gather()
	if err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	for _, f := range fams {
		f.write(b)
	}
	return b.Flush()
}

// Listen listens on addr (host:port) and serves /metrics from it, before
// anything is attached, so that a busy or malformed address fails the
// run at once. Scrapes find kinst_lost_events_total and the maps once
// Serve gives them a source.
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

// serveMetrics answers a scrape in Prometheus's text format, which
// every Prometheus server accepts whatever else it asks for first. A map
// that cannot be read fails the scrape, as Go's client fails it.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	write := s.write
	s.mu.Unlock()
	h := &headerWriter{w: w}
	var err error
	if write != nil {
		err = write(h)
	}
	switch {
	case err != nil && !h.wrote:
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
	case !h.wrote:
		h.Write(nil)
	}
	// A scraper gone away fails only its own scrape.
}

// headerWriter sets the format's content type before the first write.
type headerWriter struct {
	w     http.ResponseWriter
	wrote bool
}

func (h *headerWriter) Write(p []byte) (int, error) {
	if !h.wrote {
		h.wrote = true
		h.w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	}
	return h.w.Write(p)
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
