package main

import (
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

func TestParseLost(t *testing.T) {
	tests := []struct {
		line string
		n    uint64
		ok   bool
	}{
		{"Lost 12 events", 12, true},
		{"Lost 0 events", 0, true},
		{"Lost 12 events!", 0, false},
		{"Lost many events", 0, false},
		{"1234 Lost 12 events", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		n, ok := parseLost([]byte(tt.line))
		if n != tt.n || ok != tt.ok {
			t.Errorf("parseLost(%q) = %d, %v; want %d, %v", tt.line, n, ok, tt.n, tt.ok)
		}
	}
}

func TestParseAttached(t *testing.T) {
	tests := []struct {
		line string
		n    int
		ok   bool
	}{
		{"Attaching 10001 probes...", 10001, true},
		{"Attaching 1 probe...", 1, true},
		{"Attached 10002 probes", 10002, true},
		{"Attached 1 probe", 1, true},
		{"Attached many probes", 0, false},
		{"kinst: Attached 2 probes", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		n, ok := parseAttached([]byte(tt.line))
		if n != tt.n || ok != tt.ok {
			t.Errorf("parseAttached(%q) = %d, %v; want %d, %v", tt.line, n, ok, tt.n, tt.ok)
		}
	}
}

func TestLinesAdd(t *testing.T) {
	l := lines{event: " workload"}
	for i, s := range []string{
		"Attaching 1 probe...",
		"4242 workload",
		"Lost 3 events",
		"4242 workload",
		"",
		"@[workload]: 2000000",
		"@[bash]: 7",
		"Lost 2 events",
	} {
		l.add([]byte(s), int64(100+i))
	}
	if l.events != 2 || l.lastEvent != 103 {
		t.Errorf("events = %d, last at %d; want 2 at 103", l.events, l.lastEvent)
	}
	if l.lost != 5 {
		t.Errorf("lost = %d, want 5", l.lost)
	}
	if l.firstMap != 105 {
		t.Errorf("first map line at %d, want 105", l.firstMap)
	}
	if v, ok := l.mapValue("@[workload]"); v != 2000000 || !ok {
		t.Errorf("@[workload] = %d, %v; want 2000000", v, ok)
	}
	if v, ok := l.mapValue("@[bash]"); v != 7 || !ok {
		t.Errorf("@[bash] = %d, %v; want 7", v, ok)
	}
	if _, ok := l.mapValue("@[work]"); ok {
		t.Error("@[work] found, want absent: a key must match whole")
	}
	if want := map[string]int64{"@": 2000007}; !maps.Equal(l.sums, want) {
		t.Errorf("sums = %v, want %v", l.sums, want)
	}
}

func TestLinesSums(t *testing.T) {
	l := lines{}
	for i, s := range []string{
		"@calls: 12",
		"@ms[17]: 5",
		"@ms[18]: 7",
		"@ms[1, a: b]: 1",
		"@h: ",
		"@hist:",
		"[4, 8)   3 |@@@@|",
		"@s[x]: some text",
	} {
		l.add([]byte(s), int64(i))
	}
	if want := map[string]int64{"@calls": 12, "@ms": 13}; !maps.Equal(l.sums, want) {
		t.Errorf("sums = %v, want %v", l.sums, want)
	}
}

func TestParseFull(t *testing.T) {
	for _, tt := range []struct {
		line string
		n    uint64
		ok   bool
	}{
		{"kinst: warning: map @ms was full: 12 updates dropped; it holds at most 8 (set KINST_MAP_KEYS_MAX for more)", 12, true},
		{"kinst: warning: map @x was full: 1 update dropped; it holds at most 8 (set KINST_MAP_KEYS_MAX for more)", 1, true},
		{"kinst: warning: map @x was full: many updates dropped", 0, false},
		{"kinst: warning: something else", 0, false},
		{"Lost 3 events", 0, false},
	} {
		n, ok := parseFull([]byte(tt.line))
		if n != tt.n || ok != tt.ok {
			t.Errorf("parseFull(%q) = %d, %v; want %d, %v", tt.line, n, ok, tt.n, tt.ok)
		}
	}
}

func TestLinesWithoutEventMarker(t *testing.T) {
	l := lines{}
	l.add([]byte("4242 workload"), 1)
	if l.events != 0 {
		t.Errorf("events = %d with no marker, want 0", l.events)
	}
}

// chunks is a reader that returns its pieces one read at a time.
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	*c = (*c)[1:]
	return n, nil
}

func TestLinesReadFrom(t *testing.T) {
	r := &chunks{"1 work", "load\n2 workload\n@[a]", ": 1\n@[b]: 2"}
	var reads int64
	l := lines{event: " workload"}
	l.readFrom(r, func() int64 { reads++; return reads * 10 })
	// Reads return at 10, 20 and 30; the final EOF at 40 ends "@[b]: 2".
	if l.events != 2 || l.lastEvent != 20 {
		t.Errorf("events = %d, last at %d; want 2 at 20", l.events, l.lastEvent)
	}
	if l.firstMap != 30 {
		t.Errorf("first map at %d, want 30", l.firstMap)
	}
	if want := []string{"@[a]: 1", "@[b]: 2"}; !slices.Equal(l.maps, want) {
		t.Errorf("maps = %q, want %q", l.maps, want)
	}
}

func testRunner(t *testing.T, timeout time.Duration) *runner {
	return &runner{clock: newClock(), timeout: timeout, tmp: t.TempDir()}
}

func TestRun(t *testing.T) {
	r := testRunner(t, 10*time.Second)
	script := `echo "Attaching 1 probe..."; echo "7 workload"; echo "Lost 4 events" >&2; sleep 0.05; echo "@[true]: 2"`
	before := monotonic()
	res, err := r.run([]string{"/bin/sh", "-c", script}, " workload")
	after := monotonic()
	if err != nil {
		t.Fatal(err)
	}
	if res.start < before || res.exit > after || res.wall() < 50e6 {
		t.Errorf("run from %d to %d (wall %d), want within [%d, %d] and at least 50 ms",
			res.start, res.exit, res.wall(), before, after)
	}
	if res.out.events != 1 || res.out.lost != 4 {
		t.Errorf("events %d, lost %d; want 1 and 4 (from standard error)", res.out.events, res.out.lost)
	}
	if v, ok := res.out.mapValue("@[true]"); v != 2 || !ok {
		t.Errorf("@[true] = %d, %v; want 2", v, ok)
	}
	// The line times are taken when they are read, so a reader the
	// scheduler holds back (36 ms seen in an emulated guest) may stamp the
	// event line late, and the map line after the exit is seen: only the
	// order of the lines and the sleep before the map line are certain.
	if o := res.out; !(res.start <= o.lastEvent && o.lastEvent <= o.firstMap) {
		t.Errorf("event line at %d, map line at %d; want both after the start at %d, in that order",
			o.lastEvent, o.firstMap, res.start)
	}
	if gap := res.out.firstMap - res.start; gap < 50e6 {
		t.Errorf("map line %d ns after the start, want at least the 50 ms sleep before it", gap)
	}
	if res.maxRSS < 100<<10 {
		t.Errorf("max RSS %d bytes, want a shell's (at least 100 KiB)", res.maxRSS)
	}
}

func TestRunFailure(t *testing.T) {
	r := testRunner(t, 10*time.Second)
	_, err := r.run([]string{"/bin/sh", "-c", "echo 'ERROR: no such probe' >&2; exit 3"}, "")
	if err == nil || !strings.Contains(err.Error(), "exit status 3: ERROR: no such probe") {
		t.Errorf("err = %v, want the exit status and standard error", err)
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	r := testRunner(t, 200*time.Millisecond)
	marker := "bench-timeout-" + filepath.Base(t.TempDir())
	start := time.Now()
	// The background shell holds the output pipe: only killing the whole
	// group ends the read.
	script := "sh -c 'sleep 30; : " + marker + "' & exec sh -c 'sleep 31; : " + marker + "'"
	_, err := r.run([]string{"/bin/sh", "-c", script}, "")
	if !errors.Is(err, errTimeout) {
		t.Fatalf("err = %v, want %v", err, errTimeout)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %v after a 200 ms timeout", d)
	}
	if left := testenv.ProcessesMentioning(marker); len(left) > 0 {
		t.Errorf("processes %v left running after the timeout", left)
	}
}

func TestTail(t *testing.T) {
	if got := tail("\nline one\nline two\n", 100); got != "line one | line two" {
		t.Errorf("tail = %q", got)
	}
	if got := tail("abcdefgh", 3); got != "...fgh" {
		t.Errorf("tail = %q, want %q", got, "...fgh")
	}
}

func TestMain(m *testing.M) {
	// The end-to-end test runs this binary as the tools' -c helper.
	childMain()
	os.Exit(m.Run())
}
