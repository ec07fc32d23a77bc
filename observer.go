package kinst

import (
	"errors"
	"fmt"
	"io"
	"time"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/export/pprof"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
)

// An Observer takes part in a run that prints to RunOptions.Output: it
// sees what the program sends as Go values before it is printed, and
// may print it its own way instead, as the kinst command's instruments
// and exporters do. Its methods are called one at a time, on the
// goroutine of the run, and w is the run's Output, buffered as
// RunOptions.Buffering says.
type Observer interface {
	// Printf is called with each printf() record: the probe that sent
	// it as the program writes it ("kprobe:vfs_read"), its format and
	// its arguments, which are valid only until Printf returns, so that
	// an observer rendering its own lines allocates nothing for them.
	// Unless handled, the record is then printed as bpftrace prints it.
	Printf(w io.Writer, probe, format string, args []Value) (handled bool, err error)
	// Record is called with each print() of a map (*PrintMap) and each
	// report of records the kernel lost (*Lost); unless handled, it is
	// then printed as bpftrace prints it. The run's other records are
	// printed without a call.
	Record(w io.Writer, r Record) (handled bool, err error)
	// Maps is called with the maps when the run ends, before they are
	// printed: the run prints those of them Maps returns as bpftrace
	// prints its maps at exit, and nothing when it returns none.
	Maps(w io.Writer, maps []*Map) (rest []*Map, err error)
	// Attached is called once every probe is attached, before the
	// records that follow BEGIN's are handled: r reads the maps live,
	// with Run.Map and Run.WriteMetrics, from any goroutine.
	Attached(r *Run)
}

// A Value is one argument of a printf() record, as an [Observer] reads
// it in place. The zero Value is an empty string.
type Value struct{ v output.Value }

// Int is an integer's value as a signed one.
func (v Value) Int() int64 { return v.v.Int() }

// Uint is an integer's value as an unsigned one; the address of a
// pointer or a symbol.
func (v Value) Uint() uint64 { return v.v.Uint() }

// Text is the text of a string or of a value printed as text (comm,
// probe, username…), or a symbol's name.
func (v Value) Text() string { return v.v.Text() }

// NumFrames is how many frames a stack has; 0 for a value that is not
// a stack.
func (v Value) NumFrames() int { return len(v.v.Frames()) }

// Frame is a stack's frame i, innermost first.
func (v Value) Frame(i int) Frame {
	f := v.v.Frames()[i]
	return Frame{Addr: f.Addr, Symbol: f.Symbol, Offset: f.Offset, Module: f.Module}
}

// Interface is the value as the Go type [Map] says values of its type
// have.
func (v Value) Interface() any { return convertValue(v.v) }

// String is the value as print() prints it.
func (v Value) String() string {
	return text(compat.Current, func(w *output.Writer) error { return w.Value(v.v) })
}

// ValueOf makes the Value an Observer would be given for x, of one of
// the Go types [Map] lists for integers, bools, strings, pointers
// (uintptr) and kernel stacks ([]Frame), so that observers can be tested
// without a run. Other types give the zero Value.
func ValueOf(x any) Value {
	switch x := x.(type) {
	case int64:
		return Value{output.Int(x)}
	case uint64:
		return Value{output.Uint(x)}
	case bool:
		return Value{output.Bool(x)}
	case string:
		return Value{output.String(x)}
	case uintptr:
		return Value{output.Pointer(uint64(x))}
	case []Frame:
		frames := make([]output.Frame, len(x))
		for i, f := range x {
			frames[i] = output.Frame{Addr: f.Addr, Symbol: f.Symbol, Offset: f.Offset, Module: f.Module}
		}
		return Value{output.Kstack(output.StackBpftrace, frames)}
	}
	return Value{output.String("")}
}

