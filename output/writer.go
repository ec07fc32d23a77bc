package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"kinst.dev/kinst/compat"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ExitSeparator is what bpftrace writes once tracing stops, before it
// prints the maps: two newlines. 0.17 writes them to standard output in
// both text and JSON modes, even when -o sends everything else to a file;
// 0.26.1 writes them to the output in text mode only (see Writer.End).
// The runtime writes them; Maps does not.
const ExitSeparator = "\n\n"

// Defaults of bpftrace 0.17 for calls that leave out an argument.
const (
	DefaultTimeFormat    = "%H:%M:%S\n" // time()
	DefaultJoinDelimiter = " "          // join(array)
)

// Writer prints messages in the text or JSON format of a release of
// bpftrace. Each method writes whole lines (a printf message is written
// as is) with one Write call. A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	st  style
	buf []byte
	tmp []byte // a JSON message's text before it is escaped into buf
	// tsLast is the latest interval of the tseries map being written.
	tsLast uint64
}

// NewText returns a Writer printing the text format of bpftrace release v
// to w.
func NewText(w io.Writer, v compat.Version) *Writer {
	return &Writer{w: w, st: style{old: v == compat.V017}}
}

// NewJSON returns a Writer printing the JSON lines (-f json) of bpftrace
// release v to w.
func NewJSON(w io.Writer, v compat.Version) *Writer {
	return &Writer{w: w, st: style{json: true, old: v == compat.V017}}
}

