package attach

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// ErrUnsupported marks probe types this kernel or kinst cannot attach;
// it matches the standard library's errors.ErrUnsupported too.
var ErrUnsupported error = unsupported{}

type unsupported struct{}

func (unsupported) Error() string { return "not supported" }
func (unsupported) Unwrap() error { return errors.ErrUnsupported }

// Resolver resolves attach points against the running system. It
// implements check.Resolver.
type Resolver struct {
	// Pid restricts uprobes to one process and finds libraries in its
	// memory map; 0 means every process.
	Pid int
	// Command is the -c command's program, as given: watchpoints on a
	// function's argument watch it when Pid is 0.
	Command string
	// StrLen is the size of tracepoint __data_loc strings; 0 means the
	// default mode's.
	StrLen int
	// Unsafe lets a uprobe take an address outside every function of
	// its file, as --unsafe does in bpftrace.
	Unsafe bool
	// Compat is the bpftrace release whose reading of attach points is
	// followed where they differ.
	Compat compat.Version

	// files holds the files uprobes were resolved in, by path: a
	// program of hundreds of probes on one library reads and indexes
	// its symbols once, not once per probe.
	files map[string]*elfsym.File
	// noReturns holds what noReturn found, by path.
	noReturns map[string]map[uint64]string
}

// Tracepoint targets a tracepoint.
type Tracepoint struct {
	Category, Name string
}

// Uprobe targets an instruction in an executable or library.
type Uprobe struct {
	Path   string
	Symbol string
	Offset uint64 // file offset of the probed instruction
	Return bool
	// RefCtrOffset is the file offset of a USDT semaphore the kernel
	// counts the uprobe in, 0 for none.
	RefCtrOffset uint64
	// Traced restricts the uprobe to the traced process, -p's or the -c
	// command, as the uprobe that sets up a watchpoint on a function's
	// argument must be.
	Traced bool
}

// PerfEvent targets a perf event: the software clock of profile and
// interval probes, or the event of a software or hardware probe.
type PerfEvent struct {
	// Type and Config name the event as perf_event_open(2) does.
	Type   uint32
	Config uint64
	// Period is the sampling period in nanoseconds, or Freq a frequency
	// in Hz.
	Period uint64
	Freq   uint64
	// AllCPUs is set for profile, software and hardware, which sample on
	// every CPU; interval fires on one.
	AllCPUs bool
}

// RawTracepoint targets a raw tracepoint by its kernel name.
type RawTracepoint struct {
	Name string
}

// Resolve implements check.Resolver.
func (r *Resolver) Resolve(ap *syntax.AttachPoint) ([]*check.Target, error) {
	switch ap.Provider {
	case "tracepoint":
		return r.tracepoints(ap)
	case "rawtracepoint":
		return r.rawTracepoint(ap)
	case "interval", "profile":
		return timer(ap)
	case "software", "hardware":
		return perfEvents(ap)
	case "watchpoint", "asyncwatchpoint":
		return r.watchpoints(ap)
	case "iter":
		if r.Pid != 0 {
			// The kernel restricts only task iterators to a process, and
			// only since 6.1, ignoring the request elsewhere.
			return nil, fmt.Errorf("iter probes take no -p: they walk every object; test the process in a predicate instead, as /ctx.task.tgid == %d/ in a task iterator", r.Pid)
		}
		return iterators(ap)
	case "uprobe", "uretprobe":
		return r.uprobes(ap)
	case "usdt":
		return r.usdts(ap)
	case "kprobe", "kretprobe", "fentry", "fexit", "fmod_ret":
		return r.kernelFuncs(ap)
	}
	if kernel.HasGlob(ap.Provider) {
		return r.anyProvider(ap)
	}
	return nil, fmt.Errorf("%s probes are %w by kinst", ap.Provider, ErrUnsupported)
}

// The probe types a wildcard one stands for, as in bpftrace: those of
// user space where the attach point names a file (its first part holds
// a '/') or -p names a process, else the kernel's that bpftrace lists.
// Return probes are left out, being the same functions again.
var (
	userProviders   = []string{"uprobe", "usdt"}
	kernelProviders = []string{"fentry", "hardware", "iter", "kprobe", "rawtracepoint", "software", "tracepoint"}
)

