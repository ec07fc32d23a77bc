package attach

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
	"kinst.dev/kinst/usdt"
)

// A lister lists the probes of one provider matching the parts of a
// pattern that follow "provider:", split as the parser splits an attach
// point (so quotes protect colons and are removed).
type lister func(w *bufio.Writer, parts []string, o ListOptions) error

// listers lists the probes of each provider.
var listers = map[string]lister{
	"tracepoint":    listTracepoints,
	"rawtracepoint": listRawTracepoints,
	"kprobe":        listFuncs("kprobe"),
	"kretprobe":     listFuncs("kretprobe"),
	"fentry":        listFuncs("fentry"),
	"fexit":         listFuncs("fexit"),
	"uprobe":        listUprobes("uprobe", 0),
	"uretprobe":     listUprobes("uretprobe", 0),
	"usdt":          listUSDT(0),
	"software":      listPerf("software", softwareEvents),
	"hardware":      listPerf("hardware", hardwareEvents),
	"iter":          listIterators,
	"interval":      listTimers("interval"),
	"profile":       listTimers("profile"),
}

// timerUnits are the units interval and profile probes take, in the
// order -l lists them.
var timerUnits = []string{"hz", "ms", "s", "us"}

// listTimers lists a timer provider's units, each as "provider:unit:",
// as bpftrace lists them: the rate is the program's to choose.
func listTimers(provider string) lister {
	return func(w *bufio.Writer, parts []string, _ ListOptions) error {
		unit := "*"
		if len(parts) > 0 && parts[0] != "" {
			unit = parts[0]
		}
		for _, u := range timerUnits {
			if kernel.Match(unit, u) {
				fmt.Fprintf(w, "%s:%s:\n", provider, u)
			}
		}
		return nil
	}
}

// processListers list the probes of a provider in the files of the
// process -p names, or anywhere when pid is 0.
var processListers = map[string]func(pid int) lister{
	"usdt":      listUSDT,
	"uprobe":    func(pid int) lister { return listUprobes("uprobe", pid) },
	"uretprobe": func(pid int) lister { return listUprobes("uretprobe", pid) },
}

// providerAliases maps the short and old provider names -l accepts.
var providerAliases = map[string]string{
	"t": "tracepoint", "rt": "rawtracepoint", "k": "kprobe", "kr": "kretprobe",
	"f": "fentry", "fr": "fexit", "kfunc": "fentry", "kretfunc": "fexit",
	"u": "uprobe", "ur": "uretprobe", "U": "usdt", "s": "software", "h": "hardware", "it": "iter",
	"i": "interval", "p": "profile", "w": "watchpoint", "aw": "asyncwatchpoint",
}

// ListOptions tune what List writes.
type ListOptions struct {
	Verbose bool // each probe with its arguments
	Pid     int  // the process whose files user probes are listed in; 0 for none
	// Compat is the bpftrace whose listing is followed: 0.26.1 names
	// the module of fentry, fexit and raw tracepoint probes
	// ("fentry:vmlinux:vfs_read"), 0.17 names only other modules.
	Compat compat.Version
}

