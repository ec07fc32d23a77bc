package hint_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/internal/hint"
	"kinst.dev/kinst/syntax"
)

// The hint of a listing goes right after the fact it is about, before
// what the checker added; --unsafe's ends the message.
func TestError(t *testing.T) {
	tp := &check.ListError{Err: errors.New("no matches for tracepoint a:b"), Pattern: "tracepoint:a:*", Listed: "the a tracepoints"}
	usdt := &check.ListError{Err: errors.New("no USDT probe matches p"), Pattern: "usdt:*", Pid: 42, Listed: "them"}
	for _, tt := range []struct {
		e    *syntax.Error
		want string
	}{
		{&syntax.Error{Msg: tp.Error() + "; left out of the probe", Err: check.NoTarget(tp), Severity: syntax.SeverityWarning},
			"warning: no matches for tracepoint a:b; kinst -l 'tracepoint:a:*' lists the a tracepoints; left out of the probe"},
		{&syntax.Error{Msg: usdt.Error(), Err: usdt},
			"no USDT probe matches p; kinst -lp 42 'usdt:*' lists them"},
		{&syntax.Error{Msg: "system() changes the system it runs on", Err: check.ErrUnsafe},
			"system() changes the system it runs on: run kinst with --unsafe to allow it"},
		{&syntax.Error{Msg: "plain"}, "plain"},
	} {
		if got := hint.Error(tt.e).Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	if got, want := hint.Text(fmt.Errorf("trace x: %w", tp)), "trace x: no matches for tracepoint a:b; kinst -l 'tracepoint:a:*' lists the a tracepoints"; got != want {
		t.Errorf("Text: got %q, want %q", got, want)
	}
}

// A warning with no place in the source reads as kinst's own.
func TestWarn(t *testing.T) {
	var b strings.Builder
	hint.Warn(&b)(&syntax.Error{Msg: "<x.h> not found", Severity: syntax.SeverityWarning})
	if want := "kinst: warning: <x.h> not found\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
