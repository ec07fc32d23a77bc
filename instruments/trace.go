package instruments

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/export/perfetto"
	"kinst.dev/kinst/kernel"
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
	c := common{Formats: []string{"text", "json", "perfetto"}}
	fs := c.flags("trace", stderr,
		"usage: kinst trace FUNC... [--args] [--stack] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-f text|json|perfetto] [-o FILE] [-q] [--show]",
		"FUNC is a kernel function (vfs_read, kprobe:vfs_*, fentry:vfs_read), uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME",
		"-f perfetto writes a Perfetto trace to -o FILE, for ui.perfetto.dev: a track per thread, a slice per call",
	)
	withArgs := fs.Bool("args", false, "log each call's arguments, typed where the kernel describes them")
	withStack := fs.Bool("stack", false, "log the stack of each call (the user stack for uprobes)")
	pos, err := c.parse(fs, args)
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
	clock, err := newWallClock()
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
	hooks := runHooks{
		Printf: log.printf,
		Lost: func(w io.Writer, n uint64) error {
			log.lost += n
			_, err := fmt.Fprintf(w, "kinst trace: %d events lost: the log's reader fell behind\n", n)
			return err
		},
		// The maps are the program's bookkeeping; what is left at exit
		// is the summary.
		ExitMaps: func(w io.Writer, _ []*kinst.Map) error {
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
	return c.run(ctx, "trace", src, hooks, stdout, stderr)
}

// A traceSpec is one target of trace with what its log records carry.
type traceSpec struct {
	probeTarget
	args  []traceArg // logged at entry, with --args
	stack string     // "kstack" or "ustack" with --stack, else ""
	// retval is the expression for the return value, "" where there is
	// none (void functions, tracepoints without an exit), and retFmt
	// how it is rendered.
	retval string
	retFmt valueFormat
	// entry and exit are what the probes of a single function resolve
	// to; they are nil for a target of several, whose records carry the
	// probe that fired, one of entries or exits.
	entry, exit    *check.Target
	entries, exits []*check.Target
}

// A traceArg is one argument in the log: its name, the kinst expression
// reading it, and how it is rendered.
type traceArg struct {
	name string
	expr string
	fmt  valueFormat
}

// traceSpecs checks the targets and works out what each record carries.
// Kernel functions and tracepoints are resolved as the compiler will
// resolve them, so that a bad name fails here in one sentence and the
// argument list and return type come from the kernel's own description.
func traceSpecs(pos []string, c *common, withArgs, withStack bool) ([]*traceSpec, error) {
	r := &attach.Resolver{Pid: c.Pid}
	// The probe a point is written as tells its records apart: a point
	// is probed once.
	seen := map[string]bool{}    // the entries
	taken := map[string]string{} // the target probing each point
	var specs []*traceSpec
	for _, p := range pos {
		t, err := parseTarget(p)
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
		for _, point := range []string{t.Entry, t.Exit} {
			if prev := taken[point]; prev != "" {
				return nil, usageError("%s and %s both probe %s: name one of them", prev, p, point)
			}
			if point != "" {
				taken[point] = p
			}
		}
		s := &traceSpec{probeTarget: t}
		entry, err := resolvePoint(r, t.Entry)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", p, err)
		}
		wildcard := len(entry) > 1 || kernel.HasGlob(t.Entry)
		if !wildcard {
			s.entry = entry[0]
		} else {
			s.entries = entry
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
			if errors.Is(err, check.ErrNoTarget) && strings.HasPrefix(t.Exit, "uretprobe:") {
				// The function never returns: its calls are logged
				// without their returns.
				s.Exit = ""
				specs = append(specs, s)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", p, err)
			}
			s.retval, s.retFmt = returnValue(t, exit[0], wildcard)
			if !wildcard {
				s.exit = exit[0]
			} else {
				s.exits = exit
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
func entryArgs(t probeTarget, target *check.Target) []traceArg {
	args := target.Args
	if args == nil && target.ArgsFrom != nil && !goBinary(target) {
		// A uprobe's arguments come from the binary's DWARF, where it
		// has any; without, the registers are logged.
		args, _ = target.ArgsFrom()
	}
	if args == nil {
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
	for _, f := range args.Fields {
		// A tracepoint's common fields and syscall number say nothing
		// about the call.
		if strings.HasPrefix(f.Name, "common_") || f.Name == "__syscall_nr" {
			continue
		}
		field := args.Field(f.Name)
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

// goBinary reports whether a uprobe's file is a Go program, whose
// functions take their arguments in registers of Go's own order, not
// those of the C convention DWARF's parameters are read in.
func goBinary(target *check.Target) bool {
	u, ok := target.Attach.(attach.Uprobe)
	if !ok {
		return false
	}
	_, err := buildinfo.ReadFile(u.Path)
	return err == nil
}

// returnValue is the expression and format of a target's return value.
// A wildcard's probes share the type of the first function it matches,
// as the compiler gives them.
func returnValue(t probeTarget, exit *check.Target, wildcard bool) (string, valueFormat) {
	if strings.HasPrefix(t.Exit, "tracepoint:") {
		if exit.Args != nil && exit.Args.Field("ret") != nil {
			return "args.ret", signedValue
		}
		return "", signedValue
	}
	rt := exit.Ret
	if rt == nil {
		rt = exit.Returns
	}
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
