package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/inject"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

// Options say how to run a program.
type Options struct {
	// Out receives everything the program prints; Format picks text or
	// JSON.
	Out    io.Writer
	Format Format
	// Stdout receives what bpftrace writes to standard output even when
	// Out is a file: in the 0.17 mode the blank lines before the maps at
	// exit, otherwise the NotifyAttached line.
	Stdout io.Writer
	// Stderr receives warnings, and in the text format of bpftrace
	// 0.26.1 the "Attached N probes" and "Lost N events" lines.
	Stderr io.Writer
	// Quiet drops the "Attaching N probes..." ("Attached N probes") line.
	Quiet bool
	// Progress, when set, receives a line rewritten in place saying how
	// far loading, attaching or detaching has got when one takes more
	// than a second: it is meant for a terminal.
	Progress io.Writer
	// Verbose adds the verifier's log to load errors.
	Verbose bool
	// Command is run under -c: started before attaching, released once
	// every probe is attached (to exec, where the stub serves: see
	// execstub.go), and waited for.
	Command []string
	// Pid restricts uprobes to one process; the run ends when it exits.
	Pid int
	// FileActivation raises USDT semaphores in every process mapping
	// the probe's file, where kinst raises them itself.
	FileActivation bool
	// Signals carries the signals the caller caught for the run, which
	// catches none itself; nil means none reach it. SIGUSR1 runs the
	// self:signal:SIGUSR1 probes (and prints the maps in the 0.17
	// mode); any other stops the run, as Run says.
	Signals <-chan os.Signal
	// Buffering says when output reaches Out (bpftrace's -B).
	Buffering Buffering
	// CatMax bounds the bytes cat() prints of a file; 0 means the
	// default, DefaultCatMax. NoCat prints none.
	CatMax int64
	NoCat  bool
	// StrTrailer ends the strings that were cut short, in the default
	// mode; "" means the default, DefaultStrTrailer. NoStrTrailer
	// (an empty str_trunc_trailer) ends them with nothing.
	StrTrailer   string
	NoStrTrailer bool
	// NoUserSymbols prints user addresses (usym, ustack) in hex;
	// NoSymbolCache reads a process's mappings and symbols afresh for
	// every address, for processes that load libraries as they run.
	NoUserSymbols bool
	NoSymbolCache bool
	// ProgramSymbols, bpftrace 0.26.1's PER_PROGRAM symbol cache,
	// resolves the frames of a process gone before kinst read its
	// mappings in the one program the uprobes name, where that program
	// is position-dependent: as linked, its symbol table places them.
	ProgramSymbols bool
	// NoWarnings drops warnings: -k reports, skipped targets and full
	// maps.
	NoWarnings bool
	// NoExitMaps leaves the maps unprinted at exit (bpftrace 0.26.1's
	// print_maps_on_exit = false).
	NoExitMaps bool
	// NoDebugInfo prints user stacks without the source lines and
	// inlined functions DWARF gives (bpftrace 0.26.1's show_debug_info
	// = false). The 0.17 mode never prints them.
	NoDebugInfo bool
	// LogSize is the verifier log's first size in bytes; 0 for the
	// default. The log grows as the verifier needs.
	LogSize uint32
	// PacketPages is how many pages of packets skboutput() may queue on
	// each CPU; 0 for DefaultPacketPages.
	PacketPages int
	// NotifyAttached prints bpftrace's __BPFTRACE_NOTIFY_PROBES_ATTACHED
	// line once every probe is attached: on Stdout, or on Stderr in the
	// 0.17 mode.
	NotifyAttached bool

	// Printf, when set, receives every printf record before the output
	// writer, with its arguments decoded, and may write what it makes
	// of it to w, a buffer onto Out flushed whenever the ring buffer is
	// drained: instruments render their own log lines. The record is
	// printed as bpftrace prints it unless Printf says it handled it.
	// The slice is reused after Printf returns.
	Printf func(w io.Writer, a *codegen.Action, args []output.Value) (handled bool, err error)
	// ExitMaps, when set, receives the maps at exit before the output
	// writer, which prints those it returns as bpftrace does; none
	// returned, nothing is printed. It writes to w as Printf.
	ExitMaps func(w io.Writer, maps []*output.Map) (rest []*output.Map, err error)
	// PrintMap, when set, receives each map print() prints, with its
	// top and divisor, before the writer; it writes to w as Printf.
	PrintMap func(w io.Writer, m *output.Map, top, div uint32) (handled bool, err error)
	// Lost, when set, receives each report of lost records before the
	// writer's "Lost N events" line; w is the buffer Printf writes to.
	Lost func(w io.Writer, n uint64) (handled bool, err error)
	// Symbolizer, when set, resolves user addresses; a caller that
	// remembers processes in it while they live keeps their symbols
	// after they exit.
	Symbolizer *elfsym.Symbolizer
	// Maps, when set, is called before BEGIN runs with a reader of the
	// program's maps, which other goroutines may use until Run returns.
	Maps func(r *MapReader)
	// Records, when set, receives every record the program sends, in
	// place of the writer and of the hooks above but ExitMaps: the API
	// hands them to its caller as Go values. system() and cat() are
	// carried out first, and the record holds what they printed.
	Records func(r *Record) error
	// Attached, when set, is called once every probe is attached, before
	// the first record after BEGIN's is handled.
	Attached func()
	// Stop, once closed, stops the run as a first signal does, without
	// making it an error: the API's Run.Stop.
	Stop <-chan struct{}
	// Mode says what runs: the probes, or bpftrace 0.26.1's tests or
	// benchmarks (see RunTests). Records must be nil in those modes.
	Mode Mode
}

