package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// freeAddr returns a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// namedWorkload copies the workload to a file called name, so that a
// probe can pick its processes out by comm while other tests run.
func namedWorkload(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(workload(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWorkload runs a workload to its end.
func runWorkload(t *testing.T, path string, args ...string) {
	t.Helper()
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", path, args, err, out)
	}
}

// get returns the body of an HTTP GET that must succeed.
func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, body)
	}
	return string(body)
}

// writeProgram counts the writes of processes called comm in maps of
// every kind of value.
func writeProgram(comm string) string {
	return fmt.Sprintf(`tracepoint:syscalls:sys_enter_write /comm == "%s"/ {
	@writes[comm] = count(); @bytes = sum(args->count); @sizes = hist(args->count);
	@lin = lhist(args->count, 0, 100, 50); @avg[comm] = avg(args->count); @last = args->count;
}`, comm)
}

// Five writes of 10, 10, 10, 100 and 100 bytes, scraped while kinst
// runs: every map is a metric with the exact counts, and kinst prints no
// maps when it is stopped.
func TestPrometheusMetrics(t *testing.T) {
	t.Parallel()
	tracing(t)
	const name = "kinst-prom-ln"
	w := namedWorkload(t, name)
	addr := freeAddr(t)
	r := start(t, "--prometheus", addr, "-e", writeProgram(name))
	r.waitAttached(t, 1)
	runWorkload(t, w, "write", "3", "10")
	runWorkload(t, w, "write", "2", "100")
	got := get(t, "http://"+addr+"/metrics")

	var sizes strings.Builder
	for k := range 34 {
		le, n := "-1", 0
		if k > 0 {
			// 0, 1, 3, 7, … as Prometheus writes floats.
			le = strconv.FormatFloat(float64(uint64(1)<<k/2-1), 'g', -1, 64)
		}
		switch {
		case k >= 8:
			n = 5 // 100 is in [64, 128), le 127
		case k >= 5:
			n = 3 // 10 is in [8, 16), le 15
		}
		fmt.Fprintf(&sizes, "kinst_sizes_bucket{le=\"%s\"} %d\n", le, n)
	}
	want := `# HELP kinst_avg avg map @avg of the kinst program.
# TYPE kinst_avg summary
kinst_avg_sum{comm="` + name + `"} 230
kinst_avg_count{comm="` + name + `"} 5
# HELP kinst_bytes_total sum map @bytes of the kinst program.
# TYPE kinst_bytes_total counter
kinst_bytes_total 230
# HELP kinst_last integer map @last of the kinst program.
# TYPE kinst_last gauge
kinst_last 100
# HELP kinst_lin lhist map @lin of the kinst program.
# TYPE kinst_lin histogram
kinst_lin_bucket{le="-1"} 0
kinst_lin_bucket{le="49"} 3
kinst_lin_bucket{le="99"} 3
kinst_lin_bucket{le="+Inf"} 5
kinst_lin_sum NaN
kinst_lin_count 5
# HELP kinst_lost_events_total Records probes sent that the ring buffer refused because it was full.
# TYPE kinst_lost_events_total counter
kinst_lost_events_total 0
# HELP kinst_map_full_total Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).
# TYPE kinst_map_full_total counter
kinst_map_full_total{map="@avg"} 0
kinst_map_full_total{map="@bytes"} 0
kinst_map_full_total{map="@last"} 0
kinst_map_full_total{map="@lin"} 0
kinst_map_full_total{map="@sizes"} 0
kinst_map_full_total{map="@writes"} 0
# HELP kinst_sizes hist map @sizes of the kinst program.
# TYPE kinst_sizes histogram
` + sizes.String() + `kinst_sizes_bucket{le="+Inf"} 5
kinst_sizes_sum NaN
kinst_sizes_count 5
# HELP kinst_writes_total count map @writes of the kinst program.
# TYPE kinst_writes_total counter
kinst_writes_total{comm="` + name + `"} 5
`
	if got != want {
		t.Errorf("/metrics:\n%s\nwant:\n%s", got, want)
	}
	r.signal(t, syscall.SIGINT)
	r.wait(t).want(t, 0, "Attaching 1 probe...\n", "")
}

