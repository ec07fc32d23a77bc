package instruments

import (
	"fmt"
	"io"
	"strconv"

	"kinst.dev/kinst"
	"kinst.dev/kinst/export/perfetto"
	"kinst.dev/kinst/kernel"
)

// traceLog renders the records of the trace program as log lines.
type traceLog struct {
	clock *wallClock
	json  bool
	// perfetto, when set, makes the log a Perfetto trace.
	perfetto *perfetto.Trace
	pargs    []perfetto.Arg          // an event's arguments, reused
	records  map[string]*traceRecord // by the probe that sends them
	funcs    map[string]*probeFunc   // a wildcard's functions, by probe name
	names    describer
	buf      []byte
	jw       jsonWriter
	events   uint64 // records logged
	lost     uint64 // records the ring buffer refused
	// The wall time of the current second, formatted once: sec, and
	// the text before and after the nanoseconds.
	sec            int64
	prefix, suffix []byte
}

func newTraceLog(clock *wallClock, records map[string]*traceRecord, json bool) *traceLog {
	return &traceLog{clock: clock, json: json, records: records, funcs: map[string]*probeFunc{}, sec: -1}
}

// printf is the Printf hook: it writes one record as a log line, into
// a buffer it reuses, so that logging allocates nothing per event.
func (l *traceLog) printf(w io.Writer, probe string, args []kinst.Value) error {
	rec := l.records[probe]
	if rec == nil {
		return fmt.Errorf("trace: a record of probe %q, which sends none", probe)
	}
	if rec.kind == headerRecord {
		_, err := io.WriteString(w, traceHeader)
		return err
	}
	if len(args) != rec.fields() {
		return fmt.Errorf("trace: a record of %d values, want %d", len(args), rec.fields())
	}
	fn, i := rec.fn, recFixed
	if rec.target == nil {
		fn = l.fired(rec, args[i].Text())
		i++
	} else if fn == nil {
		fn = l.names.describe(rec.target)
		rec.fn = fn
	}
	switch {
	case l.perfetto != nil:
		l.buf = l.appendPerfetto(l.buf[:0], rec, fn, args, i)
	case l.json:
		l.buf = l.appendJSON(l.buf[:0], rec, fn, args, i)
	default:
		l.buf = l.appendText(l.buf[:0], rec, fn, args, i)
	}
	l.events++
	_, err := w.Write(l.buf)
	return err
}

// describeAll describes the function of every single-function record,
// and loads what a wildcard's records will need.
func (l *traceLog) describeAll() {
	for _, rec := range l.records {
		switch {
		case rec.target != nil:
			rec.fn = l.names.describe(rec.target)
		case rec.kind != headerRecord:
			kernel.LoadKallsyms()
		}
	}
}

// fired describes the function of the probe that fired for a record of
// a wildcard: one of the record's targets.
func (l *traceLog) fired(rec *traceRecord, probe string) *probeFunc {
	if fn := l.funcs[probe]; fn != nil {
		return fn
	}
	fn := &probeFunc{probe: probe, name: probe}
	if t := rec.targets[probe]; t != nil {
		fn = l.names.describe(t)
	}
	l.funcs[probe] = fn
	return fn
}

// appendTime appends the wall time of a monotonic timestamp: in the
// text log the time of day, in JSON RFC 3339, both to the nanosecond.
// Formatting the second once for all its events keeps the cost of a
// line down.
func (l *traceLog) appendTime(b []byte, nsecs uint64) []byte {
	t := l.clock.Wall(nsecs)
	if sec := t.Unix(); sec != l.sec {
		l.sec = sec
		if l.json {
			l.prefix = t.AppendFormat(l.prefix[:0], "2006-01-02T15:04:05.")
			l.suffix = t.AppendFormat(l.suffix[:0], "Z07:00")
		} else {
			l.prefix = t.AppendFormat(l.prefix[:0], "15:04:05.")
		}
	}
	b = append(b, l.prefix...)
	ns := t.Nanosecond()
	for div := 100_000_000; div > 0; div /= 10 {
		b = append(b, byte('0'+ns/div%10))
	}
	return append(b, l.suffix...)
}

// name is what the log calls the function of a record: a tracepoint
// that has no exit to pair with is named as itself, not as the system
// call it belongs to.
func (l *traceLog) name(rec *traceRecord, fn *probeFunc) string {
	if rec.kind == hitRecord && fn.tracepoint != "" {
		return fn.tracepoint
	}
	return fn.name
}

