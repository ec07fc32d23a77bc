package kinst

import (
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
)

// A Record is something a running program sent to user space; its
// dynamic type says what. Its String method returns what bpftrace
// prints for it, newlines included: "" for Exit.
type Record interface {
	record()
	String() string
}

// Printf is a printf() record: its format, its arguments as Go values
// (see [Map] for their types) and the text bpftrace would print.
type Printf struct {
	Format string
	Args   []any
	Text   string
}

// Print is a print() of a value that is not a map.
type Print struct {
	Value any
	text  string // as bpftrace prints it
}

// PrintMap is a print(@map) record: the map as it was when the record
// was handled, and the top and divisor print() was given (0 when not).
type PrintMap struct {
	Map      *Map
	Top, Div uint64
	text     string // as bpftrace prints it
}

// System is a system() record; the command has run and Output is what
// it printed. Only programs compiled with Options.Unsafe send it.
type System struct {
	Command string
	Output  string
}

// Cat is a cat() record: the file's path and its contents.
type Cat struct {
	Path, Text string
}

// Time is a time() record: the current time formatted as the program
// asked.
type Time struct{ Text string }

// Join is a join() record: the strings of the array and the separator.
type Join struct {
	Elems []string
	Sep   string
}

// Exit is the record of exit(): the run ends after it. Code is the code
// exit() was given, 0 when none.
type Exit struct{ Code int }

// Lost reports records the kernel dropped because the ring buffer was
// full: the handler was too slow or the buffer too small.
type Lost struct{ Count uint64 }

func (*Printf) record()   {}
func (*Print) record()    {}
func (*PrintMap) record() {}
func (*System) record()   {}
func (*Cat) record()      {}
func (*Time) record()     {}
func (*Join) record()     {}
func (*Exit) record()     {}
func (*Lost) record()     {}

func (r *Printf) String() string   { return r.Text }
func (r *Print) String() string    { return r.text }
func (r *PrintMap) String() string { return r.text }
func (r *System) String() string   { return r.Output }
func (r *Cat) String() string      { return r.Text }
func (r *Time) String() string     { return r.Text }
func (r *Exit) String() string     { return "" }

func (r *Join) String() string {
	return text(compat.Current, func(w *output.Writer) error { return w.Join(r.Elems, r.Sep) })
}

func (r *Lost) String() string {
	return text(compat.Current, func(w *output.Writer) error { return w.Lost(r.Count) })
}

// text returns what write writes in the text format of bpftrace release
// v; what it cannot print, it leaves out.
func text(v compat.Version, write func(w *output.Writer) error) string {
	var b strings.Builder
	write(output.NewText(&b, v))
	return b.String()
}

// convertRecord copies a runtime record, whose values are reused, into
// a Record.
func convertRecord(r *session.Record, v compat.Version) Record {
	switch r.Kind {
	case session.RecPrintf:
		return &Printf{Format: r.Action.Format.String(), Args: convertValues(r.Args), Text: r.Text}
	case session.RecPrint:
		return &Print{Value: convertValue(r.Args[0]), text: text(v, func(w *output.Writer) error { return w.Value(r.Args[0]) })}
	case session.RecPrintMap:
		m := convertMap(r.Map)
		m.src = nil // a Handler's record holds its fields alone, as callers compare it
		return &PrintMap{Map: m, Top: r.Action.Top, Div: r.Action.Div,
			text: text(v, func(w *output.Writer) error { return w.Map(r.Map, uint32(r.Action.Top), uint32(r.Action.Div)) })}
	case session.RecSystem:
		return &System{Command: r.Command, Output: r.Text}
	case session.RecCat:
		return &Cat{Path: r.Command, Text: r.Text}
	case session.RecTime:
		return &Time{Text: r.Text}
	case session.RecJoin:
		return &Join{Elems: r.Elems, Sep: r.Action.Text}
	case session.RecExit:
		return &Exit{Code: r.Code}
	}
	return &Lost{Count: r.Lost}
}
