package syntax

import (
	"fmt"
	"sort"
	"strings"
)

// An Error is a problem found in a program's source: where it starts,
// where it ends, and what is wrong.
type Error struct {
	File *File
	Pos  Pos // first byte of the offending range
	End  Pos // one past its last byte; may equal Pos
	Msg  string
	// Severity tells an error from a warning, which does not stop the
	// program; Error writes "warning: " before a warning's Msg.
	Severity Severity
	// Err is the cause when Msg reports another package's error, such
	// as a probe type the kernel refuses; errors.Is and errors.As see it.
	Err error
}

// A Severity says whether a diagnostic stops the program.
type Severity int

const (
	SeverityError Severity = iota
	SeverityWarning
)

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Error gives "file:line:col: message" only; Detail adds the source line
// and the caret.
func (e *Error) Error() string {
	msg := e.Msg
	if e.Severity == SeverityWarning {
		msg = "warning: " + msg
	}
	if e.File == nil {
		return msg
	}
	return fmt.Sprintf("%s: %s", e.File.Position(e.Pos), msg)
}

// Detail renders the error as users see it: the position and message,
// then the source line, then a caret under the range.
func (e *Error) Detail() string {
	var b strings.Builder
	b.WriteString(e.Error())
	if e.File == nil || !e.Pos.IsValid() {
		return b.String()
	}
	p, line := e.File.Locate(e.Pos)
	b.WriteByte('\n')
	b.WriteString(line)
	b.WriteByte('\n')
	// Keep tabs from the line itself so the caret lines up in a terminal.
	for i := 0; i < p.Column-1 && i < len(line); i++ {
		if line[i] == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteByte('^')
	n := int(e.End - e.Pos)
	if rest := len(line) - p.Column; n-1 > rest {
		n = rest + 1 // the range runs past this line: underline to its end
	}
	for i := 1; i < n; i++ {
		b.WriteByte('~')
	}
	e.File.writeExpansions(&b, e.Pos)
	return b.String()
}

// An ErrorList is a list of errors sorted by position.
type ErrorList []*Error

// Add appends an error covering [pos, end).
func (l *ErrorList) Add(f *File, pos, end Pos, format string, args ...any) {
	*l = append(*l, &Error{File: f, Pos: pos, End: end, Msg: fmt.Sprintf(format, args...)})
}

// Warn appends a warning.
func (l *ErrorList) Warn(f *File, pos, end Pos, format string, args ...any) {
	*l = append(*l, &Error{File: f, Pos: pos, End: end, Msg: fmt.Sprintf(format, args...), Severity: SeverityWarning})
}

// Sort orders the list by position, keeping the order of errors at the
// same place.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos < l[j].Pos })
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap returns the errors, so that errors.Is and errors.As look at
// each one's cause.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Detail renders every error with its source line and caret, one after
// the other.
func (l ErrorList) Detail() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Detail()
	}
	return strings.Join(parts, "\n")
}
