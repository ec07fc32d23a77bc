// Package hint adds to the library's errors and warnings the kinst
// command's advice on getting past them, in the command's own terms:
// the listing that shows what exists ("kinst -l PATTERN"), the option
// that allows what was refused ("--unsafe"). The library says only what
// is wrong; the command and its instruments print through here.
package hint

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// Error returns e with the command's hint added to its message, or e
// itself when there is none.
func Error(e *syntax.Error) *syntax.Error {
	var le *check.ListError
	c := *e
	switch {
	case errors.As(e.Err, &le):
		// The fact may be followed by what the checker added
		// ("; left out of the probe"): the hint goes right after it.
		c.Msg = strings.Replace(c.Msg, le.Error(), le.Error()+listing(le), 1)
	case errors.Is(e.Err, check.ErrUnsafe):
		c.Msg += ": run kinst with --unsafe to allow it"
	default:
		return e
	}
	return &c
}

// List returns the list with each error's hint added.
func List(list syntax.ErrorList) syntax.ErrorList {
	hinted := make(syntax.ErrorList, len(list))
	for i, e := range list {
		hinted[i] = Error(e)
	}
	return hinted
}

// Text is err's message with the hint of a listing added after the fact
// it is about.
func Text(err error) string {
	msg := err.Error()
	if le := (*check.ListError)(nil); errors.As(err, &le) {
		msg = strings.Replace(msg, le.Error(), le.Error()+listing(le), 1)
	}
	return msg
}

// Warn returns a function for kinst.Options.Warn that prints each
// warning to w as the command prints it: one about the source with its
// line and caret, and the hint; one with no place in the source (a
// missing header) as kinst's own.
func Warn(w io.Writer) func(error) {
	return func(err error) {
		var e *syntax.Error
		switch {
		case !errors.As(err, &e):
			fmt.Fprintf(w, "kinst: warning: %v\n", err)
		case e.File == nil:
			fmt.Fprintf(w, "kinst: %v\n", e)
		default:
			fmt.Fprintln(w, Error(e).Detail())
		}
	}
}

// listing is "; kinst -l 'PATTERN' lists …" for le.
func listing(le *check.ListError) string {
	flag := "-l"
	if le.Pid != 0 {
		flag = fmt.Sprintf("-lp %d", le.Pid)
	}
	return fmt.Sprintf("; kinst %s '%s' lists %s", flag, le.Pattern, le.Listed)
}
