package vm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/internal/vm"
	"kinst.dev/kinst/internal/vm/guestinit"
)

// The test binary is also the guests' /init: vm.Run packs the running
// executable when Config.Init is empty.
func TestMain(m *testing.M) {
	if guestinit.IsInit() {
		guestinit.Main()
	}
	os.Exit(m.Run())
}

// helperMode tells TestGuestHelper, run inside a guest, what to do.
const helperMode = "KINST_VMTEST_MODE"

// TestGuestHelper is the guest side of the boot tests: they run this test
// binary in a guest with -test.run=^TestGuestHelper$ and a mode.
func TestGuestHelper(t *testing.T) {
	mode := os.Getenv(helperMode)
	if mode == "" {
		t.Skip("runs only inside a guest started by the boot tests")
	}
	switch mode {
	case "pass":
		fmt.Println("guest says hello")
	case "fail":
		t.Error("deliberate failure")
	case "exit":
		os.Exit(7)
	case "panic":
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
			t.Fatal(err)
		}
	case "hang":
		fmt.Println("hanging")
		time.Sleep(time.Hour)
	case "oom":
		var hoard [][]byte
		for {
			chunk := make([]byte, 64<<20)
			for i := 0; i < len(chunk); i += 4096 {
				chunk[i] = 1
			}
			hoard = append(hoard, chunk)
		}
	case "files":
		wd, _ := os.Getwd()
		fmt.Println("wd", wd)
		for _, f := range []string{filepath.Join(vm.GuestBinDir, "greeting"), "testdata/data.txt", "source.go"} {
			data, err := os.ReadFile(f)
			fmt.Printf("%s: %q %v\n", f, data, err)
		}
		_, err := os.Stat("big.bin")
		fmt.Println("big.bin:", err)
		fmt.Println("PATH", os.Getenv("PATH"))
		fmt.Println("HOME", os.Getenv("HOME"))
		fmt.Println("secret", os.Getenv("VMTEST_SECRET"))
	default:
		t.Fatalf("unknown mode %q", mode)
	}
}

// kernel returns the kernel the boot tests use; 6.1 boots fastest under
// emulation.
func kernel(t *testing.T) vm.Kernel {
	t.Helper()
	return testenv.GuestKernel(t, "6.1")
}

type result struct {
	code   int
	err    error
	out    string
	tmp    string // TMPDIR during the run
	wall   time.Duration
	config vm.Config
}

// boot runs this test binary's TestGuestHelper in mode inside k.
func boot(t *testing.T, k vm.Kernel, mode string, edit func(*vm.Config)) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg := vm.Config{
		Kernel: k,
		Args:   []string{exe, "-test.run=^TestGuestHelper$", "-test.v"},
		Env:    []string{helperMode + "=" + mode},
		Stdout: &out,
	}
	if edit != nil {
		edit(&cfg)
	}
	// A private TMPDIR shows whether Run leaves files behind.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	code, err := vm.Run(t.Context(), cfg)
	r := result{code, err, out.String(), tmp, time.Since(start), cfg}
	t.Logf("mode %s: code %d, %v, in %v\n%s", mode, code, err, r.wall.Round(time.Millisecond), r.out)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Run left %d files in TMPDIR: %v", len(left), left)
	}
	if pids := testenv.ProcessesMentioning(tmp); len(pids) != 0 {
		t.Errorf("processes still running with files in %s: %v", tmp, pids)
	}
	if strings.Contains(r.out, "\r") {
		t.Errorf("output has carriage returns: %q", r.out)
	}
	return r
}

