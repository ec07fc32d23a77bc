package kinst_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestOutsideModule builds internal/apitest, a program in a module of
// its own that imports this one as any other program does, and runs it:
// it stops a run from its handler, bounds a slow handler's backlog with
// StopContext, cancels a run's context, logs records and has core()
// write a core file that gdb reads, each against the live kernel, and
// says PASS or FAIL for each.
func TestOutsideModule(t *testing.T) {
	testenv.Root(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("building internal/apitest needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "apitest")
	build := exec.Command(goCmd, "build", "-o", bin, ".")
	build.Dir = filepath.Join("internal", "apitest")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build internal/apitest: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	want := "PASS stop in handler\nPASS stop context\nPASS context error\nPASS record strings\nPASS core file\n"
	if err != nil || string(out) != want {
		t.Errorf("apitest: %v\n%s\nwant:\n%s", err, out, want)
	}
}