// observe makes the runtime's options opts of a run of p call o with
// what the run would print.
func observe(o Observer, p *Program, opts *session.Options) {
	// Each printf's probe and format, written out once.
	probes := make([]string, len(p.out.Actions))
	formats := make([]string, len(p.out.Actions))
	for i, a := range p.out.Actions {
		if a.Probe != nil && a.Probe.Syntax != nil {
			probes[i] = probeName(a.Probe.Syntax.Points)
		}
		if a.Kind == codegen.ActPrintf {
			formats[i] = a.Format.String()
		}
	}
	var args []Value // reused from record to record
	opts.Printf = func(w io.Writer, a *codegen.Action, vals []output.Value) (bool, error) {
		args = args[:0]
		for _, v := range vals {
			args = append(args, Value{v})
		}
		return o.Printf(w, probes[a.ID], formats[a.ID], args)
	}
	opts.PrintMap = func(w io.Writer, m *output.Map, top, div uint32) (bool, error) {
		return o.Record(w, &PrintMap{Map: convertMap(m), Top: uint64(top), Div: uint64(div),
			text: text(p.out.Compat, func(w *output.Writer) error { return w.Map(m, top, div) })})
	}
	opts.Lost = func(w io.Writer, n uint64) (bool, error) {
		return o.Record(w, &Lost{Count: n})
	}
	opts.ExitMaps = func(w io.Writer, maps []*output.Map) ([]*output.Map, error) {
		converted := make([]*Map, len(maps))
		for i, m := range maps {
			converted[i] = convertMap(m)
		}
		rest, err := o.Maps(w, converted)
		var print []*output.Map
		for _, m := range rest {
			if m.src == nil {
				return nil, errors.Join(err, fmt.Errorf("kinst: Observer.Maps returned map %s, which the run did not read", m.Name))
			}
			print = append(print, m.src)
		}
		return print, err
	}
}

// KeepSymbols reads the mappings of process pid now, so that the user
// stacks and symbols the run resolves once it has exited still name
// its functions, as bpftrace's symbol cache keeps them: a profiler
// calls it the first time it samples a process.
func (r *Run) KeepSymbols(pid int) error {
	if r == nil || r.done == nil {
		return errNoRun
	}
	return r.usyms.Remember(pid)
}

// WriteMetrics writes the run's maps as they stand, in Prometheus's
// text format, as kinst --prometheus serves them: a metric family per
// map, its keys labelled after the expressions the program keys it
// by, and kinst's counters of lost records and full maps.
func (r *Run) WriteMetrics(w io.Writer) error {
	if r == nil || r.done == nil {
		return errNoRun
	}
	r.mu.Lock()
	reader := r.reader
	r.mu.Unlock()
	if reader == nil {
		return errors.New("kinst: the run reads no maps yet")
	}
	r.metricsOnce.Do(func() {
		r.metrics.SetLabels(prom.KeyLabels(r.prog.out))
		r.metrics.SetSource(reader)
	})
	return r.metrics.Write(w)
}

// ProfileOptions say what WriteProfile puts in a profile besides the
// samples.
type ProfileOptions struct {
	// Maps names the maps that become sample types, in order; nil takes
	// every map keyed by a stack.
	Maps []string
	// Labels names the key elements that are not stacks by position;
	// a missing name gives "key" and the position.
	Labels []string
	// Period, when not zero, is the CPU time a sample of the first map
	// stands for: its samples gain a "cpu" value in nanoseconds.
	Period time.Duration
	// Start and Duration are when the profile was taken.
	Start    time.Time
	Duration time.Duration
}

// WriteProfile writes maps of a run keyed by kernel or user stacks as a
// pprof profile (profile.proto, gzipped), as kinst -f pprof writes it.
func WriteProfile(w io.Writer, maps []*Map, opts ProfileOptions) error {
	srcs, err := sources(maps)
	if err != nil {
		return err
	}
	return pprof.Write(w, srcs, pprof.Options{Maps: opts.Maps, Labels: opts.Labels, Period: int64(opts.Period),
		Start: opts.Start, Duration: opts.Duration})
}

// WriteFolded writes a map of a run keyed by stacks as folded stacks,
// the lines flame graph tools read: per distinct stack, the key
// elements at positions roots (nil: every one that is not a stack) as
// its outermost frames, then the user and the kernel frames, root
// first, joined by semicolons, a space and the total of the values.
func WriteFolded(w io.Writer, m *Map, roots []int) error {
	srcs, err := sources([]*Map{m})
	if err != nil {
		return err
	}
	return pprof.WriteFolded(w, srcs[0], roots)
}

// sources are the runtime's maps maps were read from.
func sources(maps []*Map) ([]*output.Map, error) {
	srcs := make([]*output.Map, len(maps))
	for i, m := range maps {
		if m == nil || m.src == nil {
			return nil, errors.New("kinst: a map not read from a run")
		}
		srcs[i] = m.src
	}
	return srcs, nil
}
