// Package kinst runs bpftrace programs from Go: it compiles a program in
// bpftrace's language to BPF in-process, with no compiler or kernel
// headers, loads and attaches it to the running kernel, and hands what
// it sends back as Go values.
//
// A program is compiled once with [Compile], which resolves its probes
// against the running kernel and returns a [Program] or, for a program
// with errors, a [kinst.dev/kinst/syntax.ErrorList] giving each error's
// position. Compile checks every option first: a bad one is an error
// matching [ErrOption] ([ErrEnvironment] for a setting read from the
// environment).
//
//	prog, err := kinst.Compile("count.bt", []byte(`
//		tracepoint:syscalls:sys_enter_openat { @opens[comm] = count() }
//	`), nil)
//
// [Program.Probes] and [Program.Maps] tell what it will attach to, how,
// and which maps it keeps.
//
// [Program.Start] loads the program, runs its BEGIN probe, attaches the
// others and returns a [Run] once they are attached. Each record the
// program sends (printf(), print(), exit(), …) reaches the [Handler] as
// a [Record] whose dynamic type says what it is, such as *[Printf]
// with the arguments decoded; its String method is what bpftrace would
// print for it. [Run.Map] reads a map at any time: its current contents
// while the run goes on, what END left once it has ended. The run ends
// when the program calls exit(), when [Run.Stop] is called (from the
// handler too: Stop then returns at once) or when Start's context is
// done; END runs, the records still queued reach the handler, the maps
// are read a last time and every probe is detached before [Run.Wait]
// returns. Wait's error says why a run that did not fail ended where
// the caller did not end it: the context's error for Start's context,
// an [ExitError] for exit() with a code.
//
//	run, err := prog.Start(ctx, func(r kinst.Record) { log.Print(r) })
//	…
//	err = run.Stop()
//	opens, err := run.Map("@opens")
//
// A handler slower than the records leaves a backlog, which Stop hands
// over in full. [Run.StopContext] bounds that: once its context is
// done, the records left are dropped and counted in a [DropError].
//
// Values keep the program's types: see [Map] for the Go type of each.
//
// The kinst command and its instruments are built on this package, and
// what they offer is here too. [Program.StartWith] takes [RunOptions]:
// with Output set, the run prints what the program sends byte for byte
// as bpftrace prints it, as text or JSON lines, in place of handing
// records over. Options.Command runs a command under tracing as -c does,
// Options.Environment reads bpftrace's BPFTRACE_* settings, Options.Debug
// prints compilation stages as -d does, and [Program.Load] asks the
// verifier about every probe without attaching any (--dry-run). An
// [Observer] in RunOptions sees what such a run sends as Go values
// before it is printed, and may print it its own way: the instruments
// render their logs and tables so, reading a printf()'s arguments as
// [Value]s in place, without a copy. [Run.WriteMetrics] writes the maps
// as the command's Prometheus exporter serves them, [WriteProfile] and
// [WriteFolded] write maps keyed by stacks as profiles, and
// [Run.KeepSymbols] keeps a process's symbols for after it exits.
//
// Loading and attaching need root, or CAP_BPF with CAP_PERFMON. Errors
// wrap their cause: a program the kernel's verifier refuses is a
// [VerifierError] pointing at the source; another refusal wraps
// the kernel's errno, so that errors.Is(err, unix.EPERM) tells a missing
// privilege. A probe type the kernel forbids, or kinst cannot attach, is
// an error of Compile's list that matches [ErrNotSupported] and
// [errors.ErrUnsupported]. A Program or Run not made by Compile or
// Start is an error to use, not a panic.
//
// The package catches no signal and, without RunOptions.Output, prints
// nothing; a Printf record's Text is what bpftrace would have printed. A
// caller that catches signals may hand them to a run on
// RunOptions.Signals to have them handled as the kinst command handles
// them.
//
// This package is kinst's API, and everything a caller must name lives
// here; the error lists of Compile are [kinst.dev/kinst/syntax]'s, which
// is stable too. The other packages are the compiler's and the runner's
// stages, in the order of the pipeline (preprocess, syntax, check,
// codegen, attach, session, output, export/...): they are importable,
// for tools built on kinst, but their APIs change with kinst's needs.
package kinst
