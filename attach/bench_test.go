package attach_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/usdt"
)

// hitsPerRun is how many calls of the probed function one workload run
// makes; the workload's start-up is measured apart and subtracted.
const hitsPerRun = 200_000

// probedFunc is called once by every getppid: getppid returns
// task_tgid_vnr(current->real_parent).
const probedFunc = "__task_pid_nr_ns"

// startKinst runs kinst in the background until the probes are
// attached, and returns a function that stops it.
func startKinst(b *testing.B, args ...string) func() {
	b.Helper()
	cmd := exec.Command(testenv.Kinst(b), append([]string{"-v"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	attached := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "kinst: attached ") {
				attached <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		attached <- fmt.Errorf("kinst ended before attaching")
	}()
	select {
	case err := <-attached:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		b.Fatal("kinst did not attach")
	}
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}

// workloadTime runs the getppid workload and returns its wall time.
func workloadTime(b *testing.B, calls int) time.Duration {
	start := time.Now()
	if out, err := exec.Command(testenv.Workload(b), "getppid", fmt.Sprint(calls)).CombinedOutput(); err != nil {
		b.Fatalf("workload: %v\n%s", err, out)
	}
	return time.Since(start)
}

// BenchmarkHitCost measures what one probe hit costs through each
// mechanism on the same function, in ns and as a ratio to fentry.
// Emulation distorts absolute times; the ratios are what compare.
func BenchmarkHitCost(b *testing.B) {
	testenv.Require(b, testenv.Kprobe, testenv.Kretprobe, testenv.Fentry, testenv.Fexit)
	type mech struct {
		name, attach, probe string
	}
	mechs := []mech{
		{"fentry", "fentry", "kprobe"},
		{"fexit", "fentry", "kretprobe"},
		{"kprobe", "kprobe", "kprobe"},
		{"kretprobe", "kprobe", "kretprobe"},
	}
	if kernel.Available(kernel.FeatKprobeMulti) {
		mechs = append(mechs, mech{"kprobe.multi", "kprobe.multi", "kprobe"})
	}
	cost := map[string]float64{}
	for i := 0; i < b.N; i++ {
		bare := workloadTime(b, hitsPerRun) - workloadTime(b, 0)
		for _, m := range mechs {
			stop := startKinst(b, "--attach", m.attach, "-e", fmt.Sprintf("%s:%s { @ = count(); }", m.probe, probedFunc))
			traced := workloadTime(b, hitsPerRun) - workloadTime(b, 0)
			stop()
			cost[m.name] += float64(traced-bare) / hitsPerRun / float64(b.N)
		}
	}
	for _, m := range mechs {
		b.ReportMetric(cost[m.name], m.name+"-ns/hit")
		if m.name != "fentry" && cost["fentry"] > 0 {
			b.ReportMetric(cost[m.name]/cost["fentry"], m.name+"/fentry")
		}
	}
}

// BenchmarkAttachDetach measures attaching and detaching 10, 100 and
// 1,000 functions through one kprobe.multi link and through one kprobe
// link each.
func BenchmarkAttachDetach(b *testing.B) {
	testenv.Require(b, testenv.Kprobe)
	mechs := []string{"kprobe"}
	if kernel.Available(kernel.FeatKprobeMulti) {
		mechs = append(mechs, "kprobe.multi")
	}
	for _, n := range []int{10, 100, 1000} {
		names := kernelFunctions(b, n)
		if names == nil {
			break
		}
		points := make([]string, n)
		for i, name := range names {
			points[i] = "kprobe:" + name
		}
		prog := strings.Join(points, ",") + " { @ = count(); }"
		for _, m := range mechs {
			b.Run(fmt.Sprintf("%s/%d", m, n), func(b *testing.B) {
				var att, det time.Duration
				for i := 0; i < b.N; i++ {
					a, d, _ := attachTimes(b, "--attach", m, "-e", prog)
					att += a
					det += d
				}
				b.ReportMetric(float64(att.Milliseconds())/float64(b.N), "attach-ms")
				b.ReportMetric(float64(det.Milliseconds())/float64(b.N), "detach-ms")
			})
		}
	}
}

// BenchmarkManyKprobeBlocks measures attaching and detaching 10, 100
// and 1,000 kprobe blocks, one per kernel function, as a generated
// script writes them: blocks of one body ("shared"), which share a
// program and a kprobe.multi link where the kernel has it; blocks of
// distinct bodies ("separate"), a program each through the mechanism
// kinst picks alone (a trampoline where BTF describes the function);
// and blocks of one body under --attach kprobe ("kprobe"), a program
// and a kprobe link each, as without kprobe.multi nor trampolines.
func BenchmarkManyKprobeBlocks(b *testing.B) {
	testenv.Require(b, testenv.Kprobe)
	for _, n := range []int{10, 100, 1000} {
		names := kernelFunctions(b, n)
		if names == nil {
			break
		}
		var shared, separate strings.Builder
		for i, name := range names {
			fmt.Fprintf(&shared, "kprobe:%s { @ = count(); }\n", name)
			fmt.Fprintf(&separate, "kprobe:%s { @ = sum(%d); }\n", name, i)
		}
		for _, v := range []struct {
			name string
			args []string
		}{
			{"shared", []string{"-e", shared.String()}},
			{"separate", []string{"-e", separate.String()}},
			{"kprobe", []string{"--attach", "kprobe", "-e", shared.String()}},
		} {
			b.Run(fmt.Sprintf("%s/%d", v.name, n), func(b *testing.B) {
				var att, det time.Duration
				links := 0
				for i := 0; i < b.N; i++ {
					a, d, l := attachTimes(b, v.args...)
					att += a
					det += d
					links = l
				}
				b.ReportMetric(float64(att.Milliseconds())/float64(b.N), "attach-ms")
				b.ReportMetric(float64(det.Milliseconds())/float64(b.N), "detach-ms")
				b.ReportMetric(float64(links), "links")
			})
		}
	}
}

// kernelFunctions picks n functions of the kernel proper spread over
// ftrace's list, or returns nil when it lists fewer. Functions whose
// names say they belong to boot or to tracing itself are left out: the
// kernel refuses to probe many of them; so are those on the kprobe
// blacklist, where debugfs shows it, and names kallsyms gives several
// symbols, which a kprobe refuses from 6.5 on (EADDRNOTAVAIL).
func kernelFunctions(b *testing.B, n int) []string {
	funcs, err := kernel.FilterFunctions()
	if err != nil {
		b.Skipf("ftrace's function list is unreadable: %v", err)
	}
	syms, err := kernel.LoadKallsyms()
	if err != nil {
		b.Skipf("kallsyms is unreadable: %v", err)
	}
	skip := regexp.MustCompile(`^(_|.*(init|exit|trace|ftrace|kprobe|rcu|lock|irq|nmi|entry|idle))`)
	// Lines such as "0xffffffff81000000-0xffffffff81000010\tname".
	blacklist := map[string]bool{}
	list, _ := os.ReadFile("/sys/kernel/debug/kprobes/blacklist")
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			blacklist[f[1]] = true
		}
	}
	var names []string
	for _, f := range funcs.Funcs {
		if f.Module == "" && len(syms.ByName(f.Name)) == 1 && !blacklist[f.Name] && !skip.MatchString(f.Name) {
			names = append(names, f.Name)
		}
	}
	if n > len(names) {
		return nil
	}
	picked := make([]string, n)
	for i := range picked {
		picked[i] = names[i*len(names)/n]
	}
	return picked
}

