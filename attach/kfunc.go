package attach

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// Kprobe targets a kernel function's entry (or an offset into it) or its
// return, through a kprobe.
type Kprobe struct {
	Symbol string
	Module string
	Offset uint64
	Return bool
}

// Tracing targets a kernel function through a BPF trampoline: fentry,
// fexit or fmod_ret; or, where ProgID is set, the function Symbol of the
// running BPF program ProgID (the program itself or a sub-program),
// whose program the trampoline program is loaded against.
type Tracing struct {
	Symbol string
	Module string
	ProgID ebpf.ProgramID
}

// featureFor is the kernel feature a provider needs.
var featureFor = map[string]kernel.Feature{
	"kprobe":    kernel.FeatKprobe,
	"kretprobe": kernel.FeatKretprobe,
	"fentry":    kernel.FeatFentry,
	"fexit":     kernel.FeatFexit,
	"fmod_ret":  kernel.FeatFmodRet,
}

// bannedKretprobes are the functions bpftrace refuses a kretprobe on,
// whatever the kernel: the kretprobe's own handling takes their locks.
var bannedKretprobes = []string{"_raw_spin_lock", "_raw_spin_lock_irqsave", "_raw_spin_unlock_irqrestore", "queued_spin_lock_slowpath"}

// forbidden is a probe type the running kernel refuses, whose message is
// the kernel's reason alone; it matches ErrUnsupported.
type forbidden string

func (f forbidden) Error() string { return string(f) }
func (f forbidden) Unwrap() error { return ErrUnsupported }

// kernelFuncs resolves kprobe, kretprobe, fentry, fexit and fmod_ret
// attach points: KIND:FUNC, KIND:MODULE:FUNC, with * wildcards, and for
// kprobe FUNC+OFFSET.
func (r *Resolver) kernelFuncs(ap *syntax.AttachPoint) ([]*check.Target, error) {
	if ap.Provider == "kretprobe" && len(ap.Parts) > 0 {
		spec := ap.Parts[len(ap.Parts)-1]
		for _, name := range bannedKretprobes {
			if kernel.Match(spec, name) {
				// bpftrace's reason word for word, its "error: " too.
				return nil, fmt.Errorf("error: kretprobe:%s can't be used as it might lock up your system.", name)
			}
		}
	}
	if st := kernel.Probe(featureFor[ap.Provider]); !st.Available {
		msg := st.Reason
		if tp := coveringTracepoint(ap); tp != "" {
			msg += "; the tracepoint " + tp + " covers the same event"
		}
		return nil, forbidden(msg)
	}
	if r.Compat == compat.Current && (ap.Provider == "fentry" || ap.Provider == "fexit") && len(ap.Parts) > 0 && ap.Parts[0] == "bpf" {
		return bpfFuncs(ap)
	}
	var module, spec string
	switch len(ap.Parts) {
	case 1:
		spec = ap.Parts[0]
	case 2:
		module, spec = ap.Parts[0], ap.Parts[1]
	default:
		return nil, fmt.Errorf("%s probes are written %s:FUNCTION or %s:MODULE:FUNCTION", ap.Provider, ap.Provider, ap.Provider)
	}
	name, off := spec, uint64(0)
	if i := strings.LastIndexByte(spec, '+'); i > 0 {
		if ap.Provider != "kprobe" {
			return nil, fmt.Errorf("only kprobe takes an offset into a function")
		}
		v, err := strconv.ParseUint(spec[i+1:], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad offset in %q", spec)
		}
		name, off = spec[:i], v
	}
	funcs, err := kernel.TraceableFunctions()
	if err != nil {
		return nil, err
	}
	var names []kernel.Func
	if kernel.HasGlob(name) {
		for _, f := range funcs.Match(name) {
			if module == "" || kernel.Match(module, f.Module) {
				names = append(names, f)
			}
		}
		if len(names) == 0 {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no traceable kernel function matches %s", name), Pattern: ap.Provider + ":*", Listed: "them"})
		}
	} else {
		if !funcs.Contains(name) && !(isKprobe(ap.Provider) && inKallsyms(name)) {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("kernel function %s does not exist or cannot be traced", name), Pattern: ap.Provider + ":" + name + "*", Listed: "similar ones"})
		}
		if module != "" && funcs.Contains(name) && !slices.ContainsFunc(funcs.Match(name), func(f kernel.Func) bool { return f.Module == module }) {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("kernel function %s is not in module %s", name, module), Pattern: ap.Provider + ":" + module + ":*", Listed: "the module's functions"})
		}
		names = []kernel.Func{{Name: name, Module: module}}
		switch {
		case off != 0:
			// Ask the kernel now, so that an offset inside an
			// instruction is an error at the probe, with the reason.
			if errs, err := kernel.CheckKprobes(name, []uint64{off}); err == nil && errs[0] != nil {
				return nil, errs[0]
			}
		case !funcs.Contains(name):
			// kallsyms names it but ftrace does not list it: many
			// kernels refuse a kprobe there (biolatency.bt's
			// blk_account_io_done on 6.12), which makes the function
			// as good as absent.
			if errs, err := kernel.CheckKprobes(name, []uint64{0}); err == nil && errs[0] != nil {
				switch err := errs[0]; {
				case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
					return nil, check.NoTarget(err)
				case errors.Is(err, unix.EADDRNOTAVAIL):
					return nil, ambiguous(name, err)
				default:
					return nil, err
				}
			}
		}
	}
	targets := make([]*check.Target, 0, len(names))
	for _, f := range names {
		t, err := r.kernelFuncTarget(ap.Provider, f, off, spec)
		if err != nil {
			if kernel.HasGlob(name) {
				continue // a wildcard skips functions it cannot describe
			}
			return nil, err
		}
		// A wildcard matches only what ftrace lists.
		t.NoFtrace = !kernel.HasGlob(name) && !funcs.Contains(name)
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no kernel function matching %s can be probed with %s", name, ap.Provider)
	}
	return targets, nil
}

