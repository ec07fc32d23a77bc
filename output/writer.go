package output

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ExitSeparator is what bpftrace writes to standard output once tracing
// stops, before it prints the maps: two newlines, in both text and JSON
// modes, and to standard output even when -o sends everything else to a
// file. The runtime writes it; Maps does not.
const ExitSeparator = "\n\n"

// Defaults of bpftrace 0.17 for calls that leave out an argument.
const (
	DefaultTimeFormat    = "%H:%M:%S\n" // time()
	DefaultJoinDelimiter = " "          // join(array)
)

// Writer prints messages in bpftrace 0.17's text or JSON format. Each
// method writes whole lines (a printf message is written as is) with one
// Write call. A Writer is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	json bool
	buf  []byte
	tmp  []byte // a JSON message's text before it is escaped into buf
}

// NewText returns a Writer printing bpftrace's text format to w.
func NewText(w io.Writer) *Writer { return &Writer{w: w} }

// NewJSON returns a Writer printing bpftrace's JSON lines (-f json) to w.
func NewJSON(w io.Writer) *Writer { return &Writer{w: w, json: true} }

func (w *Writer) flush() error {
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// message writes msg as a message of the given JSON type: as is in text
// mode (with a newline when nl), else as {"type": typ, "data": "msg"}.
func (w *Writer) message(typ, msg string, nl bool) error {
	w.buf = w.appendMessage(w.buf[:0], typ, msg, nl)
	return w.flush()
}

func (w *Writer) appendMessage(b []byte, typ, msg string, nl bool) []byte {
	if !w.json {
		b = append(b, msg...)
		if nl {
			b = append(b, '\n')
		}
		return b
	}
	b = append(b, `{"type": "`...)
	b = append(b, typ...)
	b = append(b, `", "data": `...)
	b = appendJSONString(b, msg)
	return append(b, "}\n"...)
}

// counter writes {"type": typ, "data": {"field": n}}.
func (w *Writer) counter(typ, field string, n uint64) error {
	b := append(w.buf[:0], `{"type": "`...)
	b = append(b, typ...)
	b = append(b, `", "data": {"`...)
	b = append(b, field...)
	b = append(b, `": `...)
	b = strconv.AppendUint(b, n, 10)
	w.buf = append(b, "}}\n"...)
	return w.flush()
}

// AttachedProbes writes "Attaching N probes..." ("1 probe...").
func (w *Writer) AttachedProbes(n uint64) error {
	if w.json {
		return w.counter("attached_probes", "probes", n)
	}
	b := append(w.buf[:0], "Attaching "...)
	b = strconv.AppendUint(b, n, 10)
	if n == 1 {
		b = append(b, " probe...\n"...)
	} else {
		b = append(b, " probes...\n"...)
	}
	w.buf = b
	return w.flush()
}

// Lost writes that n events were lost: "Lost N events".
func (w *Writer) Lost(n uint64) error {
	if w.json {
		return w.counter("lost_events", "events", n)
	}
	b := append(w.buf[:0], "Lost "...)
	b = strconv.AppendUint(b, n, 10)
	w.buf = append(b, " events\n"...)
	return w.flush()
}

// WatchpointsFull says a watchpoint could not be set because the debug
// registers are all taken, in bpftrace's words and under its JSON type.
func (w *Writer) WatchpointsFull() error {
	return w.message("lost_events", "Failed to attach watchpoint probe. You are out of watchpoint registers.", true)
}

// Printf writes printf(f, args...). It allocates nothing once its buffer
// has grown to the longest message.
func (w *Writer) Printf(f *Format, args []Value) error {
	if !w.json {
		b, err := f.Append(w.buf[:0], args)
		w.buf = b[:0]
		if err != nil {
			return err
		}
		w.buf = b
		return w.flush()
	}
	text, err := f.Append(w.tmp[:0], args)
	w.tmp = text[:0]
	if err != nil {
		return err
	}
	b := append(w.buf[:0], `{"type": "printf", "data": `...)
	b = appendJSONString(b, text)
	w.buf = append(b, "}\n"...)
	return w.flush()
}

// System writes the output of a command system() ran.
func (w *Writer) System(output string) error { return w.message("syscall", output, false) }

// Cat writes the contents of a file cat() read.
func (w *Writer) Cat(contents string) error { return w.message("cat", contents, false) }

// Join writes join(): the elements separated by delim, then a newline in
// text mode.
func (w *Writer) Join(elems []string, delim string) error {
	return w.message("join", strings.Join(elems, delim), true)
}

// Time writes time(format) for t, formatted as glibc's strftime formats it
// (C locale, t's time zone). When strftime would fail, as for an empty
// result or one of 64 bytes or more, it writes nothing and returns
// ErrStrftime, which 0.17 reports on standard error as "strftime returned 0".
func (w *Writer) Time(format string, t time.Time) error {
	text, ok := strftime(nil, format, t, strftimeMax)
	if !ok {
		return ErrStrftime
	}
	return w.message("time", string(text), false)
}

// Value writes print(v) for a value that is not a map.
func (w *Writer) Value(v Value) error {
	b := w.buf[:0]
	if w.json {
		b = append(b, `{"type": "value", "data": `...)
	}
	b, err := appendValue(b, v, 1, w.json)
	if err != nil {
		w.buf = b[:0]
		return fmt.Errorf("print: %w", err)
	}
	if w.json {
		b = append(b, '}')
	}
	w.buf = append(b, '\n')
	return w.flush()
}

// HelperError is a BPF helper call that failed at run time, as bpftrace
// reports with -k or -kk.
type HelperError struct {
	Helper  string // the helper's name without bpf_, as "map_update_elem"
	Retcode int64  // what it returned
	Line    int    // where the call is in the program, 1-based
	Column  int
	// Warning is the whole text-mode report: the diagnostic printer's
	// warning at the call's location with Message as its text, source line
	// and ~~~ marker included, as bpftrace writes it to standard output.
	Warning string
}

// Message is the warning text bpftrace gives: "Failed to map_update_elem:
// Argument list too long (-7)", or the bare code when it is not negative.
func (e HelperError) Message() string {
	if e.Retcode < 0 {
		return "Failed to " + e.Helper + ": " + strerror(-e.Retcode) + " (" + strconv.FormatInt(e.Retcode, 10) + ")"
	}
	return "Failed to " + e.Helper + ": " + strconv.FormatInt(e.Retcode, 10)
}

// HelperError writes a failed helper call: its Warning in text mode, a
// helper_error object in JSON mode.
func (w *Writer) HelperError(e HelperError) error {
	if !w.json {
		w.buf = append(w.buf[:0], e.Warning...)
		return w.flush()
	}
	b := append(w.buf[:0], `{"type": "helper_error", "helper": "`...)
	b = append(b, e.Helper...)
	b = append(b, `", "retcode": `...)
	b = strconv.AppendInt(b, e.Retcode, 10)
	b = append(b, `, "line": `...)
	b = strconv.AppendInt(b, int64(e.Line), 10)
	b = append(b, `, "col": `...)
	b = strconv.AppendInt(b, int64(e.Column), 10)
	w.buf = append(b, "}\n"...)
	return w.flush()
}

// Maps writes every map as bpftrace prints them at exit: by name in byte
// order, each whole. See ExitSeparator for what comes before them.
func (w *Writer) Maps(maps []*Map) error {
	sorted := slices.Clone(maps)
	slices.SortFunc(sorted, func(a, b *Map) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Name == sorted[i-1].Name {
			return fmt.Errorf("map %s: %w: printed twice", sorted[i].Name, ErrMapKind)
		}
	}
	for _, m := range sorted {
		if err := w.Map(m, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

// Map writes print(m, top, div): when top is not 0, only the last top
// entries in print order; when div is not 0, values divided by div where
// 0.17 divides them (not stats, not lhist). 0.17 ignores top for stats
// maps and warns about it at compile time.
func (w *Writer) Map(m *Map, top, div uint32) error {
	if err := m.check(); err != nil {
		return err
	}
	if w.json && len(m.Entries) == 0 {
		return nil
	}
	d := uint64(div)
	if d == 0 {
		d = 1
	}
	entries := m.Sorted()
	if top != 0 && len(entries) > int(top) && m.Kind != KindStats {
		entries = entries[len(entries)-int(top):]
	}
	keyed := len(m.Entries) > 0 && len(m.Entries[0].Key) > 0

	b := w.buf[:0]
	if w.json {
		typ := "map"
		switch m.Kind {
		case KindHist, KindLhist:
			typ = "hist"
		case KindAvg, KindStats:
			typ = "stats"
		}
		b = append(b, `{"type": "`...)
		b = append(b, typ...)
		b = append(b, `", "data": `...)
		b = append(b, '{')
		b = appendJSONString(b, m.Name)
		b = append(b, ": "...)
		if keyed {
			b = append(b, '{')
		}
	}
	var err error
	for i, e := range entries {
		if i > 0 {
			b = append(b, w.entrySeparator(m.Kind)...)
		}
		if b, err = w.appendEntry(b, m, e, keyed, d); err != nil {
			w.buf = b[:0]
			return err
		}
	}
	if w.json {
		if keyed {
			b = append(b, '}')
		}
		b = append(b, "}}\n"...)
	} else {
		b = append(b, '\n')
		if m.Kind == KindAvg || m.Kind == KindStats {
			b = append(b, '\n')
		}
	}
	w.buf = b
	return w.flush()
}

// entrySeparator is what 0.17 puts between entries. In text mode it puts
// nothing after stack, symbol and address values, running them together.
func (w *Writer) entrySeparator(k Kind) string {
	switch {
	case w.json:
		return ", "
	case k == KindKstack, k == KindUstack, k == KindKsym, k == KindUsym, k == KindInet:
		return ""
	}
	return "\n"
}

func (w *Writer) appendEntry(b []byte, m *Map, e Entry, keyed bool, div uint64) ([]byte, error) {
	var err error
	if w.json {
		if keyed {
			var key []byte
			for i, k := range e.Key {
				if i > 0 {
					key = append(key, ',')
				}
				if key, err = appendKey(key, k); err != nil {
					return b, fmt.Errorf("map %s: %w", m.Name, err)
				}
			}
			b = appendJSONString(b, string(key))
			b = append(b, ": "...)
		}
	} else {
		b = append(b, m.Name...)
		if keyed {
			b = append(b, '[')
			for i, k := range e.Key {
				if i > 0 {
					b = append(b, ", "...)
				}
				if b, err = appendKey(b, k); err != nil {
					return b, fmt.Errorf("map %s: %w", m.Name, err)
				}
			}
			b = append(b, ']')
		}
		b = append(b, ": "...)
	}
	switch v := e.Value; v.kind {
	case KindHist:
		if w.json {
			return appendHistJSON(b, v.buckets(), div), nil
		}
		return appendHistText(append(b, '\n'), v.buckets(), div), nil
	case KindLhist:
		if w.json {
			return appendLhistJSON(b, v.lhist()), nil
		}
		return appendLhistText(append(b, '\n'), v.lhist()), nil
	case KindStats:
		return appendStats(b, v, w.json), nil
	}
	b, err = appendValue(b, e.Value, div, w.json)
	if err != nil {
		return b, fmt.Errorf("map %s: %w", m.Name, err)
	}
	return b, nil
}

// ErrStrftime reports a time format whose result glibc's strftime cannot
// give: empty, or too long for bpftrace's 64-byte buffer.
var ErrStrftime = errors.New("strftime returned 0")