// List writes the probes matching pattern, one full name per line; with
// o.Verbose, each with its arguments. A pattern without a provider is
// matched against every provider whose probes have names (hardware and
// software events, iterators, kprobes, raw tracepoints, tracepoints), or,
// for a process (o.Pid not 0), against the functions of its executable and
// the USDT probes of every file it maps, as bpftrace -lp does. The
// pattern is split into parts as a program's attach point is, so quoted
// parts match as the program would.
func List(w io.Writer, pattern string, o ListOptions) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	if pattern == "" {
		pattern = "*"
	}
	if strings.Contains(pattern, ",") {
		// Several patterns, listed one after the other.
		for part := range strings.SplitSeq(pattern, ",") {
			if err := List(bw, strings.Join(strings.Fields(part), " "), o); err != nil {
				return err
			}
		}
		return nil
	}
	if kind, _, _ := strings.Cut(pattern, " "); kind == "struct" || kind == "union" || kind == "enum" {
		return listTypes(bw, pattern, o.Verbose)
	}
	fields := syntax.SplitAttachPoint(pattern)
	if len(fields) == 1 {
		if o.Pid != 0 {
			return listProcess(bw, pattern, o)
		}
		// Every provider that names its probes, in bpftrace's order
		// (sorted by provider); iterators, and in 0.26.1 fentry, only
		// where BTF describes them.
		providers := []string{"hardware", "iter", "kprobe", "rawtracepoint", "software", "tracepoint"}
		if o.Compat == compat.Current {
			providers = append([]string{"fentry"}, providers...)
		}
		for _, p := range providers {
			needsBTF := p == "iter" || p == "fentry"
			if err := listMatching(bw, p, pattern, o); err != nil && !(needsBTF && errors.Is(err, kernel.ErrNoBTF)) {
				return err
			}
		}
		return nil
	}
	provider, parts := fields[0], fields[1:]
	if full, ok := providerAliases[provider]; ok {
		provider = full
	}
	lister := func(p string) lister {
		if pl, ok := processListers[p]; ok && o.Pid != 0 {
			return pl(o.Pid)
		}
		return listers[p]
	}
	if kernel.HasGlob(provider) {
		// In files, the types a wildcard attach point stands for;
		// in the kernel, every type kinst lists.
		inFiles := o.Pid != 0 || strings.Contains(parts[0], "/")
		for _, p := range slices.Sorted(maps.Keys(listers)) {
			_, user := processListers[p]
			wanted := inFiles && slices.Contains(userProviders, p) || !inFiles && !user
			if !wanted || !kernel.Match(provider, p) {
				continue
			}
			if err := lister(p)(bw, parts, o); err != nil {
				return err
			}
		}
		return nil
	}
	l := lister(provider)
	if l == nil {
		return fmt.Errorf("kinst cannot list %s probes", provider)
	}
	return l(bw, parts, o)
}

// listTypes lists the kernel's structs, unions or enums matching a
// pattern such as "struct task_*"; verbose prints each definition, as
// bpftrace -lv does.
func listTypes(w *bufio.Writer, pattern string, verbose bool) error {
	types, err := kernel.NamedTypes(pattern)
	if err != nil {
		return err
	}
	for _, t := range types {
		if verbose {
			fmt.Fprintf(w, "%s\n\n", kernel.Definition(t))
		} else {
			fmt.Fprintln(w, kernel.TypeString(t))
		}
	}
	return nil
}