// bpfFuncs resolves fentry:bpf[:ID]:NAME and fexit:bpf[:ID]:NAME, as
// bpftrace 0.26.1 reads them: NAME, which may be a wildcard, among the
// functions of every running BPF program with BTF, or of program ID
// alone (an ID of * is every program's).
func bpfFuncs(ap *syntax.AttachPoint) ([]*check.Target, error) {
	id, name := "*", ""
	switch len(ap.Parts) {
	case 2:
		name = ap.Parts[1]
	case 3:
		id, name = ap.Parts[1], ap.Parts[2]
	default:
		return nil, fmt.Errorf("%s probes on BPF programs are written %s:bpf:PROGRAM or %s:bpf:ID:PROGRAM", ap.Provider, ap.Provider, ap.Provider)
	}
	var funcs []kernel.BPFFunc
	var err error
	if id == "*" {
		funcs, err = kernel.BPFFuncs()
	} else {
		n, perr := strconv.ParseUint(id, 10, 32)
		if perr != nil {
			return nil, fmt.Errorf("the BPF program id %q is not a number or *", id)
		}
		funcs, err = kernel.ProgramFuncs(ebpf.ProgramID(n))
		if errors.Is(err, kernel.ErrNoProgram) {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no running BPF program has id %d", n), Pattern: ap.Provider + ":bpf:*", Listed: "the running programs with BTF"})
		}
	}
	if err != nil {
		return nil, err
	}
	var targets []*check.Target
	for _, f := range funcs {
		if !kernel.Match(name, f.Name) {
			continue
		}
		targets = append(targets, &check.Target{
			Provider: ap.Provider,
			Name:     fmt.Sprintf("bpf:%d:%s", f.ProgID, f.Name),
			Func:     f.Name,
			NumArgs:  f.NumArgs,
			Attach:   Tracing{Symbol: f.Name, ProgID: f.ProgID},
		})
	}
	if len(targets) == 0 {
		why := "no running BPF program or sub-program with BTF is named " + name
		if id != "*" {
			why = "BPF program " + id + " has no function named " + name
		}
		return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no matches for %s: %s", ap.Raw, why), Pattern: ap.Provider + ":bpf:*", Listed: "those there are"})
	}
	return targets, nil
}

func isKprobe(provider string) bool { return provider == "kprobe" || provider == "kretprobe" }