var (
	attachedIn = regexp.MustCompile(`(?m)^kinst: attached \S+ in (\S+)$`)
	detachedIn = regexp.MustCompile(`(?m)^kinst: detached (\d+) links in (\S+)$`)
)

// attachTimes runs kinst -v with args and a -c command that ends at
// once, and returns what it reports: the time spent attaching, summed
// over its programs, the time to detach and the links detached.
func attachTimes(b *testing.B, args ...string) (attach, detach time.Duration, links int) {
	b.Helper()
	args = append([]string{"-v", "-q", "-c", testenv.Workload(b) + " getppid 0"}, args...)
	out, err := exec.Command(testenv.Kinst(b), args...).CombinedOutput()
	if err != nil {
		b.Fatalf("kinst: %v\n%s", err, out)
	}
	for _, m := range attachedIn.FindAllSubmatch(out, -1) {
		d, err := time.ParseDuration(string(m[1]))
		if err != nil {
			b.Fatal(err)
		}
		attach += d
	}
	m := detachedIn.FindSubmatch(out)
	if attach == 0 || m == nil {
		b.Fatalf("no attach or detach times in\n%s", out)
	}
	links, _ = strconv.Atoi(string(m[1]))
	if detach, err = time.ParseDuration(string(m[2])); err != nil {
		b.Fatal(err)
	}
	return attach, detach, links
}

// BenchmarkUSDTHitCost measures what one hit of a USDT probe costs next
// to a plain uprobe on the same instruction, counting only, and reading
// three arguments: two registers and a global in memory, against a
// uprobe reading two registers. The target fires kinst:tick once per
// round among other, unprobed sites.
func BenchmarkUSDTHitCost(b *testing.B) {
	testenv.Require(b, testenv.Uprobe)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		b.Skip("gcc is not installed")
	}
	bin := filepath.Join(b.TempDir(), "target")
	if out, err := exec.Command(gcc, "-O1", "-static", "-o", bin, "../cmd/kinst/testdata/target.c").CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	probes, err := usdt.Read(bin)
	if err != nil {
		b.Fatal(err)
	}
	i := slices.IndexFunc(probes, func(p usdt.Probe) bool { return p.FullName() == "kinst:tick" })
	if i < 0 {
		b.Fatal("the target has no kinst:tick")
	}
	site := fmt.Sprintf("uprobe:%s:%#x", bin, probes[i].Addr)
	tick := "usdt:" + bin + ":kinst:tick"
	// The target's CPU time, user and system, is what a hit costs it;
	// wall time would add whatever else the machine runs meanwhile.
	run := func(rounds int) time.Duration {
		cmd := exec.Command(bin, "usdt", fmt.Sprint(rounds))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("target: %v\n%s", err, out)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	cases := []struct{ name, prog string }{
		{"uprobe-count", site + " { @ = count(); }"},
		{"usdt-count", tick + " { @ = count(); }"},
		{"uprobe-2regs", site + ` { @ = sum(reg("dx") + reg("cx")); }`},
		{"usdt-3args", tick + " { @ = sum(arg0 + arg1 + arg2); }"},
	}
	cost := map[string]float64{}
	for n := 0; n < b.N; n++ {
		bare := run(hitsPerRun) - run(0)
		for _, c := range cases {
			stop := startKinst(b, "-e", c.prog)
			traced := run(hitsPerRun) - run(0)
			stop()
			cost[c.name] += float64(traced-bare) / hitsPerRun / float64(b.N)
		}
	}
	for _, c := range cases {
		b.ReportMetric(cost[c.name], c.name+"-ns/hit")
	}
}
