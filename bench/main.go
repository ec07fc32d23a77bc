package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	childMain()
	os.Exit(mainBench(os.Args[1:], os.Stdout, os.Stderr))
}

// childMain runs the -c helper and exits when the arguments ask for it.
func childMain() {
	if len(os.Args) < 2 || os.Args[1] != childArg {
		return
	}
	if err := runChild(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "bench child: %v\n", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// items are the measurements in the order they run; -run picks some.
// An item marked long runs only when -run names it.
var items = []struct {
	name    string
	measure func(*bench) []*row
	long    bool
}{
	{"size", (*bench).sizes, false},
	{"begin", (*bench).begin, false},
	{"header", (*bench).header, false},
	{"tracepoint", (*bench).tracepoint, false},
	{"latency", (*bench).latency, false},
	{"event", (*bench).perEvent, false},
	{"printf", (*bench).printf, false},
	{"soak", (*bench).soak, true},
	{"syscalls", (*bench).syscalls, true},
	{"probes", (*bench).probes, true},
	{"bigmap", (*bench).bigmap, true},
}

func mainBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		short        = fs.Bool("short", false, "a quick run: 5 repetitions and smaller workloads")
		reps         = fs.Int("n", 0, "repetitions per tool and item (default 20, 5 with -short)")
		only         = fs.String("run", "", "comma-separated items to measure: "+itemNames()+" (default all but soak, syscalls, probes and bigmap)")
		kinstPath    = fs.String("kinst", "", "kinst binary (default bin/kinst at the module root, built if absent)")
		bpftracePath = fs.String("bpftrace", "", `bpftrace binary (default bpftrace on PATH; "none" measures kinst alone)`)
		workload     = fs.String("workload", "", "workload binary (default bin/workload at the module root, built if absent)")
		events       = fs.Int("events", 0, "getppid calls for the cost per event (default 2000000, 500000 with -short)")
		printfEvents = fs.Int("printf-events", 0, "getppid calls for printf throughput (default 1000000, 100000 with -short)")
		soakTime     = fs.Duration("soak", 0, "how long each tool runs in the soak item (default 10m, 1m with -short)")
		soakRate     = fs.Int("soak-rate", 1_000_000, "getppid calls a second in the soak item")
		timeout      = fs.Duration("timeout", 2*time.Minute, "longest a single run may take (the soak item's runs: this beyond -soak)")
		verbose      = fs.Bool("v", false, "log every run's figures to standard error")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	setDefault(reps, *short, 20, 5)
	setDefault(events, *short, 2_000_000, 500_000)
	// A million printf records is five times what kinst's 8 MiB ring
	// buffer holds, so the rate is one the reader sustains.
	setDefault(printfEvents, *short, 1_000_000, 100_000)
	selected, err := selectItems(*only)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	switch {
	case *soakTime != 0:
	case *short:
		*soakTime = time.Minute
	default:
		*soakTime = 10 * time.Minute
	}
	if *reps < 1 || *events < 1 || *printfEvents < 1 || *soakRate < 1 || *soakTime < time.Second {
		fmt.Fprintln(stderr, "bench: -n, -events, -printf-events and -soak-rate must be positive, -soak at least 1s")
		return 2
	}

	b, cleanup, err := setup(*kinstPath, *bpftracePath, *workload, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer cleanup()
	b.reps, b.events, b.printfEvents, b.verbose = *reps, *events, *printfEvents, *verbose
	b.soakTime, b.soakRate = *soakTime, *soakRate
	b.runner.timeout = *timeout

	fmt.Fprintln(stdout, header(b))
	loadBefore := loadAverage()
	var rows []*row
	for _, it := range items {
		if selected[it.name] {
			rows = append(rows, it.measure(b)...)
		}
	}
	fmt.Fprintln(stdout)
	if err := printTable(stdout, rows); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	b.note("load average (1 minute) %s before, %s after: other work on the machine widens the ranges", loadBefore, loadAverage())
	for _, n := range b.notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	for _, f := range b.failures {
		fmt.Fprintf(stdout, "FAILED: %s, %s, %d time(s): %v\n", f.item, f.actor, f.count, f.err)
	}
	if len(b.failures) > 0 {
		return 1
	}
	return 0
}

func setDefault(v *int, short bool, full, quick int) {
	switch {
	case *v != 0:
	case short:
		*v = quick
	default:
		*v = full
	}
}

func itemNames() string {
	var names []string
	for _, it := range items {
		names = append(names, it.name)
	}
	return strings.Join(names, ",")
}

func selectItems(list string) (map[string]bool, error) {
	sel := map[string]bool{}
	if list == "" {
		for _, it := range items {
			sel[it.name] = !it.long
		}
		return sel, nil
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, it := range items {
			found = found || it.name == name
		}
		if !found {
			return nil, fmt.Errorf("unknown item %q in -run: use %s", name, itemNames())
		}
		sel[name] = true
	}
	return sel, nil
}

// setup finds or builds the binaries and makes the scratch directory.
func setup(kinstPath, bpftracePath, workload string, log io.Writer) (*bench, func(), error) {
	if os.Geteuid() != 0 {
		return nil, nil, errors.New("needs root, to load BPF programs")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	if kinstPath == "" || workload == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, nil, err
		}
		if kinstPath == "" {
			if kinstPath, err = built(root, "bin/kinst", "./cmd/kinst", log); err != nil {
				return nil, nil, err
			}
		}
		if workload == "" {
			if workload, err = built(root, "bin/workload", "./internal/workload", log); err != nil {
				return nil, nil, err
			}
		}
	}
	b := &bench{
		tools:    map[string]string{},
		order:    []string{"kinst"},
		self:     self,
		workload: workload,
		comm:     comm(workload),
		log:      log,
	}
	if b.tools["kinst"], err = exec.LookPath(kinstPath); err != nil {
		return nil, nil, fmt.Errorf("kinst: %w", err)
	}
	switch bpftracePath {
	case "none":
	case "":
		if p, err := exec.LookPath("bpftrace"); err == nil {
			b.tools["bpftrace"] = p
			b.order = append(b.order, "bpftrace")
		} else {
			fmt.Fprintln(log, "bench: no bpftrace on PATH: measuring kinst alone")
		}
	default:
		p, err := exec.LookPath(bpftracePath)
		if err != nil {
			return nil, nil, fmt.Errorf("bpftrace: %w", err)
		}
		b.tools["bpftrace"] = p
		b.order = append(b.order, "bpftrace")
	}
	if b.tmp, err = os.MkdirTemp("", "kinst-bench"); err != nil {
		return nil, nil, err
	}
	// The tools split -c commands into words themselves.
	for _, p := range []string{b.self, b.workload, b.tmp} {
		if strings.ContainsAny(p, " \t\n'\"\\") {
			os.RemoveAll(b.tmp)
			return nil, nil, fmt.Errorf("path %q cannot go into a -c command", p)
		}
	}
	b.runner = &runner{clock: newClock(), tmp: b.tmp}
	return b, func() { os.RemoveAll(b.tmp) }, nil
}

// moduleRoot finds kinst's module root above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isKinstModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kinst module: give -kinst and -workload")
		}
		dir = parent
	}
}

