package instruments

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/export/perfetto"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

func init() {
	register(&Command{
		Name:    "trace",
		Summary: "log every call and return of functions: time, CPU, thread, return value and duration",
		Run:     trace,
	})
}

func trace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := Common{Formats: []string{"text", "json", "perfetto"}}
	fs := c.Flags("trace", stderr,
		"usage: kinst trace FUNC... [--args] [--stack] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-f text|json|perfetto] [-o FILE] [-q] [--show]",
		"FUNC is a kernel function (vfs_read, kprobe:vfs_*, fentry:vfs_read), uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME",
		"-f perfetto writes a Perfetto trace to -o FILE, for ui.perfetto.dev: a track per thread, a slice per call",
	)
	withArgs := fs.Bool("args", false, "log each call's arguments, typed where the kernel describes them")
	withStack := fs.Bool("stack", false, "log the stack of each call (the user stack for uprobes)")
	pos, err := c.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("name at least one function to trace")
	}
	if c.Format == "perfetto" && c.Output == "" && !c.Show {
		return usageError("-f perfetto writes a binary trace: give -o FILE")
	}
	specs, err := traceSpecs(pos, &c, *withArgs, *withStack)
	if err != nil {
		return err
	}
	src, records := traceProgram(&c, specs)
	clock, err := NewClock()
	if err != nil {
		return err
	}
	log := newTraceLog(clock, records, c.Format == "json")
	if c.Format == "perfetto" {
		log.perfetto = perfetto.NewTrace()
	}
	if !c.Show {
		// Reading kallsyms takes tens of milliseconds, in which a busy
		// function fills the ring buffer: it is done before attaching.
		log.describeAll()
	}
	hooks := Hooks{
		Printf: log.printf,
		Lost: func(w io.Writer, n uint64) error {
			log.lost += n
			_, err := fmt.Fprintf(w, "kinst trace: %d events lost: the log's reader fell behind\n", n)
			return err
		},
		// The maps are the program's bookkeeping; what is left at exit
		// is the summary.
		ExitMaps: func(w io.Writer, _ []*output.Map) error {
			if log.perfetto != nil {
				// Calls still open end with the trace, marked.
				if _, err := w.Write(log.perfetto.AppendClose(nil)); err != nil {
					return err
				}
			}
			if c.Quiet && log.lost == 0 {
				return nil
			}
			_, err := fmt.Fprintf(stderr, "kinst trace: %d events logged, %d lost\n", log.events, log.lost)
			return err
		},
	}
	return c.Run(ctx, "trace", src, hooks, stdout, stderr)
}

// A traceSpec is one target of trace with what its log records carry.
type traceSpec struct {
	Target
	args  []traceArg // logged at entry, with --args
	stack string     // "kstack" or "ustack" with --stack, else ""
	// retval is the expression for the return value, "" where there is
	// none (void functions, tracepoints without an exit), and retFmt
	// how it is rendered.
	retval string
	retFmt valueFormat
	// entryProbe and exitProbe name the probes of a single function;
	// they are "" for a target of several, whose records carry the
	// probe that fired.
	entryProbe, exitProbe string
}

// A traceArg is one argument in the log: its name, the kinst expression
// reading it, and how it is rendered.
type traceArg struct {
	name string
	expr string
	fmt  valueFormat
}

// valueFormat says how a logged value is rendered.
type valueFormat int

const (
	signedValue valueFormat = iota
	unsignedValue
	hexValue
	stringValue
)

// verb is the printf conversion that carries a value of the format.
func (f valueFormat) verb() string {
	switch f {
	case unsignedValue:
		return "%llu"
	case hexValue:
		return "%p"
	case stringValue:
		return "%s"
	}
	return "%lld"
}

