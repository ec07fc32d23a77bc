package kinst

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

// ErrNoMap reports a map the program does not have.
var ErrNoMap = errors.New("no such map")

// A Handler receives each record a running program sends: one of
// *[Printf], *[Print], *[PrintMap], *[System], *[Cat], *[Time], *[Join],
// *[Exit] and *[Lost]. Records arrive one at a time, in the order the
// kernel queued them, on a goroutine of the run; a slow handler delays
// the records behind it and, when the ring buffer fills, makes the
// kernel drop new ones (reported by a Lost record). A handler may read
// maps with Run.Map and end the run with Run.Stop or Run.StopContext,
// which then return at once; Wait, which would wait for the handler
// itself, returns an error there.
type Handler func(Record)

// RunOptions say how a run prints; the zero RunOptions send every
// record to the Handler and print nothing.
type RunOptions struct {
	// Output, when set, receives what the program prints, byte for byte
	// as bpftrace prints it: records as they come, the maps at the end.
	// Records then reach no Handler. JSON prints bpftrace's JSON lines
	// (-f json) in place of text; Buffering says when output is written
	// (-B); Quiet leaves out the "Attaching N probes..." line.
	Output    io.Writer
	JSON      bool
	Buffering Buffering
	Quiet     bool
	// Stdout receives what bpftrace writes to standard output even when
	// -o names a file: in the 0.17 mode the two blank lines before the
	// maps at the end, otherwise the __BPFTRACE_NOTIFY_PROBES_ATTACHED
	// line; nil means Output.
	Stdout io.Writer
	// Signals carries the signals the caller caught for the run: the
	// package catches none. SIGUSR1 runs the self:signal:SIGUSR1 probes
	// (and prints the maps to Output in the 0.17 mode). Any other
	// arriving before BEGIN ran makes Start fail with a
	// [InterruptError]; after, the first stops the run as Stop
	// does, and a second one, or one arriving while the run ends by
	// itself or while the output takes no writes, ends the process by
	// that signal, as the kinst command ends.
	Signals <-chan os.Signal
	// Observer, when set, sees what the run sends before it is printed
	// to Output, and may print it its own way: see [Observer].
	Observer Observer
	// Mode, when RunTests or RunBenchmarks, runs the program's test or
	// bench probes as bpftrace 0.26.1's --test and --bench do, and
	// prints their results to Output, which it needs. Start then returns
	// once the run has ended, with a [FailedError] when tests or
	// benchmarks failed.
	Mode Mode
}

// A Run is one run of a program. Its probes stay attached until the
// program calls exit(), Stop is called or the context given to Start is
// done; then END runs, the maps are read a last time and every probe is
// detached.
type Run struct {
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	done     chan struct{}
	err      error  // valid once done is closed
	gid      uint64 // the goroutine of the run, which calls the handler
	dropping atomic.Bool
	dropped  uint64 // records not handed over, counted by the run's goroutine
	mu       sync.Mutex
	dropErr  error         // why records are dropped: the error of StopContext's context
	unwatch  []func() bool // StopContext's watches of contexts, to end with the run
	reader   *session.MapReader
	final    []*output.Map // the maps after END; nil until then
	finished bool
	printed  bool // the maps went to RunOptions.Output

	prog        *Program
	usyms       *elfsym.Symbolizer // the run's, which KeepSymbols fills
	metricsOnce sync.Once
	metrics     prom.Gatherer // WriteMetrics', set up at its first call
}

// A DropError reports records that never reached the Handler: the
// context given to Run.StopContext was done before the run had handed
// over all it had queued.
type DropError struct {
	// Count is how many records were dropped, including those the
	// kernel reported lost meanwhile.
	Count uint64
	// Err is the context's error.
	Err error
}

func (e *DropError) Error() string {
	return fmt.Sprintf("kinst: %d records dropped, not handed to the handler: %v", e.Count, e.Err)
}

func (e *DropError) Unwrap() error { return e.Err }

// An ExitError is Run.Wait's error when the program ended by calling
// exit() with a code other than 0.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return (&session.ExitError{Code: e.Code}).Error() }