// wildcardProviders gives the providers a wildcard probe type matches,
// first being the attach point's first part after the provider, and
// whether they are user space's.
func wildcardProviders(provider, first string, pid int) (provs []string, user bool) {
	all := kernelProviders
	if user = pid != 0 || strings.Contains(first, "/"); user {
		all = userProviders
	}
	for _, p := range all {
		if kernel.Match(provider, p) {
			provs = append(provs, p)
		}
	}
	return provs, user
}

// anyProvider resolves an attach point whose probe type is a wildcard,
// such as *:./prog:main, as each type the wildcard matches. Where it
// matches both uprobe and usdt, each takes the attach point if it can,
// and one it does not fit or where it names nothing is passed over, as
// in bpftrace; it is an error only when neither has a target. Kernel
// probe types read their parts too differently for that (bpftrace 0.17
// fails on most such attach points), so there the wildcard must match
// one type.
func (r *Resolver) anyProvider(ap *syntax.AttachPoint) ([]*check.Target, error) {
	first := ""
	if len(ap.Parts) > 0 {
		first = ap.Parts[0]
	}
	provs, user := wildcardProviders(ap.Provider, first, r.Pid)
	switch {
	case len(provs) == 0:
		return nil, fmt.Errorf("no probe type matches %s", ap.Provider)
	case !user && len(provs) > 1:
		return nil, fmt.Errorf("%s matches the kernel probe types %s: name one, or a file (a path) for uprobe and usdt", ap.Provider, strings.Join(provs, ", "))
	}
	var targets []*check.Target
	for _, p := range provs {
		one := *ap
		one.Provider = p
		ts, err := r.Resolve(&one)
		if err != nil && len(provs) == 1 {
			return nil, err
		}
		targets = append(targets, ts...)
	}
	if len(targets) == 0 {
		return nil, check.NoTarget(fmt.Errorf("%s matches nothing; kinst -l '%s' lists what exists", ap.Raw, ap.Raw))
	}
	return targets, nil
}

func wantParts(ap *syntax.AttachPoint, n int, form string) error {
	if len(ap.Parts) != n {
		return fmt.Errorf("%s probes are written %s", ap.Provider, form)
	}
	return nil
}

func (r *Resolver) tracepoints(ap *syntax.AttachPoint) ([]*check.Target, error) {
	if err := wantParts(ap, 2, "tracepoint:CATEGORY:NAME"); err != nil {
		return nil, err
	}
	cat, name := ap.Parts[0], ap.Parts[1]
	tps, err := kernel.Tracepoints(cat, name)
	if err != nil {
		return nil, err
	}
	if len(tps) == 0 {
		if kernel.HasGlob(cat) || kernel.HasGlob(name) {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no tracepoint matches %s:%s", cat, name), Pattern: "tracepoint:*", Listed: "them"})
		}
		return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no matches for tracepoint %s:%s", cat, name), Pattern: "tracepoint:" + cat + ":*", Listed: "the " + cat + " tracepoints"})
	}
	targets := make([]*check.Target, 0, len(tps))
	for _, tp := range tps {
		f, err := kernel.ReadFormat(tp.Category, tp.Name)
		if err != nil {
			return nil, err
		}
		targets = append(targets, &check.Target{
			Provider: "tracepoint",
			Name:     tp.String(),
			Func:     tp.Name,
			Args:     formatRecord(f, r.strLen()),
			Attach:   Tracepoint{Category: tp.Category, Name: tp.Name},
		})
	}
	return targets, nil
}

func (r *Resolver) strLen() int {
	if r.StrLen > 0 {
		return r.StrLen
	}
	return check.DefaultStrLen(compat.Current)
}

// formatRecord turns a tracepoint's format into the record args points to.
func formatRecord(f *kernel.Format, strLen int) *check.Type {
	rec := &check.Type{Kind: check.Record, Name: "struct " + f.Category + "_" + f.Name + "_args"}
	end := 0
	for _, fl := range f.Fields {
		field := &check.Field{Name: fl.Name, Offset: fl.Offset, DataLoc: fl.DataLoc}
		field.Lazy = func() *check.Type { return fieldType(fl, strLen) }
		rec.Fields = append(rec.Fields, field)
		end = max(end, fl.Offset+fl.Size)
	}
	rec.Size = end
	return rec
}

