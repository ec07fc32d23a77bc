package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// progSoak is the long run's program: a printf per event, a count that
// must end exact, and a map keyed by the millisecond, which fills up in
// seconds so that its refused updates are counted all run long.
const progSoak = `tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @calls = count(); @ms[nsecs / 1000000] = count(); printf("%d %s\n", tid, comm); }`

// An rssSample is the tool's resident set at a CLOCK_MONOTONIC time.
type rssSample struct {
	at    int64
	bytes int64
}

// soak runs each tool once for b.soakTime while the workload makes up
// to b.soakRate getppid calls a second, each a printf event and two map
// updates, and checks that every event and update is either delivered
// or reported lost, and that the tool's memory stays flat. The workload
// runs for the time given whatever the tool costs it, and counts what
// it made: a tool that slows it generates fewer events.
func (b *bench) soak() []*row {
	var (
		genRate, rate, lost, missing   = figures{}, figures{}, figures{}, figures{}
		dropped, mapMissing, countDiff = figures{}, figures{}, figures{}
		rssStart, rssEnd, rssMax, grow = figures{}, figures{}, figures{}, figures{}
	)
	stamp, made := filepath.Join(b.tmp, "soak-stamp"), filepath.Join(b.tmp, "soak-calls")
	saved := b.runner.timeout
	// The run lasts soakTime by design; the timeout guards the rest.
	b.runner.timeout = b.soakTime + saved
	defer func() { b.runner.timeout = saved }()
	fmt.Fprintf(b.log, "bench: soak: %v of %d getppid calls a second under %s, one tool after the other\n",
		b.soakTime, b.soakRate, strings.Join(b.order, ", "))
	for _, tool := range b.order {
		os.Remove(stamp)
		os.Remove(made)
		child := strings.Join([]string{b.self, childArg, execStamp, stamp, b.workload, "stream",
			strconv.FormatInt(b.soakTime.Milliseconds(), 10), strconv.Itoa(b.soakRate), made}, " ")
		// Every second, or 50 times in a short run.
		every := min(time.Second, b.soakTime/50)
		var samples []rssSample
		r, err := b.runner.runWatched([]string{b.tools[tool], "-e", progSoak, "-c", child}, " "+b.comm,
			func(pid int, done <-chan struct{}) { samples = sampleRSS(pid, every, b.runner.clock.now, done) })
		if err != nil {
			b.fail("soak", tool, err)
			continue
		}
		start, err := readNanos(stamp)
		if err != nil {
			b.fail("soak", tool, fmt.Errorf("the -c command left no stamp: %w", err))
			continue
		}
		// readNanos reads any decimal number: here, the calls made.
		n, err := readNanos(made)
		if err != nil {
			b.fail("soak", tool, fmt.Errorf("the workload left no count: %w", err))
			continue
		}
		if r.out.events == 0 || r.out.firstMap == 0 {
			b.fail("soak", tool, fmt.Errorf("%d events and no maps printed", r.out.events))
			continue
		}
		calls := r.out.sums["@calls"]
		if calls != n {
			// An exact count in the kernel is the premise of the other
			// figures; a wrong one is the tool's failure.
			b.fail("soak", tool, fmt.Errorf("@calls is %d, want %d", calls, n))
		}
		genRate.add(tool, float64(n)/b.soakTime.Seconds())
		rate.add(tool, float64(r.out.events)/float64(r.out.lastEvent-start)*1e9)
		lost.add(tool, float64(r.out.lost))
		missing.add(tool, float64(n-int64(r.out.events)-int64(r.out.lost)))
		countDiff.add(tool, float64(n-calls))
		if tool == "kinst" {
			// bpftrace 0.17 does not report the updates a full map
			// refused: its column stays empty.
			dropped.add(tool, float64(r.out.full))
		}
		mapMissing.add(tool, float64(n-r.out.sums["@ms"]-int64(r.out.full)))
		st := rssFigures(samples, start, r.out.firstMap)
		if !st.ok {
			b.fail("soak", tool, fmt.Errorf("%d memory samples, too few for a run of %v", len(samples), b.soakTime))
			continue
		}
		rssStart.add(tool, float64(st.start))
		rssEnd.add(tool, float64(st.end))
		rssMax.add(tool, float64(st.max))
		grow.add(tool, float64(st.end-st.settled))
		b.note("soak %s: resident memory every 10%% of the run: %s", tool, st.trace)
		b.logRun("soak", tool, 0, "%d generated in %v, %d delivered, %d lost, @calls %d, @ms sum %d, %d map updates dropped; RSS %d→%d, max %d",
			n, ns(r.out.firstMap-start), r.out.events, r.out.lost, calls, r.out.sums["@ms"], r.out.full, st.start, st.end, st.max)
	}
	return []*row{
		genRate.row("soak events generated per second", perSecond, kinstMedianAtLeast(0.95*float64(b.soakRate), "kinst >= 95% of -soak-rate")),
		rate.row("soak printf events delivered per second", perSecond, target{}),
		lost.row("soak printf events lost, reported", number, target{}),
		missing.row("soak printf events missing, unreported", number, kinstPeakAtMost(0, "kinst 0")),
		countDiff.row("soak @calls = count() short of events", number, kinstPeakAtMost(0, "kinst 0")),
		dropped.row("soak full-map updates dropped, reported", number, target{}),
		mapMissing.row("soak map updates missing, unreported", number, kinstPeakAtMost(0, "kinst 0")),
		rssStart.row("soak RSS at the start of the stream", byteSize, target{}),
		rssEnd.row("soak RSS at the end of the stream", byteSize, target{}),
		rssMax.row("soak RSS largest", byteSize, target{}),
		grow.row("soak RSS growth after the first 10%", byteSize, kinstPeakAtMost(mib, "kinst <= 1 MiB")),
	}
}