// Format is an output format.
type Format int

// The output formats.
const (
	Text Format = iota
	JSON
)

// Session is one run of a compiled program.
type Session struct {
	outw    *outputWriter // the output, under buf
	readErr error         // the ring buffer could not be read
	runErr  error         // a watchpoint could not be set
	out     *codegen.Output
	opts    *Options
	coll    *ebpf.Collection
	dec     *decoder
	w       *output.Writer
	errw    *output.Writer // Stderr's, for 0.26.1's text messages there
	buf     *bufio.Writer
	rd      *ringbuf.Reader
	links   []io.Closer
	ncpu    int
	lostMem *ebpf.Memory // the lost-records counter, mapped
	// loaded are the programs in the kernel: each codegen program, or
	// its fallback where the kernel refused it.
	loaded []*codegen.Program
	cmd    *command

	captured *bytes.Buffer                  // what the test or bench running prints, in text
	errCount int                            // errorf() calls and failed helpers while capturing
	ctx      context.Context                // done once a signal stops the run
	stopping atomic.Bool                    // a signal, the command's end or exit()
	signal   atomic.Pointer[os.Signal]      // the signal that stopped the run
	printNow atomic.Bool                    // SIGUSR1 asks for the maps (bpftrace 0.17)
	usr1Now  atomic.Bool                    // SIGUSR1 asks for the self:signal probes
	reader   atomic.Pointer[ringbuf.Reader] // rd, for other goroutines to wake
	exited   bool                           // exit() was called
	exitCode int                            // the code exit() was given
	byCtx    atomic.Bool                    // Run's context stopped the run
	packets  *packets                       // skboutput()'s, while they are written
	lost     uint64                         // lost records already reported
	attached uint64                         // targets attached
	args     [][]output.Value               // per action, the decoded arguments, reused
	watchMu  sync.Mutex                     // watches: END's unwatch() runs while the run detaches
	watches  map[watchKey][]io.Closer       // watchpoints set at run time
	noWatch  bool                           // detach took the watchpoints: no more are set
	stopped  bool                           // a watchpoint setup stopped the traced process
}

// An ExitError says the program called exit() with a status other than
// 0, which the command exits with.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("the program exited with status %d", e.Code) }

// An InterruptError says a signal ended the run before any probe ran:
// nothing was printed, and what was loaded is unloaded again.
type InterruptError struct {
	Signal os.Signal
}

func (e *InterruptError) Error() string { return "interrupted by " + e.Signal.String() }

