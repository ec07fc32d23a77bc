package runtime_test

import (
	"errors"
	goruntime "runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/runtime"
)

// TestVerifierRejection loads a loop the verifier cannot bound: the
// error names the probe, points at the loop, and says what went wrong.
func TestVerifierRejection(t *testing.T) {
	testenv.Root(t)
	src := "BEGIN { $i = 0; while ($i < 100000000) { $i = $i + nsecs % 2; } exit(); }"
	out, err := pipeline.Compile("-e", []byte(src), &pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = runtime.Load(out, &runtime.Options{})
	var ve *runtime.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a VerifierError", err)
	}
	// The verifier's refusal comes with the kernel's errno.
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("%v does not wrap EINVAL", err)
	}
	want := "-e:1:24: the kernel verifier rejected probe BEGIN: this loop may never end: the verifier cannot see its condition become false (infinite loop detected at insn "
	if got := ve.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s…", got, want)
	}
	if d := ve.Detail(true); !strings.Contains(d, "verifier log (last lines):") || !strings.Contains(d, "\n"+src+"\n") {
		t.Errorf("verbose detail lacks the source line or the log:\n%s", d)
	}
}

// TestLoadErrno loads a program on a thread without its capabilities:
// the error wraps the kernel's EPERM, which errors.Is finds.
func TestLoadErrno(t *testing.T) {
	testenv.Root(t)
	out, err := pipeline.Compile("-e", []byte("BEGIN { @x = 1; exit() }"), &pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		// Capabilities belong to a thread: this goroutine's is dropped,
		// never unlocked, and so ends with it.
		goruntime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var caps [2]unix.CapUserData
		if err := unix.Capget(&hdr, &caps[0]); err != nil {
			done <- err
			return
		}
		caps[0].Effective, caps[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &caps[0]); err != nil {
			done <- err
			return
		}
		done <- runtime.Load(out, &runtime.Options{})
	}()
	err = <-done
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("got %v, want an error wrapping EPERM", err)
	}
}
