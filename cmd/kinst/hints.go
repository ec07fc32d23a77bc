package main

import (
	"errors"
	"fmt"
	"strings"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// The library's errors say what is wrong; the command adds how its user
// gets past it, in the command's own terms: the listing that shows what
// exists, the option that allows what was refused.

// hinted returns e with the command's hint added to its message, or e
// itself when there is none.
func hinted(e *syntax.Error) *syntax.Error {
	var le *check.ListError
	c := *e
	switch {
	case errors.As(e.Err, &le):
		// The fact may be followed by what the checker added
		// ("; left out of the probe"): the hint goes right after it.
		c.Msg = strings.Replace(c.Msg, le.Error(), le.Error()+listHint(le), 1)
	case errors.Is(e.Err, check.ErrUnsafe):
		c.Msg += ": run kinst with --unsafe to allow it"
	default:
		return e
	}
	return &c
}

// hintedText is err's message with the hint of a listing added after the
// fact it is about.
func hintedText(err error) string {
	msg := err.Error()
	if le := (*check.ListError)(nil); errors.As(err, &le) {
		msg = strings.Replace(msg, le.Error(), le.Error()+listHint(le), 1)
	}
	return msg
}

// listHint is "; kinst -l 'PATTERN' lists …" for le.
func listHint(le *check.ListError) string {
	flag := "-l"
	if le.Pid != 0 {
		flag = fmt.Sprintf("-lp %d", le.Pid)
	}
	return fmt.Sprintf("; kinst %s '%s' lists %s", flag, le.Pattern, le.Listed)
}