func isKinstModule(gomod []byte) bool {
	sc := bufio.NewScanner(strings.NewReader(string(gomod)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return f[1] == "kinst.dev/kinst"
		}
	}
	return false
}

// built returns root/bin, building pkg into it when it is absent.
func built(root, bin, pkg string, log io.Writer) (string, error) {
	path := filepath.Join(root, bin)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	fmt.Fprintf(log, "bench: building %s\n", bin)
	args := []string{"build", "-o", path, pkg}
	if pkg == "./cmd/kinst" {
		// As make kinst builds it, released.
		args = []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", path, pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return path, nil
}

// comm is the name probes see for a process running path: the file's
// base name cut to the kernel's 15 bytes.
func comm(path string) string {
	c := filepath.Base(path)
	if len(c) > 15 {
		c = c[:15]
	}
	return c
}

// header says what was measured where.
func header(b *bench) string {
	var u unix.Utsname
	unix.Uname(&u)
	h := fmt.Sprintf("kinst bench: Linux %s, %d CPUs, %d repetitions, %d getppid calls per event run, %d per printf run\n",
		unix.ByteSliceToString(u.Release[:]), runtime.NumCPU(), b.reps, b.events, b.printfEvents)
	h += "kinst:    " + b.tools["kinst"]
	if p, ok := b.tools["bpftrace"]; ok {
		v, _ := exec.Command(p, "--version").Output()
		h += "\nbpftrace: " + p + " (" + strings.TrimSpace(string(v)) + ")"
	}
	return h
}

// loadAverage is the one-minute load average, or "?" where /proc has
// none.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