// listMatching lists a provider's probes whose full name matches a
// pattern given without a provider.
func listMatching(w *bufio.Writer, provider, pattern string, o ListOptions) error {
	sub := []string{"*"}
	if provider == "tracepoint" {
		sub = []string{"*", "*"}
	}
	var buf strings.Builder
	inner := bufio.NewWriter(&buf)
	o.Verbose = false
	if err := listers[provider](inner, sub, o); err != nil {
		return err
	}
	inner.Flush()
	for _, line := range strings.Split(buf.String(), "\n") {
		if line == "" {
			continue
		}
		_, name, _ := strings.Cut(line, ":")
		name = strings.TrimSuffix(name, ":") // perf events end in one
		if kernel.Match(pattern, name) || kernel.Match(pattern, line) {
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

func listTracepoints(w *bufio.Writer, parts []string, o ListOptions) error {
	cat, name := "*", parts[0]
	if len(parts) > 1 {
		cat, name = parts[0], strings.Join(parts[1:], ":")
	}
	tps, err := kernel.Tracepoints(cat, name)
	if err != nil {
		return err
	}
	for _, tp := range tps {
		fmt.Fprintf(w, "tracepoint:%s\n", tp)
		if !o.Verbose {
			continue
		}
		f, err := kernel.ReadFormat(tp.Category, tp.Name)
		if err != nil {
			continue
		}
		for _, fl := range f.Fields {
			fmt.Fprintf(w, "    %s\n", fl.Decl())
		}
	}
	return nil
}

// listRawTracepoints lists raw tracepoints, which are all vmlinux's:
// isRawTracepoint finds them in its BTF. A pattern may name the module,
// and 0.26.1 lists it.
func listRawTracepoints(w *bufio.Writer, parts []string, o ListOptions) error {
	if len(parts) > 1 {
		if !kernel.Match(parts[0], "vmlinux") {
			return nil
		}
		parts = parts[1:]
	}
	tps, err := kernel.Tracepoints("*", strings.Join(parts, ":"))
	if err != nil {
		return err
	}
	prefix := "rawtracepoint:"
	if o.Compat == compat.Current {
		prefix += "vmlinux:"
	}
	seen := map[string]bool{}
	for _, tp := range tps {
		if !seen[tp.Name] && isRawTracepoint(tp) {
			seen[tp.Name] = true
			fmt.Fprintf(w, "%s%s\n", prefix, tp.Name)
			if !o.Verbose {
				continue
			}
			if fn, err := kernel.RawTracepointProto(tp.Name); err == nil {
				for _, p := range fn.Params {
					fmt.Fprintf(w, "    %s\n", p)
				}
			}
		}
	}
	return nil
}

func listFuncs(provider string) lister {
	return func(w *bufio.Writer, parts []string, o ListOptions) error {
		if o.Compat == compat.Current && (provider == "fentry" || provider == "fexit") && len(parts) > 1 && parts[0] == "bpf" {
			return listBPFFuncs(w, provider, parts[1:])
		}
		funcs, err := listableFuncs(provider, o.Verbose)
		if err != nil {
			return err
		}
		module, pattern := "", parts[0]
		if len(parts) > 1 {
			module, pattern = parts[0], strings.Join(parts[1:], ":")
		}
		// 0.26.1 names vmlinux as the module of trampolines' functions.
		vmlinux := o.Compat == compat.Current && (provider == "fentry" || provider == "fexit")
		for _, f := range funcs.Match(pattern) {
			mod := f.Module
			if mod == "" {
				mod = "vmlinux"
			}
			if module != "" && !kernel.Match(module, mod) {
				continue
			}
			if f.Module != "" || vmlinux {
				fmt.Fprintf(w, "%s:%s:%s\n", provider, mod, f.Name)
			} else {
				fmt.Fprintf(w, "%s:%s\n", provider, f.Name)
			}
			if o.Verbose {
				listProto(w, provider, f.Name)
			}
		}
		return nil
	}
}

// listBPFFuncs lists the functions of running BPF programs that parts
// (ID:NAME, or NAME of any program) match, each as PROVIDER:bpf:ID:NAME,
// in the order bpftrace 0.26.1 lists them, that of the full names.
func listBPFFuncs(w *bufio.Writer, provider string, parts []string) error {
	id, name := "*", parts[0]
	if len(parts) > 1 {
		id, name = parts[0], strings.Join(parts[1:], ":")
	}
	funcs, err := kernel.BPFFuncs()
	if err != nil {
		return err
	}
	var lines []string
	for _, f := range funcs {
		if kernel.Match(id, strconv.FormatUint(uint64(f.ProgID), 10)) && kernel.Match(name, f.Name) {
			lines = append(lines, fmt.Sprintf("%s:bpf:%d:%s", provider, f.ProgID, f.Name))
		}
	}
	slices.Sort(lines)
	for _, l := range slices.Compact(lines) {
		fmt.Fprintln(w, l)
	}
	return nil
}

// listableFuncs lists the functions a provider can probe, cheaply: a
// kprobe reaches any function kallsyms lists, so without ftrace's list
// kallsyms serves, and only trampolines (and -v) need BTF.
func listableFuncs(provider string, verbose bool) (*kernel.FuncList, error) {
	if verbose || (provider != "kprobe" && provider != "kretprobe") {
		return kernel.TraceableFunctions()
	}
	if list, err := kernel.FilterFunctions(); err == nil {
		return list, nil
	}
	k, err := kernel.LoadKallsyms()
	if err != nil {
		return nil, err
	}
	list := &kernel.FuncList{}
	for _, s := range k.Symbols() {
		if s.IsFunc() {
			list.Funcs = append(list.Funcs, kernel.Func{Name: s.Name, Module: s.Module})
		}
	}
	slices.SortFunc(list.Funcs, func(a, b kernel.Func) int { return strings.Compare(a.Name, b.Name) })
	list.Funcs = slices.CompactFunc(list.Funcs, func(a, b kernel.Func) bool { return a.Name == b.Name })
	return list, nil
}

// listProto writes a kernel function's arguments, and its return type
// for the return probes.
func listProto(w *bufio.Writer, provider, name string) {
	fn, err := kernel.FuncProto(name)
	if err != nil {
		return
	}
	for _, p := range fn.Params {
		fmt.Fprintf(w, "    %s\n", p)
	}
	if provider == "kretprobe" || provider == "fexit" {
		fmt.Fprintf(w, "    %s retval\n", kernel.TypeString(fn.Return))
	}
}

// listProcess lists, for a pattern without a provider, the functions of
// process pid's executable and the USDT probes of the files it maps
// whose names match.
func listProcess(w *bufio.Writer, pattern string, o ListOptions) error {
	var buf strings.Builder
	inner := bufio.NewWriter(&buf)
	o.Verbose = false
	if err := listUprobes("uprobe", o.Pid)(inner, []string{"*"}, o); err != nil {
		return err
	}
	if err := listUSDT(o.Pid)(inner, []string{"*"}, o); err != nil && !errors.Is(err, usdt.ErrNoNotes) {
		return err
	}
	inner.Flush()
	for _, line := range strings.Split(buf.String(), "\n") {
		if line != "" && kernel.Match(pattern, line) {
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

// listUprobes lists the functions of a file, or of each file a wildcard
// path matches, as uprobe or uretprobe probes; with pid, those of the
// process's executable when the pattern names no file ("uprobe:FUNC",
// "uprobe::FUNC" or "uprobe:*:FUNC", as bpftrace -lp reads them), and a
// named file as the process sees it.
func listUprobes(provider string, pid int) lister {
	return func(w *bufio.Writer, parts []string, o ListOptions) error {
		file, sym := parts[0], "*"
		switch {
		case len(parts) > 1:
			sym = strings.Join(parts[1:], ":")
		case pid == 0:
			return fmt.Errorf("list %s probes as %s:PATH:PATTERN", provider, provider)
		case !strings.Contains(file, "/"):
			file, sym = "", file
		}
		if sym == "" {
			sym = "*"
		}
		var paths []string
		switch {
		case pid != 0 && file == "":
			path, err := processExe(pid)
			if err != nil {
				return err
			}
			paths = []string{path}
		case kernel.HasGlob(file):
			var err error
			if paths, err = elfsym.GlobFiles(file, pid); err != nil {
				return err
			}
		default:
			path, err := elfsym.Resolve(file, pid)
			if err != nil {
				return err
			}
			paths = []string{path}
		}
		for _, path := range paths {
			f, err := elfsym.Open(path)
			if err != nil {
				if kernel.HasGlob(file) {
					// Files a wildcard matches that are not ELF are
					// passed over.
					continue
				}
				return err
			}
			var params map[string][]elfsym.Param
			if o.Verbose {
				params = dwarfParams(path, sym)
			}
			for _, s := range f.Symbols(sym) {
				fmt.Fprintf(w, "%s:%s:%s\n", provider, path, s.Name)
				for _, p := range params[s.Name] {
					fmt.Fprintf(w, "    %s %s\n", cTypeString(p.Type), p.Name)
				}
			}
		}
		return nil
	}
}

// dwarfParams maps the functions matching pattern to their parameters,
// from the binary's DWARF; a binary without it lists no parameters, as
// in bpftrace.
func dwarfParams(path, pattern string) map[string][]elfsym.Param {
	d, err := elfsym.OpenDebug(path)
	if err != nil {
		return nil
	}
	fs, err := d.Funcs(pattern)
	if err != nil {
		return nil
	}
	m := make(map[string][]elfsym.Param, len(fs))
	for _, f := range fs {
		m[f.Name] = f.Params
	}
	return m
}
