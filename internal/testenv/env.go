package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kinst.dev/kinst/internal/vm"
)

// Root skips t unless the test runs as root, which loading BPF programs and
// reading the kernel's tracing files need.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to load BPF programs)")
	}
}

// InGuest reports whether the process runs inside a bench guest of package
// vm, which marks the guest kernel's command line.
func InGuest() bool {
	cmdline, err := os.ReadFile("/proc/cmdline")
	return err == nil && containsWord(string(cmdline), vm.GuestMarker)
}

func containsWord(s, word string) bool {
	for _, w := range strings.Fields(s) {
		if w == word {
			return true
		}
	}
	return false
}

// KinstPackage is the main package Kinst builds.
const KinstPackage = "./cmd/kinst"

// WorkloadPackage is the main package Workload builds.
const WorkloadPackage = "./internal/workload"

// Kinst returns the path of a kinst binary for t to run: $KINST_BINARY if it
// names an existing file; else, where a go command is on PATH, ./cmd/kinst
// built once per test binary (see Build); else kinst found on PATH, as in a
// guest that was given it with vmrun --file. It fails t if there is none.
func Kinst(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KINST_BINARY"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return program(t, KinstPackage, "kinst")
}

// Workload returns the path of the workload command, built or found as
// Kinst finds kinst.
func Workload(t testing.TB) string {
	t.Helper()
	return program(t, WorkloadPackage, "workload")
}

// program builds pkg where a go command exists, and otherwise looks name
// up on PATH, where vmrun --file puts it in a guest.
func program(t testing.TB, pkg, name string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err == nil {
		return Build(t, pkg)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("no %s binary: put go on PATH, or pass it to vmrun with --file (%v)", name, err)
	}
	return p
}

var builds struct {
	sync.Mutex
	done map[string]buildResult
}

type buildResult struct {
	path string
	err  error
}

// Build builds the main package pkg, a path relative to the module root such
// as "./cmd/kinst", once per test binary, and returns the binary's path. The
// binary is static (CGO_ENABLED=0), so it can also be packed into a guest. It
// lands in .cache/testbin at the module root, renamed into place so that test
// binaries building it at the same time do not disturb each other. Build
// skips t where no go command is available (inside a guest) and fails it if
// the build fails.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("building %s needs the go command: %v", pkg, err)
	}
	builds.Lock()
	defer builds.Unlock()
	r, ok := builds.done[pkg]
	if !ok {
		r.path, r.err = build(goCmd, pkg)
		if builds.done == nil {
			builds.done = map[string]buildResult{}
		}
		builds.done[pkg] = r
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.path
}

func build(goCmd, pkg string) (string, error) {
	root, err := vm.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	dir := filepath.Join(root, ".cache", "testbin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	name := strings.ReplaceAll(filepath.Clean(pkg), "/", "_")
	out := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command(goCmd, "build", "-o", tmp.Name(), pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	return out, nil
}

// Busybox returns the path of a busybox binary, for tests whose workload runs
// commands such as "busybox cat FILE"; it skips t where there is none.
func Busybox(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("busybox")
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("busybox not found: install it with apt-get install busybox-static (or pass it to vmrun with --file)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// GuestKernel returns a kernel of series ("6.1" or "6.12") for a test that
// boots guests itself, fetching it if it is not cached. It skips t inside a
// guest, where nested emulation would take minutes, where QEMU is not
// installed, and where no kernel can be had (no apt index, no network), so
// that host-only tests still run there.
func GuestKernel(t testing.TB, series string) vm.Kernel {
	t.Helper()
	if InGuest() {
		t.Skip("boots guests only from the host, not nested inside a guest")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip(vm.ErrNoQEMU)
	}
	k, err := vm.Resolve(t.Context(), vm.CacheDir(), series)
	if err != nil {
		t.Skipf("no kernel to boot: %v", err)
	}
	return k
}

// ProcessesMentioning returns the IDs of the processes whose command line
// contains s, for tests that check that nothing was left running: give the
// child a private TMPDIR and look for it.
func ProcessesMentioning(s string) []string {
	var pids []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		cmdline, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}
