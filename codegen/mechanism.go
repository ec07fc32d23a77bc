package codegen

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/check"
)

// A Mechanism is how a program reaches its targets.
type Mechanism string

// The mechanisms. A kprobe or kretprobe probe may run as any of the
// kernel-function mechanisms; the others follow from the probe type.
const (
	MechTestRun       Mechanism = "test_run"       // BEGIN and END, run by kinst itself
	MechTracepoint    Mechanism = "tracepoint"     // a perf event on a tracepoint
	MechRawTracepoint Mechanism = "raw_tracepoint" // a raw tracepoint link
	MechSyscalls      Mechanism = "raw_syscalls"   // one perf event on raw_syscalls for many syscalls tracepoints
	MechPerfEvent     Mechanism = "perf_event"     // profile and interval clocks
	MechKprobe        Mechanism = "kprobe"         // one int3 kprobe link per function
	MechKprobeMulti   Mechanism = "kprobe.multi"   // one fprobe link for every function
	MechKprobeSession Mechanism = "kprobe.session" // one fprobe link running a kprobe's and a kretprobe's blocks
	MechFentry        Mechanism = "fentry"         // a BPF trampoline at function entry
	MechFexit         Mechanism = "fexit"          // a BPF trampoline at function return
	MechFmodRet       Mechanism = "fmod_ret"       // a trampoline that may replace the return value
	MechUprobe        Mechanism = "uprobe"         // one uprobe link per function
	MechUprobeMulti   Mechanism = "uprobe.multi"   // one link for every function of a file
	MechIter          Mechanism = "iter"           // a BPF iterator, run when kinst reads it
	MechXDP           Mechanism = "xdp"            // test and bench probes, run by kinst itself
)

// ParseMechanism reads a mechanism name, as --attach takes it.
func ParseMechanism(s string) (Mechanism, error) {
	switch m := Mechanism(s); m {
	case MechKprobe, MechKprobeMulti, MechFentry:
		return m, nil
	}
	return "", fmt.Errorf("unknown attach mechanism %q: use kprobe, kprobe.multi or fentry", s)
}

// usesRegisters reports whether a probe's body needs the saved registers
// that only a kprobe gives: reg(), ctx, override(), or sargN (found
// through the saved stack pointer).
func usesRegisters(p *check.Probe) bool {
	for name := range p.Uses {
		if _, sarg := check.StackArgIndex(name); sarg || name == "ctx" {
			return true
		}
	}
	for _, c := range p.Calls {
		if c.Func == "reg" || c.Func == "override" {
			return true
		}
	}
	return false
}

// hasOffset reports whether a kernel-function target probes inside the
// function rather than at its entry.
func hasOffset(t *check.Target) bool { return t.Name != t.Func }

// choose picks the mechanism for a probe and says why.
func (c *compiler) choose(p *check.Probe) (Mechanism, string) {
	ret := p.Provider == "kretprobe" || p.Provider == "uretprobe"
	switch p.Provider {
	case "BEGIN", "END":
		return MechTestRun, "BEGIN and END run once, in kinst's own context"
	case "self":
		return MechTestRun, "self:signal probes run in kinst's own context when kinst receives the signal"
	case "test", "bench":
		// The kernel repeats and times BPF_PROG_TEST_RUN for XDP
		// programs, not for raw tracepoints.
		return MechXDP, "test and bench probes run as XDP programs, which the kernel can run repeatedly and time"
	case "tracepoint":
		if dir, ok := c.syscallFamily(p.Targets); ok {
			return MechSyscalls, fmt.Sprintf("one perf event on raw_syscalls:%s serves all %d syscalls tracepoints, told apart by system call number", dir, len(p.Targets))
		}
		return MechTracepoint, "tracepoints attach through perf events"
	case "rawtracepoint":
		return MechRawTracepoint, "raw tracepoints attach by name"
	case "profile", "interval":
		return MechPerfEvent, "timers are perf events"
	case "software", "hardware":
		return MechPerfEvent, "software and hardware events are perf events"
	case "watchpoint", "asyncwatchpoint":
		return MechPerfEvent, "watchpoints are perf breakpoint events"
	case "iter":
		return MechIter, "iterators are tracing programs the kernel runs per object"
	case "fentry":
		return MechFentry, "asked for fentry"
	case "fexit":
		return MechFexit, "asked for fexit"
	case "fmod_ret":
		return MechFmodRet, "asked for fmod_ret"
	case "uprobe", "uretprobe", "usdt":
		if len(p.Targets) > 1 && c.supports(MechUprobeMulti) && sameFile(p.Targets) {
			return MechUprobeMulti, fmt.Sprintf("one uprobe.multi link attaches all %d functions", len(p.Targets))
		}
		if len(p.Targets) > 1 {
			return MechUprobe, "this kernel has no uprobe.multi, or the functions are in several files: one link each"
		}
		return MechUprobe, "one function"
	}
	// kprobe and kretprobe: the cheapest correct mechanism.
	entry, multi := MechFentry, MechKprobeMulti
	if ret {
		entry = MechFexit
	}
	for _, t := range p.Targets {
		if hasOffset(t) {
			return MechKprobe, "an offset into a function needs a kprobe"
		}
		if t.NoFtrace {
			return MechKprobe, "ftrace cannot reach " + t.Func + ": only a kprobe attaches to it"
		}
	}
	if usesRegisters(p) {
		return MechKprobe, "the program reads saved registers, which only a kprobe gives"
	}
	if m := c.opts.Force; m != "" {
		if m == MechFentry {
			m = entry
		}
		if m.IsTrampoline() && !allTyped(p.Targets) {
			return MechKprobe, "--attach asked for a trampoline, but BTF does not describe every function"
		}
		return m, "forced with --attach"
	}
	if len(p.Targets) > 1 {
		if c.supports(multi) {
			return multi, fmt.Sprintf("one kprobe.multi link attaches all %d functions", len(p.Targets))
		}
		return MechKprobe, "this kernel has no kprobe.multi: one kprobe link per function"
	}
	if !p.Targets[0].Typed {
		return MechKprobe, "the function has no BTF type, which a trampoline needs"
	}
	if c.supports(entry) {
		return entry, fmt.Sprintf("a BPF trampoline (%s) costs a call where a kprobe costs a breakpoint", entry)
	}
	return MechKprobe, fmt.Sprintf("this kernel refuses %s programs", entry)
}

