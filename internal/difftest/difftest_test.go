package difftest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

// runTimeout bounds one run of one tool; the slowest corpus program takes
// well under a second.
const runTimeout = 60 * time.Second

// reference is the bpftrace release whose output kinst reproduces.
var reference = regexp.MustCompile(`^bpftrace v0\.17\.`)

func corpus(t *testing.T) []*Program {
	t.Helper()
	progs, err := Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return progs
}

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// result is what one run of a tool left behind.
type result struct {
	stdout, stderr []byte
	err            error
}

func run(ctx context.Context, tool string, argv, env []string) result {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, argv...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w after %v", ctx.Err(), runTimeout)
	}
	return result{stdout.Bytes(), stderr.Bytes(), err}
}

// TestDifferential runs every corpus program under bpftrace 0.17 and kinst
// and requires byte-identical standard output, the "Attaching N probes..."
// line aside, and success from both.
func TestDifferential(t *testing.T) {
	if testenv.InGuest() {
		t.Skip("bpftrace is not installed in the bench guests; the host runs this comparison")
	}
	testenv.Root(t)
	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Skipf("bpftrace not found (apt-get install bpftrace gives 0.17 on Debian 12): %v", err)
	}
	version, err := exec.Command(bpftrace, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bpftrace, err)
	}
	if !reference.Match(version) {
		t.Skipf("%s is %s; the reference output is bpftrace 0.17's", bpftrace, strings.TrimSpace(string(version)))
	}
	kinst := testenv.Kinst(t)
	vars := map[string]string{
		"workload": testenv.Workload(t),
		"testdata": testdataDir(t),
	}
	for _, p := range corpus(t) {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			argv, err := p.Argv(vars)
			if err != nil {
				t.Fatal(err)
			}
			// The two runs share nothing (each program filters on its own
			// cpid), so they run at the same time.
			var want, got result
			var wg sync.WaitGroup
			wg.Go(func() { want = run(t.Context(), bpftrace, argv, p.Env) })
			// kinst follows 0.17 in its 0.17 mode.
			wg.Go(func() { got = run(t.Context(), kinst, argv, append([]string{"KINST_COMPAT=0.17"}, p.Env...)) })
			wg.Wait()
			if want.err != nil {
				t.Fatalf("bpftrace %s: %v\nstderr:\n%s", strings.Join(argv, " "), want.err, want.stderr)
			}
			if got.err != nil {
				t.Fatalf("kinst %s: %v\nstderr:\n%s", strings.Join(argv, " "), got.err, got.stderr)
			}
			if d := Diff(StripAttach(want.stdout), StripAttach(got.stdout)); d != "" {
				t.Errorf("%s (%s): output differs (- bpftrace 0.17, + kinst):\n%s", p.Name, p.Covers, d)
			}
		})
	}
}

// TestDryRun loads every corpus program into the kernel with kinst
// --dry-run, so that machines without bpftrace, the bench guests included,
// still prove that the verifier accepts the whole corpus.
func TestDryRun(t *testing.T) {
	testenv.Root(t)
	kinst := testenv.Kinst(t)
	// --dry-run splits the -c command but never starts it; uprobe
	// programs still need the workload's file to resolve their targets.
	vars := map[string]string{
		"workload": testenv.Workload(t),
		"testdata": testdataDir(t),
	}
	for _, p := range corpus(t) {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			argv, err := p.Argv(vars)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t.Context(), kinst, append([]string{"--dry-run"}, argv...), p.Env)
			if r.err != nil {
				t.Fatalf("kinst --dry-run %s: %v\nstderr:\n%s", strings.Join(argv, " "), r.err, r.stderr)
			}
			if len(r.stdout) != 0 {
				t.Errorf("kinst --dry-run printed %q; want nothing", r.stdout)
			}
		})
	}
}
