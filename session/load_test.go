package session_test

import (
	"errors"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/session"
)

// TestVerifierRejection loads a loop the verifier cannot bound: the
// error names the probe, points at the loop, and says what went wrong.
func TestVerifierRejection(t *testing.T) {
	testenv.Root(t)
	src := "BEGIN { $i = 0; while ($i < 100000000) { $i = $i + nsecs % 2; } exit(); }"
	// The messages name probes as bpftrace 0.17 does.
	out, err := pipeline.Compile("-e", []byte(src), &pipeline.Options{Compat: compat.V017})
	if err != nil {
		t.Fatal(err)
	}
	err = session.Load(out, &session.Options{})
	var ve *session.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a VerifierError", err)
	}
	// The verifier's refusal comes with the kernel's errno.
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("%v does not wrap EINVAL", err)
	}
	want := "-e:1:17: the kernel verifier rejected probe BEGIN: this loop may never end: the verifier cannot see its condition become false (infinite loop detected at insn "
	if got := ve.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s…", got, want)
	}
	if d := ve.Detail(true); !strings.Contains(d, "verifier log (last lines):") || !strings.Contains(d, "\n"+src+"\n") {
		t.Errorf("verbose detail lacks the source line or the log:\n%s", d)
	}
}

// TestVerifierComplexity loads loops the verifier gives up on: the error
// points at the loop, says why in the script's terms and what to do,
// and keeps the log for -v, also where the kernel's errno is the EFAULT
// of a path of too many branches, whose log the loader drops.
func TestVerifierComplexity(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		name, src string
		// The kernel's errno: a path of too many branches is an EFAULT
		// on 6.1 and 6.18, an E2BIG on Debian's 6.12.
		errnos []unix.Errno
		want   string // the error and its source line with the caret
		log    string // the log's line that says why
	}{
		{"while bounded by a map value", "BEGIN { @a = 100000; $i = 0; while ($i < @a) { $i++; } }", []unix.Errno{unix.EFAULT, unix.E2BIG},
			"-e:1:30: the kernel verifier rejected probe BEGIN: the verifier cannot prove this loop ends: bound it by a constant, or unroll it (The sequence of 8193 jumps is too complex.)\n" +
				"BEGIN { @a = 100000; $i = 0; while ($i < @a) { $i++; } }\n" +
				"                             ^~~~~",
			"The sequence of 8193 jumps is too complex."},
		// Reloaded for its log, a program with a loop's callback keeps
		// the BTF of its functions, without which the kernel refuses it
		// for that instead ("missing btf func_info").
		{"while beside a loop over a map", "BEGIN { @m[1] = 1; for ($kv : @m) { } @a = 100000; $i = 0; while ($i < @a) { $i++; } }", []unix.Errno{unix.EFAULT, unix.E2BIG},
			"-e:1:60: the kernel verifier rejected probe BEGIN: the verifier cannot prove this loop ends: bound it by a constant, or unroll it (The sequence of 8193 jumps is too complex.)\n" +
				"BEGIN { @m[1] = 1; for ($kv : @m) { } @a = 100000; $i = 0; while ($i < @a) { $i++; } }\n" +
				"                                                           ^~~~~",
			"The sequence of 8193 jumps is too complex."},
		{"while of a million rounds", "BEGIN { $i = 0; while ($i < 1000000) { $i++; } }", []unix.Errno{unix.E2BIG},
			"-e:1:17: the kernel verifier rejected probe BEGIN: the program is too complex for the verifier: a loop runs too many rounds or branches on values it cannot follow; bound the loop by a smaller constant, or unroll it (BPF program is too large. Processed 1000001 insn)\n" +
				"BEGIN { $i = 0; while ($i < 1000000) { $i++; } }\n" +
				"                ^~~~~",
			"BPF program is too large. Processed 1000001 insn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := pipeline.Compile("-e", []byte(tc.src), &pipeline.Options{Compat: compat.V017})
			if err != nil {
				t.Fatal(err)
			}
			err = session.Load(out, &session.Options{})
			var ve *session.VerifierError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a VerifierError", err)
			}
			if !slices.ContainsFunc(tc.errnos, func(e unix.Errno) bool { return errors.Is(err, e) }) {
				t.Errorf("%v (%v) wraps none of %v", err, ve.Cause, tc.errnos)
			}
			if got := ve.Detail(false); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if d := ve.Detail(true); !strings.HasPrefix(d, tc.want+"\nverifier log (last lines):\n") || !strings.Contains(d, "\n  "+tc.log+"\n") {
				t.Errorf("verbose detail lacks the log's reason %q:\n%s", tc.log, d)
			}
		})
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
		done <- session.Load(out, &session.Options{})
	}()
	err = <-done
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("got %v, want an error wrapping EPERM", err)
	}
}
