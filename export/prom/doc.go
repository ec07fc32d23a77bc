// Package prom serves a running program's maps as Prometheus metrics.
//
// Each map is one metric family named kinst_ and the map's name ("@"
// alone is kinst_map), its keys labels named after what the program puts
// in them (@[comm, args->fd] gives comm and fd; see KeyLabels) or, where
// that gives no name, after their place: key (one key) or key0, key1, …
// count() maps and sums of unsigned values are counters, their names
// ending in _total (@calls is kinst_calls_total); other integers,
// signed sums, min() and max() gauges; avg() and stats() summaries
// without quantiles (their _sum and _count); hist() and lhist()
// histograms whose le bounds are bpftrace's buckets. hist() keeps no
// total, so its _sum is NaN. A map of strings or symbols is an info
// metric: 1, with the value as the label value. kinst_lost_events_total
// counts the records the ring buffer refused, kinst_map_full_total{map}
// the updates each map refused because it was full. Maps named @__… are
// instruments' bookkeeping and are not served.
//
// A Server serves them on /metrics in Prometheus's text exposition format
// (version 0.0.4), which every Prometheus server reads.
package prom