func allTyped(targets []*check.Target) bool {
	for _, t := range targets {
		if !t.Typed {
			return false
		}
	}
	return true
}

func (c *compiler) supports(m Mechanism) bool {
	return c.opts.Supports != nil && c.opts.Supports(m)
}

// programType is the BPF program type and attach type of a mechanism.
func programType(m Mechanism, ret bool) (ebpf.ProgramType, ebpf.AttachType) {
	switch m {
	case MechTestRun, MechRawTracepoint:
		return ebpf.RawTracepoint, ebpf.AttachNone
	case MechTracepoint, MechSyscalls:
		return ebpf.TracePoint, ebpf.AttachNone
	case MechPerfEvent:
		return ebpf.PerfEvent, ebpf.AttachNone
	case MechKprobeMulti:
		return ebpf.Kprobe, ebpf.AttachTraceKprobeMulti
	case MechKprobeSession:
		return ebpf.Kprobe, ebpf.AttachTraceKprobeSession
	case MechUprobeMulti:
		return ebpf.Kprobe, ebpf.AttachTraceUprobeMulti
	case MechFentry:
		return ebpf.Tracing, ebpf.AttachTraceFEntry
	case MechFexit:
		return ebpf.Tracing, ebpf.AttachTraceFExit
	case MechFmodRet:
		return ebpf.Tracing, ebpf.AttachModifyReturn
	case MechIter:
		return ebpf.Tracing, ebpf.AttachTraceIter
	case MechXDP:
		return ebpf.XDP, ebpf.AttachXDP
	}
	return ebpf.Kprobe, ebpf.AttachNone
}

// NewestFirst reports whether the kernel runs the programs that share a
// target of this mechanism in the reverse of their attach order: uprobe
// consumers, aggregated kprobes, ftrace ops and trampoline program lists
// all add at the head, while tracepoints and raw tracepoints append.
func (m Mechanism) NewestFirst() bool {
	switch m {
	case MechUprobe, MechUprobeMulti, MechKprobe, MechKprobeMulti, MechKprobeSession, MechFentry, MechFexit, MechFmodRet:
		return true
	}
	return false
}

// IsTrampoline reports whether m binds a program to one function when it
// is loaded.
func (m Mechanism) IsTrampoline() bool {
	return m == MechFentry || m == MechFexit || m == MechFmodRet
}

// sharesScratch reports whether programs of mechanism m share one
// region of scratch memory (ScratchMap at 0). The kernel runs them only
// through paths that count on the per-CPU bpf_prog_active and run
// nothing while it is already taken, so none of them ever runs nested
// in another on a CPU: not from an interrupt, not from a function a
// helper calls. Programs of the other mechanisms may run nested in any
// program, those kernel paths guarding a program at most against
// itself, and each has a region of its own (in OwnScratchMap).
func (m Mechanism) sharesScratch() bool {
	switch m {
	case MechKprobe:
		// kprobe_perf_func and kretprobe_perf_func run it through
		// trace_call_bpf, which takes bpf_prog_active.
		return true
	case MechKprobeMulti, MechKprobeSession:
		// kprobe_multi_link_prog_run takes bpf_prog_active itself
		// (since kprobe.multi came, in 5.18; so in 6.1 and 6.12), at
		// a session's entry and return alike.
		return true
	case MechTracepoint, MechSyscalls:
		// perf_trace_run_bpf_submit runs it through trace_call_bpf;
		// raw_syscalls is a tracepoint attached as the others.
		return true
	case MechPerfEvent:
		// bpf_overflow_handler takes bpf_prog_active: profile,
		// interval, software, hardware and watchpoint events.
		return true
	}
	// MechUprobe: __uprobe_perf_func has run programs through
	// bpf_prog_run_array_sleepable (5.19), later named
	// bpf_prog_run_array_uprobe, rather than trace_call_bpf: RCU and
	// migrate_disable, no bpf_prog_active. MechUprobeMulti:
	// uprobe_prog_run, the same. MechRawTracepoint: __bpf_trace_run
	// guards a program against itself only (prog->active), as
	// __bpf_prog_enter_recur does for MechFentry, MechFexit and
	// MechFmodRet. MechIter: bpf_iter_run_prog, and MechTestRun:
	// bpf_prog_test_run_raw_tp, take nothing.
	return false
}

// regsContext reports whether the program's context is saved registers
// (struct pt_regs), as opposed to an array of argument words.
func (m Mechanism) regsContext() bool {
	switch m {
	case MechKprobe, MechKprobeMulti, MechKprobeSession, MechUprobe, MechUprobeMulti, MechPerfEvent:
		return true
	}
	return false
}

// targetFile is the file a uprobe target is in.
func targetFile(t *check.Target) string {
	file, _, _ := strings.Cut(t.Name, ":")
	return file
}

// sameFile reports whether uprobe targets are all in one file, which a
// uprobe.multi link requires.
func sameFile(targets []*check.Target) bool {
	for _, t := range targets[1:] {
		if targetFile(t) != targetFile(targets[0]) {
			return false
		}
	}
	return true
}