// Run runs a compiled program until it exits, its -c command or its
// Pid's process ends, a signal arrives, opts.Stop is closed or ctx is done. Whatever happens,
// probes are detached and maps printed before it returns. Unless
// something failed, when ctx's end stopped the run Run returns ctx's
// error, and when the program called exit() with a code other than 0,
// an *ExitError: the caller asked for neither end.
//
// The signals on opts.Signals count from the start. One arriving before
// BEGIN runs unloads what was loaded and makes Run return an
// *InterruptError. Once BEGIN has run, the first stops the run where it
// is: an attach in progress is rolled back, and END runs and the maps
// are printed as at any other end. One arriving while the run is already
// ending (after exit() or the -c command's end), or the second signal,
// ends the process at once with ExitBySignal, the second no sooner than
// a second after the first: descriptors own everything kinst put into
// the kernel, and the -c command dies with it.
// SIGUSR1 runs the self:signal:SIGUSR1 probes, and in the 0.17 mode
// prints the maps, and the run goes on, as in bpftrace.
func Run(ctx context.Context, out *codegen.Output, opts *Options) (err error) {
	s := &Session{out: out, opts: opts, args: make([][]output.Value, len(out.Actions))}
	defer func() { err = s.fileLimit(err) }()
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	var cancel context.CancelFunc
	s.ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	// A signal and opts.Stop cancel s.ctx too, but leave ctx alone; a
	// ctx done once the run was ending anyway did not stop it, and one
	// done when opts.Stop is closed did.
	unwatch := context.AfterFunc(s.ctx, func() {
		if ctx.Err() != nil && !s.stopping.Swap(true) {
			s.byCtx.Store(true)
		}
		s.stop()
	})
	defer unwatch()
	s.outw = &outputWriter{w: opts.Out}
	ended := make(chan struct{})
	defer close(ended)
	go s.watch(opts.Signals, opts.Stop, cancel, ended)

	s.buf = bufio.NewWriterSize(s.outw, 64<<10)
	if opts.Format == JSON {
		s.w = output.NewJSON(s.buf, out.Compat)
		s.errw = s.w
	} else {
		s.w = output.NewText(s.buf, out.Compat)
		s.errw = s.w
		if out.Compat != compat.V017 {
			s.errw = output.NewText(opts.Stderr, out.Compat)
		}
	}
	defer s.buf.Flush()
	// Only per-CPU maps need the number of possible CPUs: a program
	// without them does not parse it from sysfs.
	if slices.ContainsFunc(out.Maps, func(m *codegen.Map) bool { return m.PerCPU }) {
		if s.ncpu, err = ebpf.PossibleCPU(); err != nil {
			return err
		}
	}
	if err := s.load(); err != nil {
		return s.interrupted(err)
	}
	defer s.coll.Close()
	usyms := opts.Symbolizer
	if usyms == nil {
		usyms = elfsym.NewSymbolizer()
	}
	s.dec = &decoder{out: out, kstacks: s.coll.Maps[codegen.KstackMap], ustacks: s.coll.Maps[codegen.UstackMap], buildID: s.coll.Maps[codegen.BuildIDStackMap], usyms: usyms,
		trailer: opts.strTrailer(out.Compat), noUserSymbols: opts.NoUserSymbols, noSymbolCache: opts.NoSymbolCache,
		debugInfo: out.Compat != compat.V017 && !opts.NoDebugInfo}
	if opts.ProgramSymbols {
		s.dec.program = probedProgram(out.Targets)
	}
	if s.lostMem, err = s.coll.Maps[codegen.LostMap].Memory(); err != nil {
		return fmt.Errorf("map the lost-records counter: %w", err)
	}
	if err := s.startPackets(); err != nil {
		return err
	}
	defer s.stopPackets()
	if opts.Maps != nil {
		r := &MapReader{s: s, dec: &decoder{out: out, kstacks: s.dec.kstacks, ustacks: s.dec.ustacks, buildID: s.dec.buildID, usyms: usyms,
			trailer: s.dec.trailer, noUserSymbols: opts.NoUserSymbols, noSymbolCache: opts.NoSymbolCache, program: s.dec.program,
			debugInfo: s.dec.debugInfo}}
		defer r.end()
		opts.Maps(r)
	}
	rd, err := ringbuf.NewReader(s.coll.Maps[codegen.EventsMap])
	if err != nil {
		return fmt.Errorf("open ring buffer: %w", err)
	}
	defer rd.Close()
	s.rd = rd
	s.reader.Store(rd)

	if len(opts.Command) > 0 && opts.Mode == RunProbes {
		if s.cmd, err = startCommand(opts.Command, s.needsExec()); err != nil {
			return err
		}
		defer s.cmd.kill()
	}
	var proc *procWatch
	if opts.Pid != 0 {
		proc = watchProcess(opts.Pid)
		defer proc.close()
	}
	if err := s.setConsts(); err != nil {
		return err
	}
	if err := s.interrupted(nil); err != nil {
		return err
	}
	if opts.Mode != RunProbes {
		return s.runMode(ctx)
	}
	if err := s.nothingToAttach(); err != nil {
		return err
	}

	old := out.Compat == compat.V017
	if !opts.Quiet && old {
		s.w.AttachedProbes(uint64(len(out.Targets)))
		s.buf.Flush()
	}
	// BEGIN runs before anything else attaches, so that what it sets up
	// is in place when the first event fires. 0.17 prints what it sent
	// and stops at its exit() before attaching; 0.26.1 attaches all the
	// same, and prints it after saying so.
	if err := s.runSpecial("BEGIN"); err != nil {
		return err
	}
	if old {
		s.drain()
	}
	if !s.exited {
		if err := s.attachAll(); err != nil {
			s.detach()
			return err
		}
		if !old && !s.stopping.Load() {
			s.attachedNow()
		}
		if err := s.runIterators(); err != nil {
			s.detach()
			return err
		}
	}
	if old && (!s.stopping.Load() || s.exited) && opts.NotifyAttached {
		// bpftrace's test engine waits for this line on standard error
		// before it starts its workload.
		fmt.Fprintln(opts.Stderr, "__BPFTRACE_NOTIFY_PROBES_ATTACHED")
	}
	if !old {
		s.drain()
		if !s.stopping.Load() && s.onlySpecial() {
			// 0.26.1 ends a program that has only BEGIN and END probes
			// once BEGIN has run.
			s.stop()
		}
	}
	if !s.stopping.Load() {
		if s.cmd != nil {
			// bpftrace 0.17 leaves a command's frames unknown once it has
			// gone, which its mode keeps in text; profiles resolve them.
			keep := !old || opts.ExitMaps != nil
			if keep && s.coll.Maps[codegen.UstackMap] != nil && !opts.NoUserSymbols && !opts.NoSymbolCache {
				rememberCommand(s.cmd, s.dec.usyms)
			}
			if err := s.cmd.release(); err != nil {
				s.detach()
				return err
			}
			go func() {
				s.cmd.wait()
				s.stop()
			}()
		}
		if proc != nil {
			go func() {
				if proc.wait() {
					s.stop()
				}
			}()
		}
		if opts.Attached != nil {
			opts.Attached()
		}
		s.loop()
	}
	// Detaching takes an RCU grace period per probe; it runs while END
	// and the maps are printed, and is waited for before returning.
	detached := make(chan error, 1)
	go func() { detached <- s.detach() }()
	if s.exited {
		// As in bpftrace, what probes sent after exit() is dropped: once
		// none can send more, the ring buffer holds only such records.
		detachErr := <-detached
		detached <- detachErr
		s.discard()
		// END runs after exit() too, and what it prints must be read.
		s.exited = false
	}
	inject.Delay(context.Background(), inject.End)
	if err := s.runSpecial("END"); err != nil {
		<-detached
		return err
	}
	s.drain()
	s.reportLost()
	s.reportFull()
	s.reportStacks()
	printErr := s.printMaps(true)
	detachErr := <-detached
	// Once the probes are detached, the packets queued are all there is.
	detachErr = errors.Join(detachErr, s.stopPackets())
	if s.outw.err != nil {
		// One sentence for the failed output, not one per record.
		return errors.Join(fmt.Errorf("write output: %w", s.outw.err), detachErr)
	}
	if err := errors.Join(s.readErr, s.runErr, printErr, detachErr); err != nil {
		return err
	}
	return s.endErr(ctx)
}

