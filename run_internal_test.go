package kinst

import (
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

// TestBuffering reads each of -B's arguments and expects the mode the
// runtime is then given.
func TestBuffering(t *testing.T) {
	tests := []struct {
		arg     string
		want    Buffering
		session session.Buffering
	}{
		{"", BufferDrained, session.BufferDrained},
		{"line", BufferLine, session.BufferLine},
		{"full", BufferFull, session.BufferFull},
		{"none", BufferNone, session.BufferNone},
	}
	for _, tt := range tests {
		b, err := ParseBuffering(tt.arg)
		if err != nil || b != tt.want || b.session() != tt.session {
			t.Errorf("ParseBuffering(%q) = %v (%v), %v; want %v (%v)", tt.arg, b, b.session(), err, tt.want, tt.session)
		}
	}
	const want = `-B must be either 'line', 'full', or 'none', not "lines"`
	if _, err := ParseBuffering("lines"); err == nil || err.Error() != want {
		t.Errorf("ParseBuffering(%q): got %v, want %s", "lines", err, want)
	}
}

// TestAPIError converts each error of the runtime that callers name and
// expects this package's type, with the same text, the same rendering
// for the command and the same cause.
func TestAPIError(t *testing.T) {
	f := syntax.NewFile("v.bt", []byte("BEGIN {\n\t$i = 0; while ($i < 9) { $i++ }\n}\n"))
	cause := fmt.Errorf("load program: %w", unix.EINVAL)
	loop := &session.VerifierError{
		Err: &syntax.Error{File: f, Pos: f.Pos(17), End: f.Pos(22),
			Msg: "the kernel verifier rejected probe BEGIN: the verifier cannot prove this loop ends"},
		Log:   []string{"0: (b7) r1 = 0", "back-edge from insn 7 to 2"},
		Cause: cause,
	}
	tests := []struct {
		err  error
		want error
	}{
		{&session.ExitError{Code: 3}, &ExitError{Code: 3}},
		{&session.InterruptError{Signal: syscall.SIGINT}, &InterruptError{Signal: syscall.SIGINT}},
		{&session.FileLimitError{Probes: 900, Limit: 256}, &FileLimitError{Probes: 900, Limit: 256}},
		{loop, &VerifierError{File: "v.bt", Line: 2, Column: 10, Msg: loop.Err.Msg, Log: loop.Log, Err: cause, session: loop}},
		{cause, cause},
	}
	for _, tt := range tests {
		got := apiError(tt.err)
		if !reflect.DeepEqual(got, tt.want) || got.Error() != tt.err.Error() || errors.Unwrap(got) != errors.Unwrap(tt.err) {
			t.Errorf("apiError(%#v) = %#v (%q, unwrapping to %v), want %#v (%q)", tt.err, got, got, errors.Unwrap(got), tt.want, tt.err)
		}
	}
	ve := apiError(loop).(*VerifierError)
	for _, verbose := range []bool{false, true} {
		if got, want := ve.Detail(verbose), loop.Detail(verbose); got != want {
			t.Errorf("Detail(%v) = %q, want %q", verbose, got, want)
		}
	}
	// One the caller made has no source to quote.
	mine := &VerifierError{File: "v.bt", Line: 2, Column: 10, Msg: "refused", Log: []string{"why"}}
	const want = "v.bt:2:10: refused\nverifier log (last lines):\n  why"
	if got := mine.Detail(true); got != want {
		t.Errorf("Detail(true) of a VerifierError made by hand = %q, want %q", got, want)
	}
	if !errors.Is(apiError(&session.FileLimitError{}), unix.EMFILE) || !errors.Is(ve, unix.EINVAL) {
		t.Error("the errors do not match their causes")
	}
}