// traceSpecs checks the targets and works out what each record carries.
// Kernel functions and tracepoints are resolved as the compiler will
// resolve them, so that a bad name fails here in one sentence and the
// argument list and return type come from the kernel's own description.
func traceSpecs(pos []string, c *Common, withArgs, withStack bool) ([]*traceSpec, error) {
	r := &attach.Resolver{Pid: c.Pid}
	seen := map[string]bool{}
	var specs []*traceSpec
	for _, p := range pos {
		t, err := ParseTarget(p)
		if err != nil {
			return nil, usageError("%v", err)
		}
		if strings.Contains(p, "%") {
			return nil, usageError("%q: trace cannot log a name with %% in it", p)
		}
		if seen[t.Entry] {
			continue
		}
		seen[t.Entry] = true
		s := &traceSpec{Target: t}
		entry, err := resolvePoint(r, t.Entry)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", p, err)
		}
		wildcard := len(entry) > 1 || kernel.HasGlob(t.Entry)
		if !wildcard {
			s.entryProbe = entry[0].FullName()
		}
		if withArgs {
			if wildcard {
				return nil, usageError("--args needs one function per target, and %s matches %d: name them one by one", p, len(entry))
			}
			s.args = entryArgs(t, entry[0])
		}
		if withStack {
			s.stack = "kstack"
			if strings.HasPrefix(t.Entry, "uprobe:") {
				s.stack = "ustack"
			}
		}
		if t.Exit != "" {
			exit, err := resolvePoint(r, t.Exit)
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", p, err)
			}
			s.retval, s.retFmt = returnValue(t, exit[0], wildcard)
			if !wildcard {
				s.exitProbe = exit[0].FullName()
			}
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// resolvePoint resolves one attach point written as kinst source; a
// target that does not read as exactly that one point is refused.
func resolvePoint(r *attach.Resolver, point string) ([]*check.Target, error) {
	prog, err := syntax.Parse("target", []byte(point+" {}"))
	if err != nil || len(prog.Probes) != 1 || len(prog.Probes[0].Points) != 1 || prog.Probes[0].Points[0].Raw != point {
		return nil, fmt.Errorf("%q is not a probe kinst can read", point)
	}
	return r.Resolve(prog.Probes[0].Points[0])
}

// entryArgs lists the arguments a target's entry logs: the fields of
// args (kernel functions with BTF, tracepoints) or arg0..argN.
func entryArgs(t Target, target *check.Target) []traceArg {
	if target.Args == nil {
		if strings.HasPrefix(t.Entry, "tracepoint:") {
			return nil
		}
		n := target.NumArgs
		if n == 0 {
			n = check.MaxArgs
		}
		list := make([]traceArg, n)
		for i := range list {
			name := "arg" + strconv.Itoa(i)
			list[i] = traceArg{name: name, expr: name, fmt: hexValue}
		}
		return list
	}
	var list []traceArg
	for _, f := range target.Args.Fields {
		// A tracepoint's common fields and syscall number say nothing
		// about the call.
		if strings.HasPrefix(f.Name, "common_") || f.Name == "__syscall_nr" {
			continue
		}
		field := target.Args.Field(f.Name)
		if field == nil || field.Type == nil {
			continue
		}
		expr := "args." + f.Name
		ft := field.Type
		switch {
		case ft.Kind == check.Str:
			list = append(list, traceArg{f.Name, expr, stringValue})
		case ft.Kind == check.Ptr && ft.Elem != nil && ft.Elem.Kind == check.Int && ft.Elem.Size == 1:
			list = append(list, traceArg{f.Name, "str(" + expr + ")", stringValue})
		case ft.Kind == check.Ptr:
			list = append(list, traceArg{f.Name, expr, hexValue})
		case ft.Kind == check.Int && ft.Signed:
			list = append(list, traceArg{f.Name, expr, signedValue})
		case ft.Kind == check.Int:
			list = append(list, traceArg{f.Name, expr, unsignedValue})
		}
		// Structures passed by value and arrays are left out: printf
		// cannot carry them.
	}
	return list
}

// returnValue is the expression and format of a target's return value.
// A wildcard's probes share the type of the first function it matches,
// as the compiler gives them.
func returnValue(t Target, exit *check.Target, wildcard bool) (string, valueFormat) {
	if strings.HasPrefix(t.Exit, "tracepoint:") {
		if exit.Args != nil && exit.Args.Field("ret") != nil {
			return "args.ret", signedValue
		}
		return "", signedValue
	}
	rt := exit.Ret
	switch {
	case rt == nil && exit.Typed && !wildcard:
		return "", signedValue // void
	case rt == nil:
		return "retval", signedValue
	case rt.Kind == check.Ptr:
		return "retval", hexValue
	case rt.Kind == check.Int && !rt.Signed:
		return "retval", unsignedValue
	}
	return "retval", signedValue
}

// The fields every trace record starts with, in order. A wildcard's
// records then carry the probe that fired.
const (
	recNsecs = iota
	recCPU
	recPid
	recTid
	recComm
	recDepth
	recFixed // the first field after the common ones
)

// A traceRecord is how to read one printf record of the trace program.
type traceRecord struct {
	header bool // the text log's column header, printed from BEGIN
	exit   bool
	hit    bool // an event with no return: a tracepoint, a kprobe inside a function
	// probe names the probe of a single function's records; "" for a
	// wildcard's, which carry it. fn is what it says of the function.
	probe  string
	fn     *probeFunc
	args   []traceArg // entry: the arguments
	stack  bool       // entry: a stack follows the arguments
	ret    bool       // exit: the return value follows the common fields
	retFmt valueFormat
}

// fields is how many values the record carries.
func (r *traceRecord) fields() int {
	n := recFixed + len(r.args)
	if r.probe == "" {
		n++
	}
	if r.stack {
		n++
	}
	if r.exit {
		n++ // the duration
		if r.ret {
			n++
		}
	}
	return n
}

// traceHeader is the header of the text log, which BEGIN prints.
const traceHeader = "TIME               CPU     PID     TID COMM             CALL\n"

// traceProgram writes the kinst program for the targets, and the
// layout of each printf record it makes, by its format. Each thread
// keeps, per target, a stack of the calls it is inside: an entry
// pushes its time, and the exit pops it, so nested and recursive calls
// each get their own duration. An exit whose entry was not seen (the
// call began before the probes were attached) is not logged.
//
// A single function's format names it, which tells its records apart;
// a wildcard's records carry the probe that fired.
func traceProgram(c *Common, specs []*traceSpec) (string, map[string]*traceRecord) {
	records := map[string]*traceRecord{}
	var b strings.Builder
	if c.Format == "text" {
		fmt.Fprintf(&b, "BEGIN {\n\tprintf(%s);\n}\n\n", syntax.Quote(traceHeader))
		records[traceHeader] = &traceRecord{header: true}
	}
	pred := c.Predicate()
	for k, s := range specs {
		arrow := "->"
		if s.Exit == "" {
			arrow = "--"
		}
		entryFmt, entryArgs := traceFields(s, arrow, s.entryProbe)
		for _, a := range s.args {
			entryFmt += " " + a.name + "=" + a.fmt.verb()
			entryArgs += ", " + a.expr
		}
		if s.stack != "" {
			entryFmt += "%s"
			entryArgs += ", " + s.stack
		}
		entryFmt += "\n"
		records[entryFmt] = &traceRecord{hit: s.Exit == "", probe: s.entryProbe, args: s.args, stack: s.stack != ""}

		fmt.Fprintf(&b, "// %s\n", s.Spec)
		fmt.Fprintf(&b, "%s%s {\n", s.Entry, Pred(pred))
		if s.Exit == "" {
			// Nothing returns, so there is no call to keep track of.
			b.WriteString("\t$t = nsecs;\n\t$d = 0;\n")
		} else {
			fmt.Fprintf(&b, "\t$t = nsecs;\n\t$d = @__depth[tid, %d]++;\n\t@__start[tid, %d, $d] = $t;\n", k, k)
		}
		fmt.Fprintf(&b, "\tprintf(%s, %s);\n}\n\n", syntax.Quote(entryFmt), entryArgs)
		if s.Exit == "" {
			continue
		}

		exitFmt, exitArgs := traceFields(s, "<-", s.exitProbe)
		if s.retval != "" {
			exitFmt += " ret=" + s.retFmt.verb()
			exitArgs += ", " + s.retval
		}
		exitFmt += " duration=%llu\n"
		exitArgs += ", $t - $s"
		records[exitFmt] = &traceRecord{exit: true, probe: s.exitProbe, ret: s.retval != "", retFmt: s.retFmt}

		// One lookup of the depth, and each element deleted when its
		// call returns, so that the maps hold only the calls in progress.
		fmt.Fprintf(&b, "%s%s {\n", s.Exit, Pred(pred))
		fmt.Fprintf(&b, "\t$t = nsecs;\n\t$d = @__depth[tid, %d] - 1;\n\tif ($d >= 0) {\n", k)
		fmt.Fprintf(&b, "\t\t$s = @__start[tid, %d, $d];\n\t\tdelete(@__start[tid, %d, $d]);\n", k, k)
		fmt.Fprintf(&b, "\t\tif ($d == 0) {\n\t\t\tdelete(@__depth[tid, %d]);\n\t\t} else {\n\t\t\t@__depth[tid, %d] = $d;\n\t\t}\n", k, k)
		fmt.Fprintf(&b, "\t\tprintf(%s, %s);\n\t}\n}\n\n", syntax.Quote(exitFmt), exitArgs)
	}
	b.WriteString(traceCleanup(specs))
	src := b.String()
	if stop := c.Stop(); stop != "" {
		src += stop
	} else {
		src = strings.TrimSuffix(src, "\n")
	}
	return src, records
}

// maxCleanup bounds the calls a thread is inside when it ends that the
// cleanup forgets; the verifier needs a bound.
const maxCleanup = 64

// traceCleanup is the probe that forgets the calls a thread was inside
// when it ended, which never return (exit_group, do_exit): otherwise
// they would stay in the maps, and enough of them would fill the maps
// and keep later calls from being logged. It is "" when no target
// returns.
func traceCleanup(specs []*traceSpec) string {
	var b strings.Builder
	for k, s := range specs {
		if s.Exit == "" {
			continue
		}
		fmt.Fprintf(&b, "\t$d = @__depth[tid, %d];\n\t$i = 0;\n\twhile ($d > 0 && $i < %d) {\n", k, maxCleanup)
		fmt.Fprintf(&b, "\t\t$d = $d - 1;\n\t\t$i = $i + 1;\n\t\tdelete(@__start[tid, %d, $d]);\n\t}\n", k)
		fmt.Fprintf(&b, "\tdelete(@__depth[tid, %d]);\n", k)
	}
	if b.Len() == 0 {
		return ""
	}
	return "// A thread that ends inside calls never returns from them.\ntracepoint:sched:sched_process_exit {\n" + b.String() + "}\n\n"
}

// traceFields is the start of a record's format and arguments: the
// common fields, with the target's name or the probe that fired.
func traceFields(s *traceSpec, arrow, probe string) (format, args string) {
	if probe == "" {
		return "%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld " + arrow + " %s",
			"$t, cpu, pid, tid, comm, $d, probe"
	}
	return "%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld " + arrow + " " + s.Spec,
		"$t, cpu, pid, tid, comm, $d"
}

// traceLog renders the records of the trace program as log lines.
type traceLog struct {
	clock *Clock
	json  bool
	// perfetto, when set, makes the log a Perfetto trace.
	perfetto *perfetto.Trace
	pargs    []perfetto.Arg // an event's arguments, reused
	records  map[string]*traceRecord
	// byAction caches each printf call site's record layout.
	byAction []*traceRecord
	funcs    map[string]*probeFunc // a wildcard's functions, by probe name
	names    describer
	buf      []byte
	events   uint64 // records logged
	lost     uint64 // records the ring buffer refused
	// The wall time of the current second, formatted once: sec, and
	// the text before and after the nanoseconds.
	sec            int64
	prefix, suffix []byte
}

func newTraceLog(clock *Clock, records map[string]*traceRecord, json bool) *traceLog {
	return &traceLog{clock: clock, json: json, records: records, funcs: map[string]*probeFunc{}, sec: -1}
}

// printf is the Printf hook: it writes one record as a log line, into
// a buffer it reuses, so that logging allocates nothing per event.
func (l *traceLog) printf(w io.Writer, a *codegen.Action, args []output.Value) error {
	rec := l.record(a)
	if rec == nil {
		return fmt.Errorf("trace: a record of unknown layout %q", a.Format)
	}
	if rec.header {
		_, err := io.WriteString(w, traceHeader)
		return err
	}
	if len(args) != rec.fields() {
		return fmt.Errorf("trace: a record of %d values, want %d", len(args), rec.fields())
	}
	probe, fn, i := rec.probe, rec.fn, recFixed
	if probe == "" {
		probe = args[i].Text()
		i++
		if fn = l.funcs[probe]; fn == nil {
			fn = l.names.describe(probe)
			l.funcs[probe] = fn
		}
	} else if fn == nil {
		fn = l.names.describe(probe)
		rec.fn = fn
	}
	switch {
	case l.perfetto != nil:
		l.buf = l.appendPerfetto(l.buf[:0], rec, probe, fn, args, i)
	case l.json:
		l.buf = l.appendJSON(l.buf[:0], rec, probe, fn, args, i)
	default:
		l.buf = l.appendText(l.buf[:0], rec, probe, fn, args, i)
	}
	l.events++
	_, err := w.Write(l.buf)
	return err
}

// describeAll describes the function of every single-function record,
// and loads what a wildcard's records will need.
func (l *traceLog) describeAll() {
	for _, rec := range l.records {
		if rec.probe != "" {
			rec.fn = l.names.describe(rec.probe)
		} else if !rec.header {
			kernel.LoadKallsyms()
		}
	}
}

func (l *traceLog) record(a *codegen.Action) *traceRecord {
	if a.ID < len(l.byAction) && l.byAction[a.ID] != nil {
		return l.byAction[a.ID]
	}
	rec := l.records[a.Format.String()]
	if rec == nil {
		return nil
	}
	for len(l.byAction) <= a.ID {
		l.byAction = append(l.byAction, nil)
	}
	l.byAction[a.ID] = rec
	return rec
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
func (l *traceLog) name(rec *traceRecord, probe string, fn *probeFunc) string {
	if tp, ok := strings.CutPrefix(probe, "tracepoint:"); ok && rec.hit {
		return tp
	}
	return fn.name
}

// maxIndent bounds the indentation that shows call depth.
const maxIndent = 32

// appendText appends a record as a text line; args[i:] are the values
// after the common fields and the probe.
func (l *traceLog) appendText(b []byte, rec *traceRecord, probe string, fn *probeFunc, args []output.Value, i int) []byte {
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
	case rec.exit:
		b = append(b, "<- "...)
	case rec.hit:
		b = append(b, "-- "...)
	default:
		b = append(b, "-> "...)
	}
	b = append(b, l.name(rec, probe, fn)...)
	if fn.addr != 0 {
		b = append(b, " (0x"...)
		b = strconv.AppendUint(b, fn.addr, 16)
		b = append(b, ')')
	}
	if rec.exit {
		if rec.ret {
			b = append(b, " = "...)
			b = appendFormatted(b, args[i], rec.retFmt, false)
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
		b = appendFormatted(b, args[i], a.fmt, false)
		i++
	}
	b = append(b, '\n')
	if rec.stack {
		for _, f := range args[i].Frames() {
			b = append(b, "        "...)
			b = appendFrame(b, f)
			b = append(b, '\n')
		}
	}
	return b
}

// appendJSON appends a record as a JSON line; args[i:] are the values
// after the common fields and the probe.
func (l *traceLog) appendJSON(b []byte, rec *traceRecord, probe string, fn *probeFunc, args []output.Value, i int) []byte {
	ns := args[recNsecs].Uint()
	b = append(b, `{"time": "`...)
	b = l.appendTime(b, ns)
	b = append(b, `", "nsecs": `...)
	b = strconv.AppendUint(b, ns, 10)
	b = append(b, `, "cpu": `...)
	b = strconv.AppendUint(b, args[recCPU].Uint(), 10)
	b = append(b, `, "pid": `...)
	b = strconv.AppendUint(b, args[recPid].Uint(), 10)
	b = append(b, `, "tid": `...)
	b = strconv.AppendUint(b, args[recTid].Uint(), 10)
	b = append(b, `, "comm": `...)
	b = appendJSONString(b, args[recComm].Text())
	switch {
	case rec.exit:
		b = append(b, `, "event": "exit"`...)
	case rec.hit:
		b = append(b, `, "event": "hit"`...)
	default:
		b = append(b, `, "event": "entry"`...)
	}
	b = append(b, `, "function": `...)
	b = appendJSONString(b, l.name(rec, probe, fn))
	if fn.symbol != "" {
		b = append(b, `, "symbol": `...)
		b = appendJSONString(b, fn.symbol)
	}
	if fn.addr != 0 {
		b = append(b, `, "address": "0x`...)
		b = strconv.AppendUint(b, fn.addr, 16)
		b = append(b, '"')
	}
	b = append(b, `, "probe": `...)
	b = appendJSONString(b, probe)
	b = append(b, `, "depth": `...)
	b = strconv.AppendInt(b, args[recDepth].Int(), 10)
	if rec.exit {
		if rec.ret {
			b = append(b, `, "retval": `...)
			b = appendFormatted(b, args[i], rec.retFmt, true)
			i++
		}
		b = append(b, `, "duration_ns": `...)
		b = strconv.AppendUint(b, args[i].Uint(), 10)
		return append(b, "}\n"...)
	}
	if len(rec.args) > 0 {
		b = append(b, `, "args": {`...)
		for n, a := range rec.args {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, a.name)
			b = append(b, ": "...)
			b = appendFormatted(b, args[i], a.fmt, true)
			i++
		}
		b = append(b, '}')
	}
	if rec.stack {
		b = append(b, `, "stack": [`...)
		for n, f := range args[i].Frames() {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = append(b, '"')
			b = appendFrame(b, f) // symbols and hex need no escaping
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// appendPerfetto appends a record as Perfetto packets: a call's entry
// begins a slice on its thread's track, its exit ends it, an event with
// no return is an instant. Arguments, the stack and the return value
// are the events' debug annotations.
func (l *traceLog) appendPerfetto(b []byte, rec *traceRecord, probe string, fn *probeFunc, args []output.Value, i int) []byte {
	e := perfetto.Event{
		Time: args[recNsecs].Uint(),
		Pid:  int(args[recPid].Uint()),
		Tid:  int(args[recTid].Uint()),
		Comm: args[recComm].Text(),
		Name: l.name(rec, probe, fn),
	}
	l.pargs = l.pargs[:0]
	if rec.exit {
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
		for n, f := range args[i].Frames() {
			if n > 0 {
				st = append(st, '\n')
			}
			st = appendFrame(st, f)
		}
		l.pargs = append(l.pargs, perfetto.String("stack", string(st)))
	}
	e.Args = l.pargs
	if rec.hit {
		return l.perfetto.AppendInstant(b, e)
	}
	return l.perfetto.AppendBegin(b, e)
}

// perfettoArg is a logged value as a debug annotation.
func perfettoArg(name string, v output.Value, f valueFormat) perfetto.Arg {
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

// appendFormatted renders a logged value; in JSON, hex values and
// strings are quoted.
func appendFormatted(b []byte, v output.Value, f valueFormat, json bool) []byte {
	switch f {
	case stringValue:
		if json {
			return appendJSONString(b, v.Text())
		}
		return strconv.AppendQuote(b, v.Text())
	case hexValue:
		if json {
			b = append(b, `"0x`...)
			b = strconv.AppendUint(b, v.Uint(), 16)
			return append(b, '"')
		}
		b = append(b, "0x"...)
		return strconv.AppendUint(b, v.Uint(), 16)
	case unsignedValue:
		return strconv.AppendUint(b, v.Uint(), 10)
	}
	return strconv.AppendInt(b, v.Int(), 10)
}

// appendFrame renders a stack frame as bpftrace does: symbol+offset,
// or the address in hex.
func appendFrame(b []byte, f output.Frame) []byte {
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

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// A probeFunc is what a probe's name says about the function it is in,
// for the log and for count's table.
type probeFunc struct {
	name   string // the function, system call or tracepoint
	symbol string // the symbol addr belongs to, where it differs from name
	addr   uint64 // its address (kallsyms, or the ELF symbol's value); 0 if none
}

// syscallSymbols are the prefixes x86-64 kernels give the function
// behind a system call.
var syscallSymbols = []string{"__x64_sys_", "__se_sys_", "__do_sys_", "sys_"}

// A describer describes the functions of probes, reading each binary's
// symbols once.
type describer struct {
	files map[string]*elfsym.File // nil for a file that cannot be read
}

// describe names the function of a probe such as "kprobe:vfs_read",
// "uretprobe:/bin/bash:readline" or "tracepoint:syscalls:sys_exit_openat"
// and finds its address. A system call's tracepoints name the call and
// give the address of the kernel function that implements it.
func (d *describer) describe(probe string) *probeFunc {
	provider, rest, _ := strings.Cut(probe, ":")
	switch provider {
	case "kprobe", "kretprobe", "fentry", "fexit":
		fn := &probeFunc{name: rest}
		sym, off := splitOffset(rest)
		if ks, err := kernel.LoadKallsyms(); err == nil {
			if addr, ok := ks.Address(sym); ok {
				fn.addr = addr + off
			}
		}
		return fn
	case "uprobe", "uretprobe":
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return &probeFunc{name: rest}
		}
		path, spec := rest[:i], rest[i+1:]
		fn := &probeFunc{name: spec}
		if strings.HasPrefix(spec, "0x") {
			fn.addr, _ = strconv.ParseUint(spec[2:], 16, 64)
			return fn
		}
		sym, off := splitOffset(spec)
		f, ok := d.files[path]
		if !ok {
			f, _ = elfsym.Open(path)
			if d.files == nil {
				d.files = map[string]*elfsym.File{}
			}
			d.files[path] = f
		}
		if f != nil {
			if s, err := f.Lookup(sym); err == nil {
				fn.addr = s.Addr + off
			}
		}
		return fn
	case "tracepoint":
		cat, name, _ := strings.Cut(rest, ":")
		call, ok := strings.CutPrefix(name, "sys_enter_")
		if !ok {
			call, ok = strings.CutPrefix(name, "sys_exit_")
		}
		if cat != "syscalls" || !ok {
			return &probeFunc{name: rest}
		}
		fn := &probeFunc{name: call}
		if ks, err := kernel.LoadKallsyms(); err == nil {
			for _, prefix := range syscallSymbols {
				if addr, ok := ks.Address(prefix + call); ok {
					fn.symbol, fn.addr = prefix+call, addr
					break
				}
			}
		}
		return fn
	}
	return &probeFunc{name: probe}
}

// splitOffset splits "func+off" into the function and the offset.
func splitOffset(s string) (string, uint64) {
	if i := strings.LastIndexByte(s, '+'); i > 0 {
		if off, err := strconv.ParseUint(s[i+1:], 0, 64); err == nil {
			return s[:i], off
		}
	}
	return s, 0
}