func fieldType(fl kernel.Field, strLen int) *check.Type {
	space := check.KernelSpace
	if fl.AddrSpace == kernel.UserSpace {
		space = check.UserSpace
	}
	switch {
	case fl.DataLoc:
		return check.StrType(strLen)
	case fl.Pointer():
		return &check.Type{Kind: check.Ptr, Size: 8, Elem: pointee(fl.Type, space), Space: space}
	case fl.Array:
		n := max(fl.ArrayLen, 1)
		elemSize := max(fl.Size/n, 1)
		if elemSize == 1 {
			return check.StrType(n)
		}
		elem := check.IntType(elemSize, false)
		return &check.Type{Kind: check.Array, Size: fl.Size, Elem: elem, Len: n, Space: space}
	}
	if size, signed, ok := fl.Int(); ok && (size == 1 || size == 2 || size == 4 || size == 8) {
		if strings.HasPrefix(fl.Type, "enum ") {
			// An enum field keeps its names, which bpftrace 0.26
			// prints its values by.
			if bt, err := kernel.TypeByName(fl.Type); err == nil {
				if t, err := check.FromBTF(bt, space); err == nil && t.Kind == check.Int && t.Size == size {
					return t
				}
			}
		}
		return check.IntType(size, signed)
	}
	return &check.Type{Kind: check.Array, Size: fl.Size, Elem: check.TUint8, Len: fl.Size, Space: space}
}

// pointee types what a tracepoint's pointer field points to, from its C
// type in the format file: char, integers, further pointers, and structs,
// unions and typedefs through kernel BTF. What BTF cannot type is left
// untyped (void *).
func pointee(ctype string, space check.AddrSpace) *check.Type {
	stars := 0
	var words []string
	for _, w := range strings.Fields(strings.ReplaceAll(ctype, "*", " * ")) {
		switch w {
		case "*":
			stars++
		case "const", "volatile", "__user":
		default:
			words = append(words, w)
		}
	}
	base := strings.Join(words, " ")
	var t *check.Type
	size, signed, _ := kernel.Field{Type: base}.Int()
	switch {
	case base == "void":
	case base == "char":
		t = check.TInt8
	case !strings.HasPrefix(base, "struct ") && !strings.HasPrefix(base, "union ") && (size == 1 || size == 2 || size == 4 || size == 8):
		t = check.IntType(size, signed)
	default:
		bt, err := kernel.TypeByName(base)
		if err != nil {
			return nil
		}
		if t, err = check.FromBTF(bt, space); err != nil {
			return nil
		}
	}
	for i := 1; i < stars; i++ {
		t = &check.Type{Kind: check.Ptr, Size: 8, Elem: t, Space: space}
	}
	return t
}

func (r *Resolver) rawTracepoint(ap *syntax.AttachPoint) ([]*check.Target, error) {
	// rawtracepoint:NAME, or rawtracepoint:MODULE:NAME as bpftrace allows.
	if len(ap.Parts) < 1 || len(ap.Parts) > 2 {
		return nil, fmt.Errorf("rawtracepoint probes are written rawtracepoint:NAME")
	}
	name := ap.Parts[len(ap.Parts)-1]
	if len(ap.Parts) == 2 && !kernel.Match(ap.Parts[0], "vmlinux") {
		// Raw tracepoints are found in vmlinux's BTF only.
		return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no matches for rawtracepoint %s:%s: kinst attaches the raw tracepoints of vmlinux only", ap.Parts[0], name), Pattern: "rawtracepoint:*", Listed: "them"})
	}
	tps, err := kernel.Tracepoints("*", name)
	if err != nil {
		return nil, err
	}
	tps = slices.DeleteFunc(tps, func(tp kernel.Tracepoint) bool { return !isRawTracepoint(tp) })
	if len(tps) == 0 {
		return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("raw tracepoint %s does not exist", name), Pattern: "rawtracepoint:*", Listed: "them"})
	}
	seen := map[string]bool{}
	var targets []*check.Target
	for _, tp := range tps {
		if seen[tp.Name] {
			continue
		}
		seen[tp.Name] = true
		name := tp.Name
		targets = append(targets, &check.Target{
			Provider: "rawtracepoint",
			Name:     name,
			Func:     name,
			Attach:   RawTracepoint{Name: name},
			// The context is the tracepoint's arguments, a word each, as
			// a trampoline's is.
			ArgsFrom: func() (*check.Type, error) {
				fn, err := kernel.RawTracepointProto(name)
				if err != nil {
					return nil, err
				}
				args, _, err := tracingContext(fn)
				return args, err
			},
		})
	}
	return targets, nil
}

