package instruments_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// kinst runs kinst and returns its stdout, stderr and exit status.
func kinst(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.Kinst(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// openStatus opens path n times through the workload, whose exit status
// is the errno of a failed open.
func openStatus(t *testing.T, path string) int {
	t.Helper()
	err := exec.Command(testenv.Workload(t), "open", "3", path).Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return 0
}

func tempFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNullify makes the opens of one process fail with EACCES while
// another process opens the same file, then kills kinst with SIGKILL:
// the kernel detaches the program with the process, and opens work again.
func TestNullify(t *testing.T) {
	testenv.Require(t, testenv.FmodRet)
	path := tempFile(t, "f")
	if got := openStatus(t, path); got != 0 {
		t.Fatalf("before nullify, open failed with errno %d", got)
	}
	cmd, stdout, _ := startAttached(t, 1, "nullify", "security_file_open", "--return", "-13", "--comm", "workload", "--unsafe")
	if got := openStatus(t, path); got != int(syscall.EACCES) {
		t.Errorf("nullified open failed with errno %d, want %d", got, syscall.EACCES)
	}
	// Another process is not filtered in and opens normally.
	if out, err := exec.Command(testenv.Busybox(t), "cat", path).CombinedOutput(); err != nil || string(out) != "x" {
		t.Errorf("busybox cat under nullify: %v %q", err, out)
	}
	// The log reaches stdout from the ring buffer after the calls
	// returned: wait for it before the kill that would lose it.
	out := stdout.waitFor("workload: security_file_open returned -13", 3)
	cmd.Process.Kill()
	cmd.Wait()
	if got := openStatus(t, path); got != 0 {
		t.Errorf("after kinst was killed, open failed with errno %d", got)
	}
	if strings.Count(out, "workload: security_file_open returned -13") < 3 {
		t.Errorf("expected at least 3 nullified calls logged, got:\n%s", out)
	}
}

// TestNullifyCount counts exactly the calls nullified with -q, chosen
// by an expression on the typed arguments.
func TestNullifyCount(t *testing.T) {
	testenv.Require(t, testenv.FmodRet)
	path := tempFile(t, "secret")
	const n = 25
	stdout, stderr, code := kinst(t, "nullify", "security_file_open", "--return", "-1", "--unsafe", "-q",
		"--if", `str(args.file->f_path.dentry->d_name.name) == "secret"`,
		"-c", fmt.Sprintf("%s open %d %s", testenv.Workload(t), n, path))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if want := fmt.Sprintf("security_file_open: %d calls nullified\n", n); stdout != want {
		t.Errorf("got %q, want %q", stdout, want)
	}
}

// TestNullifyCommand nullifies every open of a -c command and of the
// programs it runs, but not the opens that start them: the shell and
// each cat it runs must start, and each cat's open fail.
func TestNullifyCommand(t *testing.T) {
	testenv.Require(t, testenv.FmodRet)
	path := tempFile(t, "f")
	bb := testenv.Busybox(t)
	script := fmt.Sprintf("%s cat %s; %s cat %s", bb, path, bb, path)
	stdout, stderr, code := kinst(t, "nullify", "security_file_open", "--return", "-13", "--unsafe", "-q",
		"-c", fmt.Sprintf("%s sh -c %q", bb, script))
	denied := fmt.Sprintf("cat: can't open '%s': Permission denied\n", path)
	if code != 0 || stderr != denied+denied {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if want := "security_file_open: 2 calls nullified\n"; stdout != want {
		t.Errorf("got %q, want %q", stdout, want)
	}
	// The family is the command's: others open as before.
	if got := openStatus(t, path); got != 0 {
		t.Errorf("after the run, open failed with errno %d", got)
	}
}

// TestOverrideInLanguage writes the replacement in kinst's language.
func TestOverrideInLanguage(t *testing.T) {
	testenv.Require(t, testenv.FmodRet)
	path := tempFile(t, "secret")
	prog := `fmod_ret:security_file_open /str(args.file->f_path.dentry->d_name.name) == "secret"/ { override(-1); @denied[comm] = count(); }`
	stdout, stderr, code := kinst(t, "--unsafe", "-e", prog, "-c", fmt.Sprintf("%s open 4 %s", testenv.Workload(t), path))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "@denied[workload]: 4\n") {
		t.Errorf("got\n%s", stdout)
	}
	_, stderr, code = kinst(t, "-e", prog)
	if code != 1 || !strings.Contains(stderr, "override() changes the system it runs on: run kinst with --unsafe to allow it") {
		t.Errorf("without --unsafe: exit %d\n%s", code, stderr)
	}
}

// TestNullifyRefusals checks the one-sentence refusals.
func TestNullifyRefusals(t *testing.T) {
	testenv.Root(t)
	fmodRet := kernel.Probe(kernel.FeatFmodRet)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"security_file_open", "--return", "-1"}, 1, "kinst: nullify changes what the kernel does: run it with --unsafe\n"},
		{[]string{"security_file_open", "--return", "0", "--unsafe"}, 1, "kinst: nullify cannot return 0: to BPF a zero return value means \"run the function\"; return an error code such as -1 (EPERM) instead\n"},
		{[]string{"security_file_open", "--unsafe"}, 2, "kinst nullify: --return VALUE is required: what the function returns instead\n"},
		{[]string{"security_file_open", "--return", "x", "--unsafe"}, 2, "kinst nullify: --return \"x\" is not an integer\n"},
	}
	if fmodRet.Available {
		tests = append(tests,
			struct {
				args []string
				code int
				want string
			}{[]string{"vfs_read", "--return", "-1", "--unsafe"}, 1, "kinst: cannot nullify vfs_read: BPF may replace the return value only of security_* hooks and of functions marked for error injection, and vfs_read is neither\n"},
			struct {
				args []string
				code int
				want string
			}{[]string{"security_file_open", "--return", "5000000000", "--unsafe"}, 1, "kinst: --return 5000000000 does not fit security_file_open's return type int (-2147483648 to 2147483647)\n"},
		)
	} else {
		tests = append(tests, struct {
			args []string
			code int
			want string
		}{[]string{"security_file_open", "--return", "-1", "--unsafe"}, 1, "kinst: cannot nullify security_file_open: " + fmodRet.Reason + "\n"})
	}
	for _, tt := range tests {
		_, stderr, code := kinst(t, append([]string{"nullify"}, tt.args...)...)
		if code != tt.code || stderr != tt.want {
			t.Errorf("nullify %q: exit %d, stderr %q; want %d, %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