// A real Prometheus server scrapes kinst every 100ms and answers a query
// with the exact count of the workload's writes.
func TestPrometheusServerScrapes(t *testing.T) {
	t.Parallel()
	tracing(t)
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary (make deps installs Debian's)")
	}
	const name = "kinst-prom-srv"
	w := namedWorkload(t, name)
	kinstAddr, promAddr := freeAddr(t), freeAddr(t)
	r := start(t, "-q", "--prometheus", kinstAddr, "-e", writeProgram(name))
	r.waitAttached(t, 1)
	runWorkload(t, w, "write", "7", "1")

	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 100ms\nscrape_configs:\n  - job_name: kinst\n    static_configs:\n      - targets: ['%s']\n", kinstAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	server := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	// A file, which the server writes itself: the test reads it while
	// the server runs.
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	server.Stdout, server.Stderr = log, log
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		server.Process.Kill()
		server.Wait()
	}()

	query := "http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(`kinst_writes_total{job="kinst",comm="`+name+`"}`)
	deadline := time.Now().Add(runTimeout)
	for {
		value, err := queryValue(query)
		if err == nil && value == "7" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not answer 7 within %v: last answer %q, %v\nprometheus log:\n%s", runTimeout, value, err, readLog(log.Name()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.signal(t, syscall.SIGTERM)
	r.wait(t).want(t, 0, "", "")
}

// readLog returns the text of a log file, or why it cannot.
func readLog(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// queryValue asks Prometheus an instant query that must find one series
// and returns its value.
func queryValue(u string) (string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return "", err
	}
	if answer.Status != "success" || len(answer.Data.Result) != 1 {
		return "", fmt.Errorf("answer %+v", answer)
	}
	v, _ := answer.Data.Result[0].Value[1].(string)
	return v, nil
}

// With room for 10 elements, 15 keys leave 5 updates of each map
// refused, which kinst_map_full_total counts per map.
func TestPrometheusMapFull(t *testing.T) {
	tracing(t)
	t.Setenv("KINST_MAP_KEYS_MAX", "10")
	addr := freeAddr(t)
	r := start(t, "-q", "--prometheus", addr, "-e", `BEGIN { $i = 0; while ($i < 15) { @m[$i] = $i; @c[$i] = count(); $i++; } }`)
	want := `# HELP kinst_map_full_total Updates of a map refused because it held as many elements as it may (KINST_MAP_KEYS_MAX).
# TYPE kinst_map_full_total counter
kinst_map_full_total{map="@c"} 5
kinst_map_full_total{map="@m"} 5
`
	var got string
	for deadline := time.Now().Add(runTimeout); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got = string(body); strings.Contains(got, want) && strings.Count(got, "\nkinst_m{i=") == 10 && strings.Count(got, "\nkinst_c_total{i=") == 10 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scrape with 10 elements a map and these counters within %v:\n%s\nwant:\n%s", runTimeout, got, want)
		}
	}
	r.signal(t, syscall.SIGINT)
	// The warning at exit comes as without --prometheus.
	r.wait(t).want(t, 0, "", "kinst: warning: map @m was full: 5 updates dropped; it holds at most 10 (set KINST_MAP_KEYS_MAX for more)\n"+
		"kinst: warning: map @c was full: 5 updates dropped; it holds at most 10 (set KINST_MAP_KEYS_MAX for more)\n")
}

func TestPrometheusBadAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	kinst(t, "--prometheus", addr, "-e", "BEGIN { @ = count(); }").want(t, 1, "",
		"kinst: --prometheus: listen tcp "+addr+": bind: address already in use\n")
	kinst(t, "--prometheus", "9100", "-e", "BEGIN { @ = count(); }").want(t, 1, "",
		"kinst: --prometheus: listen tcp: address 9100: missing port in address\n")
}

// BenchmarkPrometheusScrape times one scrape of a count() map of 10,000
// entries, which BEGIN fills, read and rendered as kinst serves it.
func BenchmarkPrometheusScrape(b *testing.B) {
	testenv.Require(b, testenv.Tracepoint, testenv.Ringbuf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The verifier takes a loop of a few thousand rounds, not of 10,000:
	// four BEGIN probes fill a quarter each.
	var prog strings.Builder
	for i := 0; i < 10000; i += 2500 {
		fmt.Fprintf(&prog, "BEGIN { $i = %d; while ($i < %d) { @m[$i] = count(); $i++; } }\n", i, i+2500)
	}
	cmd := exec.Command(testenv.Kinst(b), "-q", "--prometheus", addr, "-e", prog.String())
	cmd.Env = append(os.Environ(), "KINST_MAP_KEYS_MAX=10000")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}()
	u := "http://" + addr + "/metrics"
	for deadline := time.Now().Add(runTimeout); ; {
		resp, err := http.Get(u)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n := strings.Count(string(body), "\nkinst_m{i="); n == 10000 {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("no map of 10000 entries within %v: %v\n%s", runTimeout, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for b.Loop() {
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