// notRawTracepoints are the tracefs event categories that are no
// kernel tracepoint: the system call events (one raw tracepoint,
// raw_syscalls's, serves them), ftrace's own events and dynamic probes.
var notRawTracepoints = []string{"syscalls", "ftrace", "kprobes", "uprobes"}

// isRawTracepoint reports whether a tracefs event is a tracepoint a raw
// tracepoint program can attach to: one the kernel's BTF has a
// __bpf_trace_ function for, as bpftrace lists them from BTF, or, for a
// module's tracepoint vmlinux does not describe, any event not of the
// categories above.
func isRawTracepoint(tp kernel.Tracepoint) bool {
	return kernel.HasFunc("__bpf_trace_"+tp.Name) || !slices.Contains(notRawTracepoints, tp.Category)
}

// timer resolves interval:UNIT:N and profile:UNIT:N.
func timer(ap *syntax.AttachPoint) ([]*check.Target, error) {
	form := ap.Provider + ":s|ms|us|hz:N or " + ap.Provider + ":DURATION"
	var unit, num string
	switch len(ap.Parts) {
	case 1:
		// bpftrace 0.26.1's interval:1s, profile:100ms, interval:5000: a
		// period in nanoseconds, with an optional unit, taken in
		// microseconds.
		ns, err := syntax.ParseDuration(ap.Parts[0])
		if err != nil {
			return nil, fmt.Errorf("invalid rate of %s probe: %q is not a whole number of ns, us, ms, s, m, h or d", ap.Provider, ap.Parts[0])
		}
		if ns < 1000 {
			return nil, fmt.Errorf("invalid rate of %s probe: the minimum is 1000 or 1us, not %d nanoseconds", ap.Provider, ns)
		}
		unit, num = "us", strconv.FormatUint(ns/1000, 10)
	case 2:
		unit, num = ap.Parts[0], ap.Parts[1]
	default:
		return nil, fmt.Errorf("%s probes are written %s", ap.Provider, form)
	}
	perUnit := map[string]uint64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1, "hz": 1}[unit]
	if perUnit == 0 {
		return nil, fmt.Errorf("unknown %s unit %q: use s, ms, us or hz", ap.Provider, unit)
	}
	n, err := positive(ap.Provider+" rate", num, math.MaxInt64/perUnit)
	if err != nil {
		return nil, err
	}
	ev := PerfEvent{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, AllCPUs: ap.Provider == "profile"}
	if unit == "hz" {
		ev.Freq = n
	} else {
		ev.Period = n * perUnit
	}
	// A period under 10us is taken as bpftrace takes it: the kernel's
	// cpu-clock timer fires no more often than every 10us anyway.
	return []*check.Target{{Provider: ap.Provider, Name: unit + ":" + num, Func: unit + ":" + num, Attach: ev}}, nil
}

// positive parses the whole number s, what a probe calls it, from 1 to
// max: the kernel takes sample periods below 2^63. It is written as an
// integer literal is, 1e6 included.
func positive(what, s string, max uint64) (uint64, error) {
	n, err := syntax.ParseIntLit(s)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n > max:
		return 0, fmt.Errorf("%s %q is out of range: at most %d", what, s, max)
	case err != nil || n == 0:
		return 0, fmt.Errorf("%s %q must be a positive whole number", what, s)
	}
	return n, nil
}

// loadedBy finds the library that exports name for lib, a shared
// library that does not define it itself, among the libraries it loads,
// breadth first as the dynamic linker looks: glibc 2.34 moved
// pthread_create and the rest of libpthread.so.0 into libc.so.6, and
// tools written before still probe libpthread. Each dependency is looked
// for beside lib first, then as -p's process or the host finds it. A
// program's dependencies are not searched: the user named one program,
// and a uprobe in its libraries fires in every program that loads them.
func (r *Resolver) loadedBy(lib *elfsym.File, name string) *elfsym.File {
	if lib.Soname == "" {
		return nil
	}
	seen := map[string]bool{lib.Path: true}
	queue := slices.Clone(lib.Needed)
	for len(queue) > 0 && len(seen) <= maxLoadedBy {
		soname := queue[0]
		queue = queue[1:]
		path := filepath.Join(filepath.Dir(lib.Path), soname)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			if path, err = elfsym.Resolve(soname, r.Pid); err != nil {
				continue
			}
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		f, err := r.open(path)
		if err != nil || f.Class != lib.Class || f.Machine != lib.Machine {
			continue
		}
		if s, ok := f.Find(name); ok && s.Exported() {
			return f
		}
		queue = append(queue, f.Needed...)
	}
	return nil
}