// inKallsyms reports whether name is a kernel function symbol. A kprobe
// can reach functions ftrace cannot, such as the syscall entry points.
func inKallsyms(name string) bool {
	k, err := kernel.LoadKallsyms()
	if err != nil {
		return false
	}
	for _, s := range k.ByName(name) {
		if s.IsFunc() {
			return true
		}
	}
	return false
}

func (r *Resolver) kernelFuncTarget(provider string, f kernel.Func, off uint64, spec string) (*check.Target, error) {
	t := &check.Target{Provider: provider, Name: f.Name, Func: f.Name}
	if off != 0 {
		t.Name = spec
	}
	proto, err := kernel.FuncProto(f.Name)
	trampoline := provider == "fentry" || provider == "fexit" || provider == "fmod_ret"
	if err != nil {
		if trampoline {
			return nil, fmt.Errorf("%s:%s needs the function's BTF type: %w", provider, f.Name, err)
		}
	} else if args, ret, err := tracingContext(proto); err == nil {
		// The arguments are numbered by word: a trampoline finds them in
		// its context array, a kprobe in the argument registers. A
		// kretprobe has no arguments: by the return they are gone. Its
		// retval is a uint64 unless cast, as in bpftrace, which types
		// only fexit's.
		t.Typed, t.NumArgs = true, len(proto.Params)
		switch provider {
		case "kprobe":
			if off == 0 { // inside the function the registers have moved on
				t.Args = args
			}
		case "fentry":
			t.Args = args
		case "kretprobe":
			t.Returns = ret
		default:
			t.Args, t.Ret = args, ret
		}
	} else if trampoline {
		return nil, fmt.Errorf("%s:%s: %w", provider, f.Name, err)
	}
	if trampoline {
		t.Attach = Tracing{Symbol: f.Name, Module: f.Module}
	} else {
		t.Attach = Kprobe{Symbol: f.Name, Module: f.Module, Offset: off, Return: provider == "kretprobe"}
	}
	return t, nil
}

// tracingContext describes a trampoline program's context: an array of
// 64-bit words, one per argument, then the return value.
func tracingContext(fn *kernel.Function) (args, ret *check.Type, err error) {
	if len(fn.Params) > 12 {
		return nil, nil, fmt.Errorf("%d arguments are more than a trampoline passes", len(fn.Params))
	}
	args = &check.Type{Kind: check.Record, Name: "struct " + fn.Name + "_args", Size: 8 * len(fn.Params)}
	for i, p := range fn.Params {
		pt, err := check.FromBTF(p.Type, check.KernelSpace)
		if err != nil || !pt.InRegister() && pt.Kind != check.Ptr {
			pt = check.TUint64
		}
		args.Fields = append(args.Fields, &check.Field{Name: p.Name, Type: pt, Offset: 8 * i})
	}
	if _, void := fn.Return.(*btf.Void); fn.Return != nil && !void {
		if rt, err := check.FromBTF(fn.Return, check.KernelSpace); err == nil && rt.InRegister() {
			ret = rt
		}
	}
	return args, ret, nil
}

// syscallPrefixes are stripped from a function name to find the
// tracepoint for the same event.
var syscallPrefixes = []string{"__x64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_", "do_sys_", "ksys_", "sys_", "do_", "vfs_", "__"}

// coveringTracepoint suggests a tracepoint for the event a kernel
// function probe names, when one obviously exists.
func coveringTracepoint(ap *syntax.AttachPoint) string {
	if len(ap.Parts) == 0 {
		return ""
	}
	name := ap.Parts[len(ap.Parts)-1]
	if i := strings.IndexByte(name, '+'); i >= 0 {
		name = name[:i]
	}
	if kernel.HasGlob(name) {
		return ""
	}
	all, err := kernel.Tracepoints("*", "*")
	if err != nil {
		return ""
	}
	stems := []string{name}
	for _, p := range syscallPrefixes {
		if s, ok := strings.CutPrefix(name, p); ok && s != "" {
			stems = append(stems, s)
		}
	}
	for _, stem := range stems {
		for _, want := range []string{stem, "sys_enter_" + stem} {
			for _, tp := range all {
				if tp.Name == want {
					return "tracepoint:" + tp.String()
				}
			}
		}
	}
	return ""
}