// endErr says why the run ended when the caller did not ask for it to:
// ctx ended it, or exit() was given a code other than 0.
func (s *Session) endErr(ctx context.Context) error {
	switch {
	case s.byCtx.Load():
		return ctx.Err()
	case s.exitCode != 0:
		return &ExitError{Code: s.exitCode}
	}
	return nil
}

// attachedNow says, as 0.26.1 does once every probe is attached, how many
// are: one per function or other target attached, and one per BEGIN and
// END program. The line goes to standard error in the text format.
func (s *Session) attachedNow() {
	if !s.opts.Quiet {
		s.buf.Flush()
		s.errw.AttachedProbes(s.attached + uint64(s.special()))
		s.buf.Flush()
	}
	if s.opts.NotifyAttached {
		// bpftrace's test engine waits for this line on standard output
		// before it starts its workload.
		fmt.Fprintln(s.opts.Stdout, "__BPFTRACE_NOTIFY_PROBES_ATTACHED")
	}
}

// special counts the programs kinst runs itself, as 0.26.1 counts them
// among the attached: BEGIN, END and self:signal.
func (s *Session) special() int {
	n := 0
	for _, p := range s.loaded {
		switch p.Probe.Provider {
		case "BEGIN", "END", "self":
			n++
		}
	}
	return n
}

// onlySpecial reports whether the program has BEGIN or END probes and
// nothing else: no probe attached, and no self:signal probe, which
// waits for its signal.
func (s *Session) onlySpecial() bool {
	for _, p := range s.loaded {
		if p.Probe.Provider == "self" {
			return false
		}
	}
	return s.attached == 0 && s.special() > 0
}

// stopPackets writes the packets skboutput() queued and closes its
// files; it does nothing once done.
func (s *Session) stopPackets() error {
	if s.packets == nil {
		return nil
	}
	lost, err := s.packets.stop()
	s.packets = nil
	if lost > 0 {
		s.note("kinst: skboutput: %d packets lost: their buffers were full (raise BPFTRACE_PERF_RB_PAGES)\n", lost)
	}
	return err
}

// watch handles the signals and Options.Stop: SIGUSR1 is usr1's, the
// first stop signal stops the run, a later one forces the exit, but no
// sooner than forceAfter after the first.
func (s *Session) watch(sigs <-chan os.Signal, stop <-chan struct{}, cancel context.CancelFunc, ended <-chan struct{}) {
	var stalls <-chan time.Time
	var first, second os.Signal
	var firstAt time.Time
	var force <-chan time.Time // the forced exit a second signal put off
	var blocked int64          // the write in progress at the last tick
	var ticks int              // ticks that found it still blocked
	for {
		select {
		case <-ended:
			return
		case <-stop:
			// The run's context stops the run, and says whether ctx
			// was done first.
			stop = nil
			cancel()
		case <-force:
			ExitBySignal(second)
		case <-stalls:
			// The output has not taken a write since well after the
			// signal: a reader that stopped reading would hold kinst
			// for as long as it likes. The write must also outlast
			// ticks kinst was awake to see: a stopped kinst (^Z) or
			// a starved virtual CPU resumes with a long write that
			// was never stuck.
			if w := s.outw.since.Load(); w == 0 || w != blocked {
				blocked, ticks = w, 0
			} else {
				ticks++
			}
			if ticks >= stallTicks && s.outw.stalled(stallLimit) {
				ExitBySignal(first)
			}
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				s.usr1()
				continue
			}
			if s.stopping.Load() {
				// timeout(1) signals kinst, then its process group,
				// kinst among it, milliseconds later: a second signal
				// that soon leaves the first its moment to end the run.
				wait := forceAfter - time.Since(firstAt)
				if first == nil || wait <= 0 {
					ExitBySignal(sig)
				}
				if force == nil {
					second, force = sig, time.After(wait)
				}
				continue
			}
			first, firstAt = sig, time.Now()
			s.signal.Store(&sig)
			cancel()
			s.stop()
			t := time.NewTicker(stallLimit / stallTicks)
			defer t.Stop()
			stalls = t.C
		}
	}
}