// maxLoadedBy bounds the libraries loadedBy reads besides the one named:
// a failed lookup must not index a whole desktop's worth of them.
const maxLoadedBy = 16

// open reads a file's symbols once per resolver.
func (r *Resolver) open(path string) (*elfsym.File, error) {
	if f := r.files[path]; f != nil {
		return f, nil
	}
	f, err := elfsym.Open(path)
	if err != nil {
		return nil, err
	}
	if r.files == nil {
		r.files = map[string]*elfsym.File{}
	}
	r.files[path] = f
	return f, nil
}

func (r *Resolver) uprobes(ap *syntax.AttachPoint) ([]*check.Target, error) {
	var path, spec string
	var err error
	if bin, src, ok := sourceLocation(ap); ok {
		return r.sourceUprobe(ap, bin, src)
	}
	switch {
	case len(ap.Parts) == 2 && kernel.HasGlob(ap.Parts[0]):
		return r.globUprobes(ap)
	case len(ap.Parts) == 2:
		spec = ap.Parts[1]
		path, err = elfsym.Resolve(ap.Parts[0], r.Pid)
	case len(ap.Parts) == 1 && r.Pid != 0:
		spec = ap.Parts[0]
		path, err = processExe(r.Pid)
	default:
		return nil, fmt.Errorf("%s probes are written %s:PATH:FUNCTION[+OFFSET]", ap.Provider, ap.Provider)
	}
	if err != nil {
		return nil, err
	}
	return r.uprobesIn(ap, path, spec)
}

// sourceLocation splits uprobe:BINARY@FILE:LINE[:COLUMN], a uprobe at a
// line of the program's source, as bpftrace 0.26.1 writes it; a path that
// names a file with an @ in its name is a path.
func sourceLocation(ap *syntax.AttachPoint) (bin, src string, ok bool) {
	if len(ap.Parts) < 2 || len(ap.Parts) > 3 {
		return "", "", false
	}
	bin, src, ok = strings.Cut(ap.Parts[0], "@")
	if !ok {
		return "", "", false
	}
	if _, err := os.Stat(ap.Parts[0]); err == nil {
		return "", "", false
	}
	return bin, src, true
}

// sourceUprobe resolves a uprobe at a source location: the address the
// file's DWARF line table gives the line (and column), as a debugger
// sets a breakpoint there.
func (r *Resolver) sourceUprobe(ap *syntax.AttachPoint, bin, src string) ([]*check.Target, error) {
	where := ap.Provider + ":" + strings.Join(ap.Parts, ":")
	switch {
	case ap.Provider != "uprobe":
		return nil, fmt.Errorf("%s cannot take a source location: a return probe fires on the function's return", ap.Provider)
	case kernel.HasGlob(ap.Parts[0]):
		return nil, fmt.Errorf("cannot use wildcards with a source location: %s", where)
	case src == "":
		return nil, fmt.Errorf("uprobes at a source location are written uprobe:BINARY@FILE:LINE[:COLUMN]")
	}
	var lc [2]int
	for i, p := range ap.Parts[1:] {
		n, err := strconv.ParseUint(p, 10, 31)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("invalid %s number %q in %s", [2]string{"line", "column"}[i], p, where)
		}
		lc[i] = int(n)
	}
	path, err := elfsym.Resolve(bin, r.Pid)
	if err != nil {
		return nil, err
	}
	f, err := r.open(path)
	if err != nil {
		return nil, err
	}
	d, err := elfsym.OpenDebug(path)
	if err != nil {
		return nil, fmt.Errorf("cannot attach by source location: %w", err)
	}
	addr, err := d.LineAddr(src, lc[0], lc[1])
	if err != nil {
		return nil, err
	}
	off, ok := f.AddrOffset(addr)
	if !ok {
		return nil, fmt.Errorf("%s is at %#x, which no loadable segment of %s holds", where, addr, path)
	}
	loc := strings.Join(append([]string{path + "@" + src}, ap.Parts[1:]...), ":")
	fn := loc
	if s, _, in := f.Symbolize(addr); in {
		fn = s.Name
	}
	return []*check.Target{{
		Provider: ap.Provider,
		Name:     loc,
		Func:     fn,
		Attach:   withSemaphore(Uprobe{Path: path, Symbol: fn, Offset: off}),
		UserType: dwarfTypes(path),
		ArgsFrom: func() (*check.Type, error) {
			return nil, fmt.Errorf("args are the arguments at a function's entry, not at a source line")
		},
	}}, nil
}