// maxIndent bounds the indentation that shows call depth.
const maxIndent = 32

// appendText appends a record as a text line; args[i:] are the values
// after the common fields and the probe.
func (l *traceLog) appendText(b []byte, rec *traceRecord, fn *probeFunc, args []kinst.Value, i int) []byte {
	b = l.appendTime(b, args[recNsecs].Uint())
	b = appendRight(b, args[recCPU].Uint(), 4)
	b = appendRight(b, args[recPid].Uint(), 8)
	b = appendRight(b, args[recTid].Uint(), 8)
	b = append(b, ' ')
	comm := args[recComm].Text()
	b = append(b, comm...)
	for n := len(comm); n < 17; n++ {
		b = append(b, ' ')
	}
	for d := int64(0); d < min(args[recDepth].Int(), maxIndent); d++ {
		b = append(b, "  "...)
	}
	switch {
	case rec.kind == exitRecord:
		b = append(b, "<- "...)
	case rec.kind == hitRecord:
		b = append(b, "-- "...)
	default:
		b = append(b, "-> "...)
	}
	b = append(b, l.name(rec, fn)...)
	if fn.addr != 0 {
		b = append(b, " (0x"...)
		b = strconv.AppendUint(b, fn.addr, 16)
		b = append(b, ')')
	}
	if rec.kind == exitRecord {
		if rec.ret {
			b = append(b, " = "...)
			b = appendFormatted(b, args[i], rec.retFmt)
			i++
		}
		b = append(b, " ("...)
		b = appendDuration(b, args[i].Uint())
		b = append(b, ')')
		return append(b, '\n')
	}
	for _, a := range rec.args {
		b = append(b, ' ')
		b = append(b, a.name...)
		b = append(b, '=')
		b = appendFormatted(b, args[i], a.fmt)
		i++
	}
	b = append(b, '\n')
	if rec.stack {
		for n := range args[i].NumFrames() {
			b = append(b, "        "...)
			b = appendFrame(b, args[i].Frame(n))
			b = append(b, '\n')
		}
	}
	return b
}

// appendJSON appends a record as a JSON line; args[i:] are the values
// after the common fields and the probe.
func (l *traceLog) appendJSON(b []byte, rec *traceRecord, fn *probeFunc, args []kinst.Value, i int) []byte {
	w := &l.jw
	w.reset(b)
	w.open('{')
	ns := args[recNsecs].Uint()
	w.key("time")
	w.value()
	w.b = append(w.b, '"')
	w.b = l.appendTime(w.b, ns)
	w.b = append(w.b, '"')
	w.key("nsecs")
	w.uint(ns)
	w.key("cpu")
	w.uint(args[recCPU].Uint())
	w.key("pid")
	w.uint(args[recPid].Uint())
	w.key("tid")
	w.uint(args[recTid].Uint())
	w.key("comm")
	w.str(args[recComm].Text())
	w.key("event")
	switch rec.kind {
	case exitRecord:
		w.str("exit")
	case hitRecord:
		w.str("hit")
	default:
		w.str("entry")
	}
	w.key("function")
	w.str(l.name(rec, fn))
	if fn.symbol != "" {
		w.key("symbol")
		w.str(fn.symbol)
	}
	if fn.addr != 0 {
		w.key("address")
		w.hex(fn.addr)
	}
	w.key("probe")
	w.str(fn.probe)
	w.key("depth")
	w.int(args[recDepth].Int())
	if rec.kind == exitRecord {
		if rec.ret {
			w.key("retval")
			writeFormatted(w, args[i], rec.retFmt)
			i++
		}
		w.key("duration_ns")
		w.uint(args[i].Uint())
	}
	if len(rec.args) > 0 {
		w.key("args")
		w.open('{')
		for _, a := range rec.args {
			w.key(a.name)
			writeFormatted(w, args[i], a.fmt)
			i++
		}
		w.close('}')
	}
	if rec.stack {
		w.key("stack")
		w.open('[')
		for n := range args[i].NumFrames() {
			w.value()
			w.b = append(w.b, '"')
			w.b = appendFrame(w.b, args[i].Frame(n)) // symbols and hex need no escaping
			w.b = append(w.b, '"')
		}
		w.close(']')
	}
	w.close('}')
	return append(w.b, '\n')
}