// End writes what bpftrace writes to the output once the END probes have
// run, before the maps: ExitSeparator in 0.26.1's text mode, else
// nothing, as 0.17 writes it to standard output itself.
func (w *Writer) End() error {
	if w.st.json || w.st.old {
		return nil
	}
	w.buf = append(w.buf[:0], ExitSeparator...)
	return w.flush()
}

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
	if !w.st.json {
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

// counter writes {"type": typ, "data": {"field": n}}, with "count": n
// before the data in 0.26.1.
func (w *Writer) counter(typ, field string, n uint64) error {
	b := append(w.buf[:0], `{"type": "`...)
	b = append(b, typ...)
	if !w.st.old {
		b = append(b, `", "count": `...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, `, "data": {"`...)
	} else {
		b = append(b, `", "data": {"`...)
	}
	b = append(b, field...)
	b = append(b, `": `...)
	b = strconv.AppendUint(b, n, 10)
	w.buf = append(b, "}}\n"...)
	return w.flush()
}

// AttachedProbes writes "Attaching N probes..." ("1 probe...") as 0.17
// does before attaching, or "Attached N probes" ("1 probe") as 0.26.1
// does after. 0.26.1 writes the text form to standard error, which is
// for the caller to arrange.
func (w *Writer) AttachedProbes(n uint64) error {
	if w.st.json {
		return w.counter("attached_probes", "probes", n)
	}
	b := w.buf[:0]
	if w.st.old {
		b = append(b, "Attaching "...)
	} else {
		b = append(b, "Attached "...)
	}
	b = strconv.AppendUint(b, n, 10)
	if n == 1 {
		b = append(b, " probe"...)
	} else {
		b = append(b, " probes"...)
	}
	if w.st.old {
		b = append(b, "..."...)
	}
	w.buf = append(b, '\n')
	return w.flush()
}

// Lost writes that n events were lost: "Lost N events". 0.26.1 writes the
// text form to standard error, which is for the caller to arrange.
func (w *Writer) Lost(n uint64) error {
	if w.st.json {
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
	if !w.st.json {
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
	if w.st.json {
		b = append(b, `{"type": "value", "data": `...)
	}
	b, err := appendValue(b, v, 1, w.st)
	if err != nil {
		w.buf = b[:0]
		return fmt.Errorf("print: %w", err)
	}
	if w.st.json {
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
	File    string // the program's file name, as "stdin"
	Line    int    // where the call is in the program, 1-based
	Column  int
	// Warning is the whole text-mode report: the diagnostic printer's
	// warning at the call's location with Message's text as its own,
	// source line and ~~~ marker included, as bpftrace writes it.
	Warning string
}

// Message is the warning text bpftrace gives. 0.17's (old) is "Failed to
// map_update_elem: Argument list too long (-7)", or the bare code when it
// is not negative. 0.26.1's is a sentence for a full map, a missing
// element or else the code's strerror, then a line "Additional Info -
// helper: map_update_elem, retcode: -7".
func (e HelperError) Message(old bool) string {
	if !old {
		msg := strerror(-e.Retcode)
		switch {
		case e.Helper == "map_update_elem" && e.Retcode == -7: // E2BIG
			msg = "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`"
		case e.Helper == "map_delete_elem" && e.Retcode == -2: // ENOENT
			msg = "Can't delete map element because it does not exist."
		case e.Helper == "map_lookup_elem":
			// bpftrace passes 0 for a failed lookup, whatever happened.
			msg = "Can't lookup map element because it does not exist."
		}
		return msg + "\nAdditional Info - helper: " + e.Helper + ", retcode: " + strconv.FormatInt(e.Retcode, 10)
	}
	if e.Retcode < 0 {
		return "Failed to " + e.Helper + ": " + strerror(-e.Retcode) + " (" + strconv.FormatInt(e.Retcode, 10) + ")"
	}
	return "Failed to " + e.Helper + ": " + strconv.FormatInt(e.Retcode, 10)
}

// HelperError writes a failed helper call: its Warning in text mode, a
// helper_error object in JSON mode, which 0.26.1 gives the strerror text
// of the code and the file name too.
func (w *Writer) HelperError(e HelperError) error {
	if !w.st.json {
		w.buf = append(w.buf[:0], e.Warning...)
		return w.flush()
	}
	b := append(w.buf[:0], `{"type": "helper_error", `...)
	if !w.st.old {
		b = append(b, `"msg": `...)
		b = appendJSONString(b, strerror(-e.Retcode))
		b = append(b, ", "...)
	}
	b = append(b, `"helper": "`...)
	b = append(b, e.Helper...)
	b = append(b, `", "retcode": `...)
	b = strconv.AppendInt(b, e.Retcode, 10)
	if !w.st.old {
		b = append(b, `, "filename": `...)
		b = appendJSONString(b, e.File)
	}
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
// maps and warns about it at compile time. An empty map is an empty line
// in 0.17's text, and nothing otherwise.
func (w *Writer) Map(m *Map, top, div uint32) error {
	if err := m.check(); err != nil {
		return err
	}
	if len(m.Entries) == 0 && (w.st.json || !w.st.old) {
		return nil
	}
	d := uint64(div)
	if d == 0 {
		d = 1
	}
	entries := m.Sorted()
	// 0.26.1 ignores top for tseries maps too.
	if top != 0 && len(entries) > int(top) && m.Kind != KindStats && m.Kind != KindTSeries {
		entries = entries[len(entries)-int(top):]
	}
	keyed := len(m.Entries) > 0 && len(m.Entries[0].Key) > 0
	if m.Kind == KindTSeries {
		// Every entry shows the window of intervals that ends at the
		// latest one of the whole map.
		w.tsLast = 0
		for _, e := range m.Entries {
			w.tsLast = max(w.tsLast, e.Value.tseries().latest())
		}
	}

	b := w.buf[:0]
	if w.st.json {
		typ := "map"
		switch m.Kind {
		case KindHist, KindLhist:
			typ = "hist"
		case KindAvg, KindStats:
			typ = "stats"
		case KindTSeries:
			typ = "tseries"
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
	if w.st.json {
		if keyed {
			b = append(b, '}')
		}
		b = append(b, "}}\n"...)
	} else {
		b = append(b, '\n')
		if w.st.old && (m.Kind == KindAvg || m.Kind == KindStats) {
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
	case w.st.json:
		return ", "
	case k == KindKstack, k == KindUstack, k == KindKsym, k == KindUsym, k == KindInet:
		return ""
	}
	return "\n"
}

func (w *Writer) appendEntry(b []byte, m *Map, e Entry, keyed bool, div uint64) ([]byte, error) {
	var err error
	if w.st.json {
		if keyed {
			var key []byte
			for i, k := range e.Key {
				if i > 0 {
					key = append(key, ',')
				}
				if key, err = appendKey(key, k, w.st.old); err != nil {
					return b, fmt.Errorf("map %s: %w", m.Name, err)
				}
			}
			if !w.st.old {
				// 0.26.1 takes the spaces out of a key.
				key = bytes.ReplaceAll(key, []byte(" "), nil)
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
				if b, err = appendKey(b, k, w.st.old); err != nil {
					return b, fmt.Errorf("map %s: %w", m.Name, err)
				}
			}
			b = append(b, ']')
		}
		b = append(b, ':')
		if w.st.old || (m.Kind != KindHist && m.Kind != KindLhist && m.Kind != KindTSeries) {
			// 0.17 puts a space after the name of a histogram too.
			b = append(b, ' ')
		}
	}
	switch v := e.Value; v.kind {
	case KindHist:
		switch {
		case w.st.old && w.st.json:
			return appendHistJSON(b, v.buckets(), div, oldHistBounds), nil
		case w.st.old:
			return appendHistText(append(b, '\n'), v.buckets(), div), nil
		case w.st.json:
			return appendHistJSON(b, v.buckets(), div, FineHist(v.HistBits(), nil).HistBucketBounds), nil
		}
		return appendFineHistText(append(b, '\n'), v.buckets(), v.HistBits(), div), nil
	case KindLhist:
		if w.st.json {
			return appendLhistJSON(b, v.lhist()), nil
		}
		return appendLhistText(append(b, '\n'), v.lhist(), w.st.old), nil
	case KindStats:
		return appendStats(b, v, w.st), nil
	case KindTSeries:
		if w.st.json {
			return appendTSeriesJSON(b, v.tseries(), w.tsLast), nil
		}
		// The graph ends its last line; the entry's own ending makes
		// the blank line bpftrace leaves after it.
		return appendTSeriesText(append(b, '\n'), v.tseries(), w.tsLast), nil
	}
	b, err = appendValue(b, e.Value, div, w.st)
	if err != nil {
		return b, fmt.Errorf("map %s: %w", m.Name, err)
	}
	return b, nil
}

// ErrStrftime reports a time format whose result glibc's strftime cannot
// give: empty, or too long for bpftrace's 64-byte buffer.
var ErrStrftime = errors.New("strftime returned 0")