// globUprobes resolves a uprobe whose path is a wildcard, as bpftrace
// does: in each file it matches, named as glob(3) names it ("./prog*"
// giving "./prog"), the functions the spec names; files that are not ELF
// or lack the function are passed over, and it is an error only when no
// file has one.
func (r *Resolver) globUprobes(ap *syntax.AttachPoint) ([]*check.Target, error) {
	pattern, spec := ap.Parts[0], ap.Parts[1]
	paths, err := elfsym.GlobFiles(pattern, r.Pid)
	if err != nil {
		return nil, err
	}
	var targets []*check.Target
	for _, path := range paths {
		ts, err := r.uprobesIn(ap, path, spec)
		switch {
		case err == nil:
			targets = append(targets, ts...)
		case errors.Is(err, check.ErrNoTarget) || errors.Is(err, elfsym.ErrNotELF):
		default:
			return nil, err
		}
	}
	if len(targets) == 0 {
		return nil, check.NoTarget(fmt.Errorf("no function in the files matching %s matches %s; kinst -l '%s:%s:*' lists them", pattern, spec, ap.Provider, pattern))
	}
	return targets, nil
}

// noMatch is the error for a function file does not have, in bpftrace's
// words, with the name it may have meant.
func noMatch(provider, file, name, near string) error {
	if near != "" {
		return fmt.Errorf("no matches for %s %s:%s: no such function (did you mean %s?)", provider, file, name, near)
	}
	return fmt.Errorf("no matches for %s %s:%s: no such function", provider, file, name)
}