// forceAfter is how long after the first stop signal a second one
// forces the exit: one sooner waits for that long.
const forceAfter = time.Second

// stallLimit is how long a write to the output may block once a signal
// has stopped the run before kinst gives up on the output and exits;
// stallTicks is how many checks, spread over that time, must find it
// blocked.
const (
	stallLimit = 80 * time.Millisecond
	stallTicks = 4
)

// interrupted returns an *InterruptError in place of err if a signal
// stopped the run, and err otherwise.
func (s *Session) interrupted(err error) error {
	if sig := s.signal.Load(); sig != nil {
		return &InterruptError{Signal: *sig}
	}
	return err
}

// ExitBySignal ends the process as sig would have if kinst did not
// catch it, so that a shell sees the usual status (130 for SIGINT).
// The -c command, started with a parent-death signal, dies with kinst.
func ExitBySignal(sig os.Signal) {
	signal.Reset(sig)
	if ss, ok := sig.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), ss)
		// Delivery to another thread may take a moment.
		time.Sleep(100 * time.Millisecond)
		os.Exit(128 + int(ss))
	}
	os.Exit(1)
}

// stop ends the event loop.
// It may be called from any goroutine: Flush wakes a blocked read, which
// then returns what is pending and ringbuf.ErrFlushed.
func (s *Session) stop() {
	s.stopping.Store(true)
	s.wake()
}

// wake makes the event loop look at the stop and print requests.
func (s *Session) wake() {
	if rd := s.reader.Load(); rd != nil {
		rd.Flush()
	}
}

// outputWriter passes writes on to the output and keeps the first
// error: once the output fails, on a full disk or a closed pipe, the run
// stops and reports that error once, rather than once per record.
type outputWriter struct {
	w   io.Writer
	err error
	// since is when the write in progress started, in Unix nanoseconds;
	// 0 between writes.
	since atomic.Int64
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	o.since.Store(time.Now().UnixNano())
	n, err := o.w.Write(p)
	o.since.Store(0)
	if err != nil {
		o.err = err
	}
	return n, err
}

// stalled reports whether a write has been blocked for longer than d.
func (o *outputWriter) stalled(d time.Duration) bool {
	t := o.since.Load()
	return t != 0 && time.Since(time.Unix(0, t)) > d
}

// setConsts fills the values programs read from the consts map.
func (s *Session) setConsts() error {
	m := s.coll.Maps[codegen.ConstsMap]
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return err
	}
	val := make([]byte, 16)
	le.PutUint64(val[codegen.ConstStartTime:], uint64(ts.Nano()))
	if s.cmd != nil {
		le.PutUint64(val[codegen.ConstCpid:], uint64(s.cmd.pid()))
	}
	if err := m.Put(uint32(0), val); err != nil {
		return fmt.Errorf("set constants: %w", err)
	}
	return nil
}

// perfPid is the process perf events are restricted to: -p's in the
// 0.26.1 mode; 0.17 samples every process whatever -p says.
func (s *Session) perfPid() int {
	if s.out.Compat == compat.V017 {
		return 0
	}
	return s.opts.Pid
}

// runSpecial runs the BEGIN or END programs once, in kinst's own context.
func (s *Session) runSpecial(provider string) error {
	for _, p := range s.loaded {
		if p.Probe.Provider != provider {
			continue
		}
		if _, err := s.coll.Programs[p.Name].Run(&ebpf.RunOptions{Context: make([]byte, 8)}); err != nil {
			return fmt.Errorf("run %s: %w", provider, err)
		}
	}
	return nil
}

// needsExec reports whether a target can be attached to the -c command
// only once the command has exec'd.
func (s *Session) needsExec() bool {
	for _, p := range s.loaded {
		if slices.ContainsFunc(p.Targets, attach.NeedsExec) {
			return true
		}
	}
	return false
}

