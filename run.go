package kinst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"kinst.dev/kinst/internal/runhook"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/runtime"
)

// ErrNoMap reports a map the program does not have.
var ErrNoMap = errors.New("no such map")

// A Handler receives each record a running program sends: one of
// *[Printf], *[Print], *[PrintMap], *[System], *[Cat], *[Time], *[Join],
// *[Exit] and *[Lost]. Records arrive one at a time, in the order the
// kernel queued them, on a goroutine of the run; a slow handler delays
// the records behind it and, when the ring buffer fills, makes the
// kernel drop new ones (reported by a Lost record). A handler may read
// maps with Run.Map, but must not call Stop or Wait, which wait for it:
// to end the run from a handler, cancel the context given to Start.
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
	Buffering runtime.Buffering
	Quiet     bool
	// Stdout receives the two blank lines bpftrace prints before the
	// maps at the end, to standard output even when -o names a file;
	// nil means Output.
	Stdout io.Writer
	// Signals carries the signals the caller caught for the run: the
	// package catches none. SIGUSR1 runs the self:signal:SIGUSR1 probes
	// (and prints the maps to Output in the 0.17 mode). Any other
	// arriving before BEGIN ran makes Start fail with a
	// [runtime.InterruptError]; after, the first stops the run as Stop
	// does, and a second one, or one arriving while the run ends by
	// itself or while the output takes no writes, ends the process by
	// that signal, as the kinst command ends.
	Signals <-chan os.Signal

	// hook, set through kinst.dev/kinst/internal/runhook, adjusts
	// the runtime's options before the run, for what this package does
	// not offer: the kinst command's exporters and instruments.
	hook runhook.Func
}

func init() {
	runhook.Register(func(ro any, f runhook.Func) { ro.(*RunOptions).hook = f })
}

// A Run is one run of a program. Its probes stay attached until the
// program calls exit(), Stop is called or the context given to Start is
// done; then END runs, the maps are read a last time and every probe is
// detached.
type Run struct {
	cancel   context.CancelFunc
	done     chan struct{}
	err      error // valid once done is closed
	mu       sync.Mutex
	reader   *runtime.MapReader
	final    []*output.Map // the maps after END; nil until then
	finished bool
}

// Start loads the program into the kernel, runs BEGIN and attaches every
// probe, and returns once they are attached, or once the program ended
// if BEGIN called exit(). h may be nil to ignore records. A program the
// kernel refuses to load is an error here: a [runtime.VerifierError]
// when the verifier rejected a probe, wrapping the kernel's errno
// otherwise (errors.Is(err, unix.EPERM) without the privilege).
//
// Unlike the kinst command, a Run catches no signal.
func (p *Program) Start(ctx context.Context, h Handler) (*Run, error) {
	return p.StartWith(ctx, h, nil)
}

// StartWith starts the program as Start does, with ro saying how the run
// prints; nil ro is the zero RunOptions.
func (p *Program) StartWith(ctx context.Context, h Handler, ro *RunOptions) (*Run, error) {
	if ro == nil {
		ro = &RunOptions{}
	}
	if h != nil && ro.Output != nil {
		return nil, errors.New("kinst: records go to RunOptions.Output: no Handler is called then")
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Run{cancel: cancel, done: make(chan struct{})}
	attached := make(chan struct{})
	opts := p.runOptions()
	opts.Out, opts.Stdout, opts.Quiet = ro.Output, ro.Stdout, ro.Quiet
	if opts.Stdout == nil {
		opts.Stdout = opts.Out
	}
	if ro.JSON {
		opts.Format = runtime.JSON
	}
	opts.Buffering, opts.Signals = ro.Buffering, ro.Signals
	if ro.Output == nil {
		opts.Out, opts.Stdout, opts.Quiet = io.Discard, io.Discard, true
		opts.Records = func(rec *runtime.Record) error {
			if h != nil {
				h(convertRecord(rec))
			}
			return nil
		}
		opts.ExitMaps = func(maps []*output.Map) error {
			r.mu.Lock()
			r.final = maps
			r.mu.Unlock()
			return nil
		}
	}
	if ro.hook != nil {
		ro.hook(p.out, &opts)
	}
	// Run.Map and Start's return need these two hooks: a runhook
	// function's own are chained with them.
	maps, attachedHook := opts.Maps, opts.Attached
	opts.Maps = func(mr *runtime.MapReader) {
		r.mu.Lock()
		r.reader = mr
		r.mu.Unlock()
		if maps != nil {
			maps(mr)
		}
	}
	opts.Attached = func() {
		if attachedHook != nil {
			attachedHook()
		}
		close(attached)
	}
	go func() {
		r.err = runtime.Run(ctx, p.out, &opts)
		r.mu.Lock()
		r.finished = true
		r.mu.Unlock()
		close(r.done)
	}()
	select {
	case <-attached:
		return r, nil
	case <-r.done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		return r, nil
	}
}

// runOptions are the runtime's options for a run or a load of p, from
// its Options and the environment.
func (p *Program) runOptions() runtime.Options {
	o := p.run
	o.Verbose, o.Command, o.FileActivation = p.opts.Verbose, p.opts.Command, p.opts.FileActivation
	o.Stderr, o.NoWarnings = p.opts.Stderr, p.opts.Warnings == nil
	if o.Stderr == nil {
		o.Stderr = p.opts.Warnings
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return o
}

// Stop ends the run: it detaches the probes, runs END, reads the maps a
// last time and returns what Wait returns. Stopping a run that has
// ended does nothing more.
func (r *Run) Stop() error {
	r.cancel()
	return r.Wait()
}

// Wait waits for the run to end and returns why it failed, if it did.
// A run ends when the program calls exit() or is stopped.
func (r *Run) Wait() error {
	<-r.done
	r.cancel()
	return r.err
}

// Map reads a map by the name the program gives it, such as "@bytes":
// its current contents while the run goes on, its contents after END
// once it has ended (unless they went to RunOptions.Output). A name the
// program does not use is an error matching [ErrNoMap].
func (r *Run) Map(name string) (*Map, error) {
	r.mu.Lock()
	final, reader, finished := r.final, r.reader, r.finished
	r.mu.Unlock()
	switch {
	case final == nil && finished && r.err == nil:
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
	case errors.Is(err, runtime.ErrEnded):
		// The run ended after the check above: the final maps are in.
		return r.Map(name)
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("map %s: %w", name, ErrNoMap)
	}
	return convertMap(m), nil
}
