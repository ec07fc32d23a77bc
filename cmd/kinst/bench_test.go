package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/testenv"
)

// libcPath is the C library the many-probe benchmark probes.
const libcPath = "/lib/x86_64-linux-gnu/libc.so.6"

// libcFunctions returns n functions of the C library at distinct
// offsets, so that no two probe blocks share a function.
func libcFunctions(b *testing.B, n int) []string {
	b.Helper()
	f, err := elfsym.Open(libcPath)
	if err != nil {
		b.Skipf("no C library to probe: %v", err)
	}
	seen := map[uint64]bool{}
	var names []string
	for _, s := range f.Symbols("*") {
		// Names with dots or starting with an underscore are aliases and
		// internal entry points; plain names are what users probe.
		if seen[s.Offset] || strings.ContainsAny(s.Name, ".@") || strings.HasPrefix(s.Name, "_") {
			continue
		}
		seen[s.Offset] = true
		names = append(names, s.Name)
		if len(names) == n {
			return names
		}
	}
	b.Skipf("the C library has %d functions at distinct offsets, not %d", len(names), n)
	return nil
}

// detachedIn is what -v says once the probes are detached.
var detachedIn = regexp.MustCompile(`^kinst: detached (\d+) links in (\S+)$`)

// BenchmarkManyUprobes measures how long kinst takes to attach and to
// detach programs of one uprobe block per C library function, each
// block its own probe as users write them: attach is from the start of
// kinst to its probes-attached line (compiling and loading included),
// detach what -v reports, and links how many links it took.
func BenchmarkManyUprobes(b *testing.B) {
	testenv.Require(b, testenv.Uprobe, testenv.Ringbuf)
	for _, n := range []int{10, 100, 400, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var prog strings.Builder
			for _, fn := range libcFunctions(b, n) {
				fmt.Fprintf(&prog, "uprobe:%s:%s { @[probe] = count(); }\n", libcPath, fn)
			}
			file := filepath.Join(b.TempDir(), "many.bt")
			if err := os.WriteFile(file, []byte(prog.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			var attach, detach time.Duration
			links := 0
			for b.Loop() {
				a, d, l := attachDetach(b, file)
				attach += a
				detach += d
				links = l
			}
			b.ReportMetric(attach.Seconds()/float64(b.N), "attach-s")
			b.ReportMetric(detach.Seconds()/float64(b.N), "detach-s")
			b.ReportMetric(float64(links), "links")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// attachDetach runs kinst on file until its probes are attached, stops
// it, and returns the times to attach and to detach and the link count.
func attachDetach(b *testing.B, file string) (attach, detach time.Duration, links int) {
	b.Helper()
	cmd := exec.Command(testenv.Kinst(b), "-v", "-q", file)
	cmd.Env = append(os.Environ(), "__BPFTRACE_NOTIFY_PROBES_ATTACHED=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if line == "__BPFTRACE_NOTIFY_PROBES_ATTACHED" {
			attach = time.Since(start)
			cmd.Process.Signal(syscall.SIGINT)
		}
		if m := detachedIn.FindStringSubmatch(line); m != nil {
			fmt.Sscan(m[1], &links)
			detach, _ = time.ParseDuration(m[2])
		}
		if strings.HasPrefix(line, "kinst: warning") {
			b.Log(line)
		}
	}
	if err := cmd.Wait(); err != nil || attach == 0 || links == 0 {
		b.Fatalf("kinst: %v; attached in %v, %d links detached", err, attach, links)
	}
	return attach, detach, links
}