// attachAll attaches every program but BEGIN, END, test and bench, in an
// order that makes probes sharing a target run in program order, as
// bpftrace's do. A signal stops it between two attaches, with what it
// attached so far in s.links for the end of the run to detach.
func (s *Session) attachAll() error {
	total := 0
	for _, p := range s.loaded {
		total += len(p.Targets)
	}
	prog := startProgress(s.opts.Progress, "attaching %d of %d probes", total, progressAfter)
	defer prog.end()
	for _, i := range attachOrder(s.loaded) {
		prog.step(len(s.loaded[i].Targets))
		p := s.loaded[i]
		if p.Mechanism == codegen.MechTestRun || p.Mechanism == codegen.MechXDP {
			continue
		}
		if inject.Delay(s.ctx, inject.Attach) != nil {
			return nil
		}
		a, err := s.attach(p)
		if err != nil && p.Fallback != nil {
			// The kernel refused the multi or session link as a whole;
			// one kprobe per function can still attach those it allows.
			if fbs, fbErr := s.loadPrograms(p.Fallback, nil); fbErr == nil {
				if s.opts.Verbose {
					fmt.Fprintf(s.opts.Stderr, "kinst: %s: %s refused (%v)\n", p.Targets[0].FullName(), p.Mechanism, err)
				}
				for j, q := range p.Fallback {
					s.coll.Programs[q.Name] = fbs[j]
				}
				s.loaded[i] = p.Fallback[0]
				s.loaded = append(s.loaded, p.Fallback[1:]...)
				if err := s.attachFallback(p.Fallback); err != nil || s.ctx.Err() != nil {
					return err
				}
				continue
			}
		}
		if err := s.attached1(p, a, err); err != nil || s.ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// attachFallback attaches the programs a refused program falls back on.
func (s *Session) attachFallback(progs []*codegen.Program) error {
	for _, p := range progs {
		a, err := s.attach(p)
		if err := s.attached1(p, a, err); err != nil || s.ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// attached1 takes the outcome of attaching p: it counts and keeps the
// links, warns of the targets left out, and locates an error, but for
// one a signal caused, which ends the attaching without one.
func (s *Session) attached1(p *codegen.Program, a *attach.Attached, err error) error {
	if err != nil && s.ctx.Err() != nil {
		return nil // the signal's doing: Attach rolled its own links back
	}
	if err != nil {
		return s.locate(p, err)
	}
	s.attached += uint64(len(p.Targets) - len(a.Skipped))
	if n := len(a.Skipped); n > 0 {
		s.warnf("%d of the %d targets of %s could not be attached and are left out: %s; the first: %v",
			n, len(p.Targets), p.Probe.Syntax.Points[0].Raw, skippedNames(a.Skipped), a.Skipped[0])
	}
	s.links = append(s.links, a.Links...)
	return nil
}

// maxSkippedNames bounds the targets a warning names: a wildcard may
// leave out hundreds.
const maxSkippedNames = 10

// skippedNames names the targets of the attach errors, as many as
// maxSkippedNames.
func skippedNames(skipped []error) string {
	var names []string
	for _, err := range skipped {
		var ae *attach.Error
		if !errors.As(err, &ae) {
			continue
		}
		if len(names) == maxSkippedNames {
			names = append(names, fmt.Sprintf("and %d more", len(skipped)-maxSkippedNames))
			break
		}
		names = append(names, ae.Target.Func)
	}
	return strings.Join(names, ", ")
}

// locate points an attach failure of p's at the attach point of the
// target that failed, or at the probe's first.
func (s *Session) locate(p *codegen.Program, err error) error {
	at := p.Probe.Syntax.Points[0]
	var ae *attach.Error
	if errors.As(err, &ae) && ae.Target.Point != nil {
		at = ae.Target.Point
	}
	return syntax.ErrorList{&syntax.Error{File: s.out.File, Pos: at.Pos(), End: at.End(), Msg: err.Error(), Err: err}}
}

// runIterators reads every attached iterator to its end, which runs its
// probe once per object; a program with iterators then ends, as
// bpftrace's does.
func (s *Session) runIterators() error {
	ran := false
	for _, l := range s.links {
		if it, ok := l.(attach.IterLink); ok {
			if err := it.Run(); err != nil {
				return err
			}
			ran = true
		}
	}
	if ran {
		s.stop()
	}
	return nil
}

// attachOrder lists the indexes of progs in program order, except that
// those the kernel runs newest first come last and reversed.
func attachOrder(progs []*codegen.Program) []int {
	var order, reversed []int
	for i, p := range progs {
		if p.Mechanism.NewestFirst() {
			reversed = append(reversed, i)
		} else {
			order = append(order, i)
		}
	}
	slices.Reverse(reversed)
	return append(order, reversed...)
}

// attach attaches one loaded program.
func (s *Session) attach(p *codegen.Program) (*attach.Attached, error) {
	if s.opts.Verbose {
		fmt.Fprintf(s.opts.Stderr, "kinst: %s (%d targets): %s: %s\n", p.Targets[0].FullName(), len(p.Targets), p.Mechanism, p.Why)
	}
	start := time.Now()
	if err := inject.Fail(inject.Attach); err != nil {
		return nil, &attach.Error{Target: p.Targets[0], Err: err}
	}
	a, err := attach.Attach(s.ctx, s.coll.Programs[p.Name], p.Targets, attach.Options{
		IDs:        p.IDs,
		Multi:      p.Mechanism == codegen.MechKprobeMulti || p.Mechanism == codegen.MechKprobeSession || p.Mechanism == codegen.MechUprobeMulti || p.Mechanism == codegen.MechSyscalls,
		Session:    p.Mechanism == codegen.MechKprobeSession,
		Trampoline: p.Mechanism.IsTrampoline(),
		Pid:        s.opts.Pid,
		PerfPid:    s.perfPid(),
		Cpid:       s.cmd.pid(),
		Cookies:    p.Cookies,

		FileActivation: s.opts.FileActivation,
	})
	if err == nil && s.opts.Verbose {
		fmt.Fprintf(s.opts.Stderr, "kinst: attached %s in %v\n", p.Targets[0].FullName(), time.Since(start).Round(time.Microsecond))
	}
	return a, err
}

// warnf prints a warning of the run, which has no place in the
// program's source, unless --no-warnings asked for none.
func (s *Session) warnf(format string, args ...any) {
	if !s.opts.NoWarnings {
		w := &syntax.Error{Msg: fmt.Sprintf(format, args...), Severity: syntax.SeverityWarning}
		fmt.Fprintf(s.opts.Stderr, "kinst: %v\n", w)
	}
}

// note prints what warnings print, unless --no-warnings asked for none.
func (s *Session) note(format string, args ...any) {
	if !s.opts.NoWarnings {
		fmt.Fprintf(s.opts.Stderr, format, args...)
	}
}

func (s *Session) detach() error {
	inject.Delay(context.Background(), inject.Detach)
	s.watchMu.Lock()
	for _, links := range s.watches {
		s.links = append(s.links, links...)
	}
	s.watches, s.noWatch = nil, true
	s.watchMu.Unlock()
	start, n := time.Now(), len(s.links)
	prog := startProgress(s.opts.Progress, "detaching %d of %d links", n, progressAfter)
	links := make([]io.Closer, n)
	for i, l := range s.links {
		links[i] = stepCloser{l, prog}
	}
	err := attach.Detach(links)
	prog.end()
	s.links = nil
	s.resumeTraced()
	if s.opts.Verbose && n > 0 {
		fmt.Fprintf(s.opts.Stderr, "kinst: detached %d links in %v\n", n, time.Since(start).Round(time.Microsecond))
	}
	return err
}

// streamPause is how long the reader waits after emptying the ring
// buffer of a stream of records before it sleeps until the next one.
const streamPause = time.Millisecond

// loop handles records until something stops the run.
func (s *Session) loop() {
	var rec ringbuf.Record
	lostCheck := time.Now()
	handled := 0 // records since the buffer was last found empty
	for !s.stopping.Load() {
		if s.printNow.Swap(false) {
			s.drain()
			s.printMaps(false)
		}
		if s.usr1Now.Swap(false) {
			s.runSignalProbes()
		}
		if time.Since(lostCheck) > time.Second {
			s.reportLost()
			lostCheck = time.Now()
		}
		if s.rd.AvailableBytes() == 0 {
			s.resume()
			if s.opts.Buffering != BufferFull {
				s.buf.Flush()
			}
			// The kernel wakes the reader for each record written while
			// it has read everything, at the cost of an interrupt on the
			// probe's CPU: a reader that keeps up with a stream would
			// have one per record. After records, a short pause lets the
			// next ones gather; only an idle buffer is waited on.
			if handled > 0 {
				handled = 0
				time.Sleep(streamPause)
				continue
			}
			s.rd.SetDeadline(time.Now().Add(time.Second))
		}
		err := inject.Fail(inject.Read)
		if err == nil {
			err = s.rd.ReadInto(&rec)
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			continue
		case err != nil:
			// The run ends as if stopped, and says why once the maps
			// are printed.
			s.readErr = fmt.Errorf("read events: %w", err)
			return
		}
		s.handle(rec.RawSample)
		handled++
		if s.exited {
			return
		}
		if s.outw.err != nil {
			s.stop()
		}
		if s.opts.Buffering == BufferLine || s.opts.Buffering == BufferNone {
			s.buf.Flush()
		}
	}
	s.drain()
}

// drain handles the records already in the ring buffer without waiting.
func (s *Session) drain() {
	var rec ringbuf.Record
	for !s.exited {
		s.rd.SetDeadline(time.Now())
		if err := s.rd.ReadInto(&rec); err != nil {
			break
		}
		s.handle(rec.RawSample)
	}
	s.resume()
	s.buf.Flush()
}

// discard drops the records already in the ring buffer.
func (s *Session) discard() {
	var rec ringbuf.Record
	for {
		s.rd.SetDeadline(time.Now())
		if s.rd.ReadInto(&rec) != nil {
			return
		}
	}
}

// reportLost prints how many records the ring buffer refused since the
// last report. One of them may have been a watchpoint setup's, which
// stopped the traced process: it goes on.
func (s *Session) reportLost() {
	// Reading through the mapping makes no system call: a map syscall
	// would hold off tracing programs on its CPU for its duration, and
	// probes such as sched_switch would miss events.
	total, err := s.lostTotal()
	if err != nil {
		return
	}
	if total > s.lost {
		s.resumeTraced()
		handled := false
		if s.opts.Records != nil {
			s.opts.Records(&Record{Kind: RecLost, Lost: total - s.lost})
			handled = true
		} else if s.opts.Lost != nil {
			handled, _ = s.opts.Lost(s.buf, total-s.lost)
		}
		if !handled {
			s.buf.Flush()
			s.errw.Lost(total - s.lost)
		}
		s.lost = total
	}
}

// lostTotal reads how many records the ring buffer refused so far.
func (s *Session) lostTotal() (uint64, error) {
	if s.lostMem == nil {
		return 0, errors.New("no lost-records counter")
	}
	var buf [8]byte
	if _, err := s.lostMem.ReadAt(buf[:], codegen.LostRecords); err != nil {
		return 0, fmt.Errorf("read the lost-records counter: %w", err)
	}
	return le.Uint64(buf[:]), nil
}

// reportFull warns of every map that was full when a probe stored a new
// element in it, with the exact count of updates dropped, as the lost
// records are reported.
func (s *Session) reportFull() {
	totals, err := s.fullTotals()
	if err != nil || s.opts.NoWarnings {
		return
	}
	for i, n := range totals {
		if n > 0 {
			m := s.out.Maps[i]
			s.warnf("map @%s was full: %d %s dropped; it holds at most %d (set KINST_MAP_KEYS_MAX for more)",
				m.Name, n, plural(n, "update", "updates"), s.out.Collection.Maps[m.Spec].MaxEntries)
		}
	}
}

// reportStacks warns of the stacks the stack-trace maps refused, which
// print empty.
func (s *Session) reportStacks() {
	if s.opts.NoWarnings || s.lostMem == nil {
		return
	}
	var buf [8]byte
	if _, err := s.lostMem.ReadAt(buf[:], codegen.LostStacks); err != nil {
		return
	}
	if n := le.Uint64(buf[:]); n > 0 {
		fmt.Fprintf(s.opts.Stderr, "kinst: warning: %d %s dropped: the stack map's slot for %s held another stack, or the map was full; %s empty\n",
			n, plural(n, "stack", "stacks"), plural(n, "it", "them"), plural(n, "it prints", "they print"))
	}
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fullTotals reads, for each map, how many updates it refused so far
// because it was full.
func (s *Session) fullTotals() ([]uint64, error) {
	totals := make([]uint64, len(s.out.Maps))
	var buf [8]byte
	for i, m := range s.out.Maps {
		if _, err := s.lostMem.ReadAt(buf[:], int64(codegen.FullOffset(m))); err != nil {
			return nil, fmt.Errorf("read the map-full counter of %s: %w", m.Display(), err)
		}
		totals[i] = le.Uint64(buf[:])
	}
	return totals, nil
}

// printMaps prints every map, as bpftrace does at exit and on SIGUSR1,
// where it leaves out the blank lines it prints before them at exit.
func (s *Session) printMaps(exit bool) error {
	if exit && s.opts.NoExitMaps {
		io.WriteString(s.opts.Stdout, output.ExitSeparator)
		return nil
	}
	maps := make([]*output.Map, 0, len(s.out.Maps))
	var errs []error
	for _, gm := range s.out.Maps {
		if exit {
			inject.Delay(context.Background(), inject.Print)
		}
		m, err := s.readMap(gm, s.dec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps = append(maps, m)
	}
	s.buf.Flush()
	if s.opts.ExitMaps != nil {
		var err error
		maps, err = s.opts.ExitMaps(s.buf, maps)
		if errs = append(errs, err); len(maps) == 0 {
			return errors.Join(append(errs, s.buf.Flush())...)
		}
	}
	if exit && s.out.Compat == compat.V017 {
		io.WriteString(s.opts.Stdout, output.ExitSeparator)
	} else if exit {
		errs = append(errs, s.w.End())
	}
	errs = append(errs, s.w.Maps(maps), s.buf.Flush())
	return errors.Join(errs...)
}

// CatchSignals makes the signals the kinst command handles, SIGINT,
// SIGTERM and SIGUSR1, arrive on ch, given to Options.Signals, until
// stop is called. The command catches them only once it is about to
// run: until then they end it as they end any process.
func CatchSignals(ch chan<- os.Signal) (stop func()) {
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1)
	return func() { signal.Stop(ch) }
}
