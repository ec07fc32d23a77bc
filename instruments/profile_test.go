package instruments_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/testenv"
)

// TestProfilePprof profiles the workload burning CPU in main.burn for
// 1.5s: main.burn dominates the profile, as go tool pprof shows it, and
// every sample is the workload's, labelled and with the CPU time of a
// sample at 99 Hz.
func TestProfilePprof(t *testing.T) {
	testenv.Require(t, testenv.PerfEvent, testenv.Ringbuf)
	w := testenv.Workload(t)
	file := filepath.Join(t.TempDir(), "cpu.pb.gz")
	stdout, stderr, code := kinst(t, "profile", "-o", file, "-c", w+" burn 1500")
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" || p.Period != 1000000000/99 {
		t.Errorf("sample types %v, period %d; want samples/count, cpu/nanoseconds, 10101010", p.SampleType, p.Period)
	}
	// The profiled program is the first mapping, with its build ID.
	elf, err := elfsym.Open(w)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Mapping[0]; m.File != w || m.BuildID != elf.BuildID || elf.BuildID == "" {
		t.Errorf("first mapping %s (build ID %q), want %s (%q)", m.File, m.BuildID, w, elf.BuildID)
	}
	var total, burning int64
	pids := map[int64]bool{}
	for _, s := range p.Sample {
		switch got := s.Label["comm"]; {
		case len(got) == 1 && got[0] == "kinst" && slices.ContainsFunc(s.Location, func(l *profile.Location) bool {
			return len(l.Line) > 0 && strings.Contains(l.Line[0].Function.Name, "execve")
		}):
			// The command's pid in its execve, before the kernel names
			// the process after the new program: the stub was kinst.
		case len(got) != 1 || got[0] != workloadComm(t):
			t.Errorf("sample of comm %q, want only the workload's (or kinst's stub in its execve)", got)
		}
		if len(s.NumLabel["pid"]) != 1 || len(s.NumLabel["thread"]) != 1 {
			t.Fatalf("sample labels %v, want a pid and a thread", s.NumLabel)
		}
		pids[s.NumLabel["pid"][0]] = true
		if s.Value[1] != s.Value[0]*p.Period {
			t.Errorf("sample values %v: cpu is not samples × period", s.Value)
		}
		total += s.Value[0]
		// An interrupt's kernel frames may lie above main.burn.
		if slices.ContainsFunc(s.Location, func(l *profile.Location) bool {
			return len(l.Line) > 0 && l.Line[0].Function.Name == "main.burn"
		}) {
			burning += s.Value[0]
		}
	}
	// The rest is the workload starting, which takes longer on an
	// emulated CPU (70% in main.burn seen there, over 90% here).
	if len(pids) != 1 || total == 0 || burning*10 < total*6 {
		t.Errorf("%d samples of %d processes, %d in main.burn: want one process, 60%% in main.burn", total, len(pids), burning)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run go tool pprof")
	}
	out, err := exec.Command(goCmd, "tool", "pprof", "-top", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	// The first row after the header is the function with the most flat
	// time.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			if i+1 >= len(lines) || !strings.HasSuffix(lines[i+1], " main.burn") {
				t.Errorf("go tool pprof -top does not put main.burn first:\n%s", out)
			}
			return
		}
	}
	t.Errorf("go tool pprof -top printed no table:\n%s", out)
}

// TestProfileFolded writes folded stacks: the workload's name, then its
// stack from the goroutine's start down to main.burn.
func TestProfileFolded(t *testing.T) {
	testenv.Require(t, testenv.PerfEvent, testenv.Ringbuf)
	w := testenv.Workload(t)
	stdout, stderr, code := kinst(t, "profile", "-f", "folded", "--hz", "199", "-c", w+" burn 1000")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	// main.run is inlined into main.main; the kernel frames of an
	// interrupt may follow main.burn.
	const burn = ";runtime.goexit.abi0;runtime.main;main.main;main.burn"
	var total, burning int
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		stack, count, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(count)
		if ok && err == nil && strings.HasPrefix(stack, "kinst;") {
			// The command itself, named kinst until its exec (the
			// stub's few instructions, or the exec in the kernel): a
			// slow guest samples it there.
			continue
		}
		if !ok || err != nil || !strings.HasPrefix(stack, workloadComm(t)+";") {
			t.Fatalf("folded line %q is not the workload's STACK COUNT", line)
		}
		total += n
		if stack == workloadComm(t)+burn || strings.HasPrefix(stack, workloadComm(t)+burn+";") {
			burning += n
		}
	}
	if total == 0 || burning*10 < total*6 {
		t.Errorf("%d of %d samples in %s, want 60%%:\n%s", burning, total, burn, stdout)
	}
}

func TestProfileUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"profile"}, 2, "kinst profile: -f pprof writes a binary profile: give -o FILE\n"},
		{[]string{"profile", "-f", "svg"}, 2, "kinst profile: unknown output format \"svg\": use pprof or folded\n"},
		{[]string{"profile", "--hz", "0", "-f", "folded"}, 2, "kinst profile: --hz 0: give a positive number of samples a second\n"},
		{[]string{"profile", "-o", "p", "extra"}, 2, "kinst profile: profile takes no arguments, found \"extra\"\n"},
		{[]string{"profile", "-o", filepath.Join(dir, "none", "p")}, 1, "kinst: open " + filepath.Join(dir, "none", "p") + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		stdout, stderr, code := kinst(t, tt.args...)
		if code != tt.code || stdout != "" || stderr != tt.stderr {
			t.Errorf("kinst %q: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", tt.args, code, stdout, stderr, tt.code, tt.stderr)
		}
	}
}

// BenchmarkProfileOverhead measures what sampling at 99 Hz takes from a
// CPU-bound workload: the kernel's timing of each run of the profile
// program (BPF_STATS_RUN_TIME), the perf interrupt itself aside, times
// 99 runs a second.
func BenchmarkProfileOverhead(b *testing.B) {
	testenv.Require(b, testenv.PerfEvent, testenv.Ringbuf)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF run time statistics: %v", err)
	}
	defer stats.Close()
	w := testenv.Workload(b)
	cmd, _, stop := startAttached(b, 1, "profile", "-f", "folded", "-o", os.DevNull, "--comm", workloadComm(b))
	defer stop()
	for b.Loop() {
		if out, err := exec.Command(w, "burn", "1000").CombinedOutput(); err != nil {
			b.Fatalf("workload: %v\n%s", err, out)
		}
	}
	total, runs := programRuns(b, cmd.Process.Pid)
	if runs == 0 {
		b.Fatal("the profile program never ran")
	}
	perSample := float64(total) / float64(runs)
	b.ReportMetric(perSample, "ns/sample")
	b.ReportMetric(perSample*99/1e9*100, "%cpu@99Hz")
}