// sampleRSS reads pid's resident memory every interval until done is
// closed or the process is gone.
func sampleRSS(pid int, every time.Duration, now func() int64, done <-chan struct{}) []rssSample {
	status := fmt.Sprintf("/proc/%d/status", pid)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var samples []rssSample
	for {
		// The stamp comes before the read: a process that has exited
		// shows no VmRSS, so a sample read is one of the living process,
		// whatever delays the reader between the read and a later stamp.
		at := now()
		data, err := os.ReadFile(status)
		if err != nil {
			return samples
		}
		if v, ok := vmRSS(data); ok {
			samples = append(samples, rssSample{at, v})
		}
		select {
		case <-done:
			return samples
		case <-tick.C:
		}
	}
}

// vmRSS reads the VmRSS line of a /proc/PID/status file, in bytes.
func vmRSS(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// rssStats are the samples of one run that fall within the stream.
type rssStats struct {
	ok                       bool
	start, settled, end, max int64  // the first, the one at 10%, the last, the largest
	trace                    string // every 10% of the stream, in MiB
}

// rssFigures picks from samples those taken while the stream ran, from
// from to to (CLOCK_MONOTONIC), and summarises them. It needs at least
// one sample in each tenth of the stream.
func rssFigures(samples []rssSample, from, to int64) rssStats {
	var in []rssSample
	for _, s := range samples {
		if s.at >= from && s.at <= to {
			in = append(in, s)
		}
	}
	if len(in) < 10 {
		return rssStats{}
	}
	st := rssStats{ok: true, start: in[0].bytes, end: in[len(in)-1].bytes}
	var trace []string
	next := from
	for _, s := range in {
		st.max = max(st.max, s.bytes)
		if s.at >= next {
			trace = append(trace, strconv.FormatFloat(float64(s.bytes)/mib, 'f', 1, 64))
			if len(trace) == 2 {
				st.settled = s.bytes
			}
			next += (to - from) / 10
		}
	}
	st.trace = strings.Join(trace, " ") + " MiB"
	return st
}