// appendPerfetto appends a record as Perfetto packets: a call's entry
// begins a slice on its thread's track, its exit ends it, an event with
// no return is an instant. Arguments, the stack and the return value
// are the events' debug annotations.
func (l *traceLog) appendPerfetto(b []byte, rec *traceRecord, fn *probeFunc, args []kinst.Value, i int) []byte {
	e := perfetto.Event{
		Time: args[recNsecs].Uint(),
		Pid:  int(args[recPid].Uint()),
		Tid:  int(args[recTid].Uint()),
		Comm: args[recComm].Text(),
		Name: l.name(rec, fn),
	}
	l.pargs = l.pargs[:0]
	if rec.kind == exitRecord {
		if rec.ret {
			l.pargs = append(l.pargs, perfettoArg("ret", args[i], rec.retFmt))
		}
		e.Args = l.pargs
		return l.perfetto.AppendEnd(b, e)
	}
	for _, a := range rec.args {
		l.pargs = append(l.pargs, perfettoArg(a.name, args[i], a.fmt))
		i++
	}
	if rec.stack {
		var st []byte
		for n := range args[i].NumFrames() {
			f := args[i].Frame(n)
			if n > 0 {
				st = append(st, '\n')
			}
			st = appendFrame(st, f)
		}
		l.pargs = append(l.pargs, perfetto.String("stack", string(st)))
	}
	e.Args = l.pargs
	if rec.kind == hitRecord {
		return l.perfetto.AppendInstant(b, e)
	}
	return l.perfetto.AppendBegin(b, e)
}

// perfettoArg is a logged value as a debug annotation.
func perfettoArg(name string, v kinst.Value, f valueFormat) perfetto.Arg {
	switch f {
	case stringValue:
		return perfetto.String(name, v.Text())
	case hexValue:
		return perfetto.Pointer(name, v.Uint())
	case unsignedValue:
		return perfetto.Uint(name, v.Uint())
	}
	return perfetto.Int(name, v.Int())
}

// appendFormatted renders a logged value in the text log.
func appendFormatted(b []byte, v kinst.Value, f valueFormat) []byte {
	switch f {
	case stringValue:
		return strconv.AppendQuote(b, v.Text())
	case hexValue:
		b = append(b, "0x"...)
		return strconv.AppendUint(b, v.Uint(), 16)
	case unsignedValue:
		return strconv.AppendUint(b, v.Uint(), 10)
	}
	return strconv.AppendInt(b, v.Int(), 10)
}

// writeFormatted writes a logged value in JSON, hex values as strings.
func writeFormatted(w *jsonWriter, v kinst.Value, f valueFormat) {
	switch f {
	case stringValue:
		w.str(v.Text())
	case hexValue:
		w.hex(v.Uint())
	case unsignedValue:
		w.uint(v.Uint())
	default:
		w.int(v.Int())
	}
}

// appendFrame renders a stack frame as bpftrace does: symbol+offset,
// or the address in hex.
func appendFrame(b []byte, f kinst.Frame) []byte {
	if f.Symbol == "" {
		b = append(b, "0x"...)
		return strconv.AppendUint(b, f.Addr, 16)
	}
	b = append(b, f.Symbol...)
	b = append(b, '+')
	return strconv.AppendUint(b, f.Offset, 10)
}

// appendRight appends n right-aligned in a field of width, after a space.
func appendRight(b []byte, n uint64, width int) []byte {
	digits := 1
	for v := n; v >= 10; v /= 10 {
		digits++
	}
	for i := digits; i < width; i++ {
		b = append(b, ' ')
	}
	return strconv.AppendUint(b, n, 10)
}

// appendDuration renders nanoseconds in the largest unit that keeps
// an integer part, with three decimals: 850ns, 12.345us, 3.210ms, 1.500s.
func appendDuration(b []byte, ns uint64) []byte {
	if ns < 1000 {
		b = strconv.AppendUint(b, ns, 10)
		return append(b, "ns"...)
	}
	unit, div := "us", uint64(1000)
	switch {
	case ns >= 1e9:
		unit, div = "s", 1e9
	case ns >= 1e6:
		unit, div = "ms", 1e6
	}
	b = strconv.AppendUint(b, ns/div, 10)
	b = append(b, '.')
	frac := ns % div * 1000 / div
	if frac < 100 {
		b = append(b, '0')
	}
	if frac < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendUint(b, frac, 10)
	return append(b, unit...)
}