func TestRunPassingTest(t *testing.T) {
	r := boot(t, kernel(t), "pass", nil)
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v; want 0, nil", r.code, r.err)
	}
	for _, want := range []string{"=== RUN   TestGuestHelper\n", "guest says hello\n", "--- PASS: TestGuestHelper", "\nPASS\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunFailingTest(t *testing.T) {
	r := boot(t, kernel(t), "fail", nil)
	if r.err != nil || r.code != 1 {
		t.Fatalf("Run = %d, %v; want 1, nil", r.code, r.err)
	}
	for _, want := range []string{"deliberate failure\n", "--- FAIL: TestGuestHelper", "\nFAIL\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunExitCode(t *testing.T) {
	r := boot(t, kernel(t), "exit", nil)
	if r.err != nil || r.code != 7 {
		t.Fatalf("Run = %d, %v; want 7, nil", r.code, r.err)
	}
}

func TestRunKernelPanic(t *testing.T) {
	r := boot(t, kernel(t), "panic", nil)
	var ge *vm.GuestError
	if !errors.Is(r.err, vm.ErrPanic) || !errors.As(r.err, &ge) || r.code != -1 {
		t.Fatalf("Run = %d, %v; want -1 and ErrPanic", r.code, r.err)
	}
	if !strings.Contains(strings.Join(ge.Log, "\n"), "Kernel panic - not syncing: sysrq triggered crash") {
		t.Errorf("kernel lines lack the panic:\n%s", strings.Join(ge.Log, "\n"))
	}
}

func TestRunTimeout(t *testing.T) {
	const timeout = 20 * time.Second
	r := boot(t, kernel(t), "hang", func(c *vm.Config) { c.Timeout = timeout })
	var ge *vm.GuestError
	if !errors.Is(r.err, vm.ErrTimeout) || !errors.As(r.err, &ge) || r.code != -1 {
		t.Fatalf("Run = %d, %v; want -1 and ErrTimeout", r.code, r.err)
	}
	if ge.Detail != "no exit after 20s" || len(ge.Log) == 0 {
		t.Errorf("timeout error: %q with %d kernel lines", ge.Detail, len(ge.Log))
	}
	if !strings.Contains(r.out, "hanging\n") {
		t.Errorf("output before the hang was lost: %q", r.out)
	}
	if r.wall > timeout+10*time.Second {
		t.Errorf("Run took %v with a %v timeout", r.wall, timeout)
	}
}

func TestRunOutOfMemory(t *testing.T) {
	r := boot(t, kernel(t), "oom", nil)
	var ge *vm.GuestError
	if !errors.Is(r.err, vm.ErrKilled) || !errors.As(r.err, &ge) || r.code != 128+9 {
		t.Fatalf("Run = %d, %v; want 137 and ErrKilled", r.code, r.err)
	}
	if !strings.HasPrefix(ge.Detail, "signal 9 (killed), ") || !strings.Contains(ge.Detail, "Out of memory: Killed process") {
		t.Errorf("detail %q does not name the OOM killer", ge.Detail)
	}
}

func TestRunFilesDirAndEnv(t *testing.T) {
	k := kernel(t)
	host := t.TempDir()
	greeting := filepath.Join(host, "greeting")
	if err := os.WriteFile(greeting, []byte("hi from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(host, "pkg")
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", "data.txt"), []byte("test data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "source.go"), []byte("package pkg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, vm.MaxDirFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	r := boot(t, k, "files", func(c *vm.Config) {
		c.Files = []string{greeting}
		c.Dir = dir
		c.Env = append(c.Env, "VMTEST_SECRET=42")
	})
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v; want 0, nil", r.code, r.err)
	}
	for _, want := range []string{
		"wd " + dir + "\n",
		`/vmrun/bin/greeting: "hi from the host" <nil>` + "\n",
		`testdata/data.txt: "test data" <nil>` + "\n",
		`source.go: "package pkg\n" <nil>` + "\n",
		"big.bin: stat big.bin: no such file or directory\n",
		"PATH " + vm.GuestPATH + "\n",
		"HOME /root\n",
		"secret 42\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunBusyboxApplets(t *testing.T) {
	k := kernel(t)
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not found: install it with apt-get install busybox-static")
	}
	var out bytes.Buffer
	code, err := vm.Run(t.Context(), vm.Config{
		Kernel: k,
		Files:  []string{bb},
		Args:   []string{"sh", "-c", "cat /etc/hostname; echo $((6*7)) >&2; ls /bin/sh; exit 3"},
		Stdout: &out,
	})
	if err != nil || code != 3 {
		t.Fatalf("Run = %d, %v; want 3, nil", code, err)
	}
	if want := "vmrun\n42\n/bin/sh\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

func TestRunMissingCommand(t *testing.T) {
	var out bytes.Buffer
	code, err := vm.Run(t.Context(), vm.Config{Kernel: kernel(t), Args: []string{"no-such-command"}, Stdout: &out})
	if err != nil || code != 127 {
		t.Fatalf("Run = %d, %v; want 127, nil", code, err)
	}
	if want := "vmrun: exec: \"no-such-command\": executable file not found in $PATH\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

func TestRunRefusesDynamicBinary(t *testing.T) {
	k := kernel(t)
	code, err := vm.Run(t.Context(), vm.Config{Kernel: k, Args: []string{"/bin/true"}})
	want := "pack initramfs: /bin/true is dynamically linked (interpreter /lib64/ld-linux-x86-64.so.2) and the guest has no shared libraries: build it with CGO_ENABLED=0"
	if err == nil || err.Error() != want || code != -1 {
		t.Errorf("Run = %d, %v; want -1, %s", code, err, want)
	}
}

func TestRunWithoutQEMU(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, err := vm.Run(t.Context(), vm.Config{Args: []string{"true"}})
	if !errors.Is(err, vm.ErrNoQEMU) || code != -1 {
		t.Fatalf("Run = %d, %v; want ErrNoQEMU", code, err)
	}
	if err.Error() != "qemu-system-x86_64 not found: install it with apt-get install qemu-system-x86" {
		t.Errorf("message %q", err)
	}
}

// TestProbeKVM boots once under KVM where /dev/kvm exists; either answer is
// fine, but it must come quickly and leave nothing behind.
func TestProbeKVM(t *testing.T) {
	k := kernel(t)
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Skip("no /dev/kvm")
	}
	start := time.Now()
	err := vm.ProbeKVM(t.Context(), vm.Config{Kernel: k})
	t.Logf("KVM probe: %v after %v", err, time.Since(start).Round(time.Millisecond))
	if time.Since(start) > 45*time.Second {
		t.Errorf("KVM probe took %v", time.Since(start))
	}
	accel, err2 := vm.ChooseAccel(t.Context(), vm.Config{Kernel: k, Accel: vm.Auto})
	switch {
	case err2 != nil:
		t.Errorf("ChooseAccel(auto): %v", err2)
	case err == nil && accel != vm.KVM, err != nil && accel != vm.TCG:
		t.Errorf("ChooseAccel(auto) = %s after a probe that said %v", accel, err)
	}
}
