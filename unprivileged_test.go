package kinst_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/internal/testenv"
)

// asNobody is set in the environment of the test binary run again as
// nobody by TestUnprivileged.
const asNobody = "KINST_TEST_AS_NOBODY"

// TestUnprivileged runs the test binary again as nobody: a tracepoint
// program's Compile matches unix.EACCES (tracefs is root's), and a
// program's Start matches unix.EPERM, each saying what is missing
// rather than that the tracepoint does not exist or that RLIMIT_MEMLOCK
// is too low.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(asNobody) != "" {
		unprivileged(t)
		return
	}
	testenv.Root(t)
	dir, err := os.MkdirTemp("", "kinst-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "kinst.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUnprivileged$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asNobody+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func unprivileged(t *testing.T) {
	const tp = `tracepoint:syscalls:sys_enter_openat { @ = count(); }`
	_, err := kinst.Compile("tp.bt", []byte(tp), nil)
	if !errors.Is(err, unix.EACCES) || err.Error() != "tp.bt:1:1: tracepoint syscalls:sys_enter_openat: permission denied: only root reads tracefs" {
		t.Errorf("Compile of a tracepoint as nobody: %v, want EACCES", err)
	}
	p, err := kinst.Compile("begin.bt", []byte(`begin { exit(); }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Start(context.Background(), nil)
	if !errors.Is(err, unix.EPERM) || err.Error() != "load: create maps: operation not permitted: kinst needs root, or CAP_BPF and CAP_PERFMON" {
		t.Errorf("Start as nobody: %v, want EPERM", err)
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