// A VerifierError is Start's or Load's error when the kernel's verifier
// refused a probe's program: it points at the source the refused
// instruction came from.
type VerifierError struct {
	// File, Line and Column locate the refused instruction's source,
	// Column counting bytes from 1; Line is 0 when there is none.
	File         string
	Line, Column int
	// Msg names the probe and says why the kernel refused it, in the
	// verifier's words and, when the program can be changed to please
	// it, what to change.
	Msg string
	// Log is the verifier's log.
	Log []string
	// Err is the loader's error, which wraps the kernel's errno.
	Err error

	session *session.VerifierError // the runtime's, which quotes the source
}

// Error gives the position and Msg: "file:line:col: msg".
func (e *VerifierError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Unwrap returns the loader's error, so that errors.Is(err, unix.EPERM)
// tells a missing privilege.
func (e *VerifierError) Unwrap() error { return e.Err }

// Detail renders the error as the kinst command prints it: Error's
// text, then, for an error Start or Load returned, the source line with
// a caret under what was refused and, when verbose, the last lines of
// the verifier's log.
func (e *VerifierError) Detail(verbose bool) string {
	s := e.session
	if s == nil {
		s = &session.VerifierError{Err: &syntax.Error{Msg: e.Error()}, Log: e.Log}
	}
	return s.Detail(verbose)
}

// An InterruptError is Start's error when a signal of
// RunOptions.Signals arrived before BEGIN ran.
type InterruptError struct {
	Signal os.Signal
}

func (e *InterruptError) Error() string { return (&session.InterruptError{Signal: e.Signal}).Error() }

// A FileLimitError is Start's error when the probes need more file
// descriptors than the process may open (RLIMIT_NOFILE).
type FileLimitError struct {
	Probes int    // the probes the program attaches
	Limit  uint64 // the soft limit
}

func (e *FileLimitError) Error() string {
	return (&session.FileLimitError{Probes: e.Probes, Limit: e.Limit}).Error()
}

// Unwrap returns EMFILE, the kernel's error past the limit.
func (e *FileLimitError) Unwrap() error { return syscall.EMFILE }

// apiError gives the runtime's errors that callers name, which it
// returns as they are, this package's types.
func apiError(err error) error {
	switch e := err.(type) {
	case *session.ExitError:
		return &ExitError{Code: e.Code}
	case *session.InterruptError:
		return &InterruptError{Signal: e.Signal}
	case *session.FileLimitError:
		return &FileLimitError{Probes: e.Probes, Limit: e.Limit}
	case *session.FailedError:
		return &FailedError{Mode: Mode(e.Mode), Names: e.Names}
	case *session.VerifierError:
		ve := &VerifierError{Msg: e.Err.Msg, Log: e.Log, Err: e.Cause, session: e}
		if e.Err.File != nil {
			p := e.Err.File.Position(e.Err.Pos)
			ve.File, ve.Line, ve.Column = p.Filename, p.Line, p.Column
		}
		return ve
	}
	return err
}

// A FailedError is Wait's error when tests or benchmarks failed in the
// mode RunOptions.Mode asked for: the output says which and why.
type FailedError struct {
	Mode  Mode
	Names []string // the tests or benchmarks that failed
}

func (e *FailedError) Error() string {
	return (&session.FailedError{Mode: session.Mode(e.Mode), Names: e.Names}).Error()
}

// Mode says what a run runs: the probes, or bpftrace 0.26.1's test or
// bench probes.
type Mode int

// The modes of RunOptions.Mode. RunTests and RunBenchmarks run BEGIN,
// then each test or bench probe in source order, then END; nothing else
// is attached and the maps are not printed at the end. In RunProbes,
// the default, test and bench probes are left alone.
const (
	RunProbes Mode = iota
	RunTests
	RunBenchmarks
)

// Buffering says when RunOptions.Output is written, as -B does.
type Buffering int

// The buffering modes of -B.
const (
	BufferDrained Buffering = iota // when no record is waiting: prompt, and cheap under load
	BufferLine                     // after every record
	BufferFull                     // when 64 KiB are pending, and at the end
	BufferNone                     // as BufferLine: records are written whole
)

// ParseBuffering reads -B's argument: "line", "full" or "none"; ""
// is the default, BufferDrained.
func ParseBuffering(s string) (Buffering, error) {
	switch s {
	case "":
		return BufferDrained, nil
	case "line":
		return BufferLine, nil
	case "full":
		return BufferFull, nil
	case "none":
		return BufferNone, nil
	}
	return 0, fmt.Errorf("-B must be either 'line', 'full', or 'none', not %q", s)
}

// session gives the runtime's mode for b.
func (b Buffering) session() session.Buffering {
	switch b {
	case BufferLine:
		return session.BufferLine
	case BufferFull:
		return session.BufferFull
	case BufferNone:
		return session.BufferNone
	}
	return session.BufferDrained
}

var (
	errNoProgram = errors.New("kinst: the Program was not made by Compile")
	errNoRun     = errors.New("kinst: the Run was not made by Start")
	errWaitInRun = errors.New("kinst: Wait called from the Handler, which the run waits for")
)

// Start loads the program into the kernel, runs BEGIN and attaches every
// probe, and returns once they are attached, or once the program ended
// if BEGIN called exit(). h may be nil to ignore records. A program the
// kernel refuses to load is an error here: a [VerifierError]
// when the verifier rejected a probe, wrapping the kernel's errno
// otherwise (errors.Is(err, unix.EPERM) without the privilege). Once
// ctx is done the run ends, and Wait returns ctx's error; Start returns
// it when ctx is done before the probes are attached.
//
// Unlike the kinst command, a Run catches no signal.
func (p *Program) Start(ctx context.Context, h Handler) (*Run, error) {
	return p.StartWith(ctx, h, nil)
}

// StartWith starts the program as Start does, with ro saying how the run
// prints; nil ro is the zero RunOptions.
func (p *Program) StartWith(ctx context.Context, h Handler, ro *RunOptions) (*Run, error) {
	if p == nil || p.out == nil {
		return nil, errNoProgram
	}
	if ro == nil {
		ro = &RunOptions{}
	}
	if h != nil && ro.Output != nil {
		return nil, errors.New("kinst: records go to RunOptions.Output: no Handler is called then")
	}
	if ro.Mode != RunProbes && ro.Output == nil {
		return nil, errors.New("kinst: tests and benchmarks print their results to RunOptions.Output, which is not set")
	}
	if ro.Mode != RunProbes && p.out.Compat == compat.V017 {
		return nil, errors.New("kinst: bpftrace 0.17 has no test or bench mode")
	}
	r := &Run{stop: make(chan struct{}), done: make(chan struct{}), printed: ro.Output != nil, prog: p, usyms: elfsym.NewSymbolizer()}
	attached := make(chan struct{})
	opts := p.runOptions()
	opts.Out, opts.Stdout, opts.Quiet = ro.Output, ro.Stdout, ro.Quiet
	if opts.Stdout == nil {
		opts.Stdout = opts.Out
	}
	if ro.JSON {
		opts.Format = session.JSON
	}
	opts.Buffering, opts.Signals, opts.Stop, opts.Mode = ro.Buffering.session(), ro.Signals, r.stop, session.Mode(ro.Mode)
	opts.Symbolizer = r.usyms
	if ro.Output == nil {
		opts.Out, opts.Stdout, opts.Quiet = io.Discard, io.Discard, true
		opts.Records = func(rec *session.Record) error {
			switch {
			case h == nil:
			case !r.dropping.Load():
				h(convertRecord(rec, p.out.Compat))
			case rec.Kind == session.RecLost:
				r.dropped += rec.Lost
			default:
				r.dropped++
			}
			return nil
		}
		opts.ExitMaps = func(_ io.Writer, maps []*output.Map) ([]*output.Map, error) {
			r.mu.Lock()
			r.final = maps
			r.mu.Unlock()
			return nil, nil
		}
	} else if ro.Observer != nil {
		observe(ro.Observer, p, &opts)
	}
	opts.Maps = func(mr *session.MapReader) {
		r.mu.Lock()
		r.reader = mr
		r.mu.Unlock()
	}
	opts.Attached = func() {
		if ro.Observer != nil {
			ro.Observer.Attached(r)
		}
		close(attached)
	}
	started := make(chan struct{})
	go func() {
		r.gid = goid()
		close(started)
		err := apiError(session.Run(ctx, p.out, &opts))
		r.mu.Lock()
		r.finished = true
		for _, f := range r.unwatch {
			f()
		}
		if r.dropped > 0 {
			var de error = &DropError{Count: r.dropped, Err: r.dropErr}
			if err != nil {
				de = errors.Join(err, de)
			}
			err = de
		}
		r.mu.Unlock()
		r.err = err
		close(r.done)
	}()
	<-started
	select {
	case <-attached:
		return r, nil
	case <-r.done:
		if r.err != nil {
			return nil, r.err
		}
		return r, nil
	}
}

// goid returns the calling goroutine's id, which Go gives only in the
// first line of a stack trace: "goroutine 7 [running]:".
func goid() uint64 {
	var buf [32]byte
	n := goruntime.Stack(buf[:], false)
	f := bytes.Fields(buf[:n])
	id, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return id
}

// runOptions are the runtime's options for a run or a load of p, from
// its Options and the environment.
func (p *Program) runOptions() session.Options {
	o := p.run
	o.Verbose, o.Command, o.FileActivation = p.opts.Verbose, p.opts.Command, p.opts.FileActivation
	o.Stderr, o.NoWarnings, o.Progress = p.opts.Stderr, p.opts.Warnings == nil, p.opts.Progress
	if o.Stderr == nil {
		o.Stderr = p.opts.Warnings
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return o
}

// Stop ends the run: it detaches the probes, runs END, hands the
// records still queued to the handler, reads the maps a last time and
// returns what Wait returns. Stopping a run that has ended does nothing
// more. Called by the handler, Stop asks the run to end and returns nil
// at once; the run ends once the handler has returned.
func (r *Run) Stop() error {
	return r.StopContext(context.Background())
}

// StopContext ends the run as Stop does, but hands records to the
// handler only until ctx is done: those still queued then, and those END
// sends, are dropped, and the run's error is a [*DropError] counting
// them that matches ctx's error. ctx bounds the records handed over, not
// the handler's call in progress, END, or detaching the probes. A
// context already done ends the run without handing over any more
// records. It bounds as well the end of a run already ending, as one
// whose Start context is done. With RunOptions.Output, every record is
// printed, whatever ctx says. Called by the handler, StopContext asks
// the run to end and returns nil at once.
func (r *Run) StopContext(ctx context.Context) error {
	if r == nil || r.done == nil {
		return errNoRun
	}
	r.mu.Lock()
	switch {
	case r.finished:
	case ctx.Err() != nil:
		// Not a record more, not even while an AfterFunc starts.
		r.dropLocked(ctx)
	default:
		r.unwatch = append(r.unwatch, context.AfterFunc(ctx, func() {
			r.mu.Lock()
			r.dropLocked(ctx)
			r.mu.Unlock()
		}))
	}
	r.mu.Unlock()
	r.stopOnce.Do(func() { close(r.stop) })
	if goid() == r.gid {
		return nil
	}
	return r.Wait()
}

// dropLocked makes the run drop the records it has not handed over yet,
// for ctx's end; r.mu is held.
func (r *Run) dropLocked(ctx context.Context) {
	if r.dropErr == nil {
		r.dropErr = ctx.Err()
	}
	r.dropping.Store(true)
}

// Wait waits for the run to end and returns why it failed, if it did.
// A run ends when the program calls exit() or is stopped. When ctx
// given to Start ended it, that is ctx's error
// (errors.Is(err, context.Canceled)); when the program called exit()
// with a code other than 0, an *[ExitError] carrying it; when
// StopContext dropped records, a *[DropError].
func (r *Run) Wait() error {
	switch {
	case r == nil || r.done == nil:
		return errNoRun
	case goid() == r.gid:
		return errWaitInRun
	}
	<-r.done
	return r.err
}

// Map reads a map by the name the program gives it, such as "@bytes":
// its current contents while the run goes on, its contents after END
// once it has ended (unless they went to RunOptions.Output). A name the
// program does not use is an error matching [ErrNoMap].
func (r *Run) Map(name string) (*Map, error) {
	if r == nil || r.done == nil {
		return nil, errNoRun
	}
	r.mu.Lock()
	final, reader, finished := r.final, r.reader, r.finished
	r.mu.Unlock()
	switch {
	case final == nil && finished && r.printed:
		return nil, fmt.Errorf("map %s: the run has ended and printed its maps to RunOptions.Output", name)
	case final == nil && finished:
		return nil, fmt.Errorf("map %s: the run failed before reading it: %w", name, r.err)
	}
	if final != nil {
		for _, m := range final {
			if m.Name == name {
				return convertMap(m), nil
			}
		}
		return nil, fmt.Errorf("map %s: %w", name, ErrNoMap)
	}
	m, ok, err := reader.Map(name)
	switch {
	case errors.Is(err, session.ErrEnded):
		// The run ended after the check above: the final maps are in.
		return r.Map(name)
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("map %s: %w", name, ErrNoMap)
	}
	return convertMap(m), nil
}