// uprobesIn resolves a uprobe's spec, FUNCTION, FUNCTION+OFFSET, an
// address or a wildcard, in the file at path.
func (r *Resolver) uprobesIn(ap *syntax.AttachPoint, path, spec string) ([]*check.Target, error) {
	f, err := r.open(path)
	if err != nil {
		return nil, err
	}
	ret := ap.Provider == "uretprobe"
	userType := dwarfTypes(path)
	target := func(sym string, off uint64) *check.Target {
		return &check.Target{
			Provider: ap.Provider,
			Name:     path + ":" + sym,
			Func:     sym,
			Attach:   Uprobe{Path: path, Symbol: sym, Offset: off, Return: ret},
			UserType: userType,
		}
	}
	if kernel.HasGlob(spec) {
		syms := f.Symbols(spec)
		if len(syms) == 0 {
			return nil, check.NoTarget(&check.ListError{Err: fmt.Errorf("no function in %s matches %s", path, spec), Pattern: "uprobe:" + path + ":*", Listed: "them"})
		}
		var targets []*check.Target
		for _, s := range syms {
			if ret && r.noReturn(f)[s.Addr] != "" {
				continue
			}
			targets = append(targets, target(s.Name, s.Offset))
		}
		if len(targets) == 0 {
			return nil, check.NoTarget(fmt.Errorf("no function in %s that matches %s returns", path, spec))
		}
		return targets, nil
	}
	// An absolute address, in hexadecimal or decimal as bpftrace takes
	// it, FUNCTION, or FUNCTION+OFFSET.
	if hex := strings.HasPrefix(spec, "0x"); hex || spec != "" && strings.Trim(spec, "0123456789") == "" {
		base := 10
		if hex {
			base = 0
		}
		addr, err := strconv.ParseUint(spec, base, 64)
		if err != nil {
			return nil, fmt.Errorf("bad address %q", spec)
		}
		off, ok := f.AddrOffset(addr)
		if !ok {
			return nil, fmt.Errorf("could not resolve address: %s:%#x (no loadable segment holds it)", path, addr)
		}
		if _, _, in := f.Symbolize(addr); !in && !r.Unsafe {
			return nil, fmt.Errorf("could not resolve address: %s:%#x (no function holds it; --unsafe probes it all the same)", path, addr)
		}
		t := target(spec, off)
		t.Attach = withSemaphore(t.Attach.(Uprobe))
		return []*check.Target{t}, nil
	}
	name, rel := spec, uint64(0)
	if i := strings.LastIndexByte(spec, '+'); i > 0 {
		name = spec[:i]
		rel, err = strconv.ParseUint(spec[i+1:], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad offset in %q", spec)
		}
		if ret {
			return nil, fmt.Errorf("uretprobe cannot take an offset: a return probe fires on the function's return")
		}
	}
	off, err := f.SymbolOffset(name, rel)
	var from *elfsym.File
	if errors.Is(err, elfsym.ErrNoSymbol) {
		if from = r.loadedBy(f, name); from == nil {
			return nil, check.NoTarget(noMatch(ap.Provider, path, name, f.Nearest(name)))
		}
		// The function is a dependency's: probe it there, as the
		// dynamic linker binds the library's callers to it.
		path, userType = from.Path, dwarfTypes(from.Path)
		off, err = from.SymbolOffset(name, rel)
	}
	if err != nil {
		return nil, err
	}
	in := f
	if from != nil {
		in = from
	}
	if s, _ := in.Find(name); s.Size == 0 && !r.Unsafe {
		// Without a size, nothing says the probe is at an instruction
		// of the function: bpftrace 0.26.1 asks for --unsafe.
		return nil, fmt.Errorf("could not determine boundary for %s (symbol has size 0): --unsafe probes it all the same, at the risk of corrupting the process", name)
	}
	if ret {
		if s, _ := in.Find(name); r.noReturn(in)[s.Addr] != "" {
			return nil, check.NoTarget(fmt.Errorf("%s in %s never returns (%s): a uretprobe on it would never fire", name, in.Path, r.noReturn(in)[s.Addr]))
		}
	}
	t := target(name, off)
	if from != nil {
		t.Warning = fmt.Sprintf("%s has no function %s; probing the one in %s, a library it loads", f.Path, name, from.Path)
	}
	if rel != 0 {
		t.Name = path + ":" + spec
		t.Attach = withSemaphore(t.Attach.(Uprobe))
	}
	switch {
	case ap.Provider == "uprobe" && rel == 0:
		t.ArgsFrom = func() (*check.Type, error) { return dwarfArgs(path, name) }
	case ap.Provider == "uprobe":
		t.ArgsFrom = func() (*check.Type, error) {
			return nil, fmt.Errorf("past the entry of %s its registers no longer hold the arguments", name)
		}
	}
	return []*check.Target{t}, nil
}

// noReturnFuncs names the C and C++ runtime functions whose declarations
// say they never return, for files without DWARF, as the C library
// mostly is.
var noReturnFuncs = []string{
	"exit", "_exit", "_Exit", "quick_exit", "abort", "pthread_exit",
	"__libc_start_main", "__libc_start_call_main",
	"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
	"err", "errx", "verr", "verrx",
	"__assert_fail", "__assert_perror_fail", "__stack_chk_fail", "__chk_fail", "__fortify_fail", "__libc_fatal",
	"__cxa_throw", "__cxa_rethrow", "_Unwind_Resume", "_ZSt9terminatev",
}

// noReturn finds the functions of f that never return, by address, so
// that their aliases go with them, and says why. A return probe on one
// never fires, and on the entry point, which nothing calls, the place
// of the return address holds argc: a uretprobe there overwrites it.
func (r *Resolver) noReturn(f *elfsym.File) map[uint64]string {
	if never, ok := r.noReturns[f.Path]; ok {
		return never
	}
	never := map[uint64]string{}
	if d, err := elfsym.OpenDebug(f.Path); err == nil {
		// Without its DWARF the names below are what is known.
		names, _ := d.NoReturn()
		for _, name := range names {
			if s, ok := f.Find(name); ok {
				never[s.Addr] = "its DWARF says so"
			}
		}
	}
	for _, name := range noReturnFuncs {
		// A program's own static function of the same name may return.
		if s, ok := f.Find(name); ok && s.Exported() {
			never[s.Addr] = "the C runtime declares it noreturn"
		}
	}
	if f.Entry != 0 {
		never[f.Entry] = "it is the entry point, which nothing calls"
	}
	if r.noReturns == nil {
		r.noReturns = map[string]map[uint64]string{}
	}
	r.noReturns[f.Path] = never
	return never
}
