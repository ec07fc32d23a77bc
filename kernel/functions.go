package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// Sources a [FuncList] can come from.
const (
	SourceFilterFunctions = "available_filter_functions"
	SourceBTFKallsyms     = "BTF and kallsyms"
)

// Func is one traceable kernel function.
type Func struct {
	Name   string
	Module string // "" for vmlinux
}

// FuncList is the set of kernel functions kprobes and fentry can attach
// to, sorted by name (then module).
type FuncList struct {
	// Source says where the list came from: tracefs's
	// available_filter_functions, or, where that cannot be read (it fails
	// with EPERM on some kernels), the functions kernel BTF describes that
	// kallsyms also lists as code. The second is an approximation: it
	// keeps functions ftrace cannot patch.
	Source string
	Funcs  []Func
}

// Match returns the functions whose names match the glob pattern.
func (l *FuncList) Match(pattern string) []Func {
	var out []Func
	for _, f := range l.Funcs {
		if Match(pattern, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// Contains reports whether a function of that name is in the list.
func (l *FuncList) Contains(name string) bool {
	_, ok := slices.BinarySearchFunc(l.Funcs, name, func(f Func, name string) int {
		return strings.Compare(f.Name, name)
	})
	return ok
}

var funcListCache struct {
	once sync.Once
	list *FuncList
	err  error
}

// traceableFile, when set, is read in place of available_filter_functions.
var traceableFile string

// UseTraceableFunctions makes kinst read the traceable functions from
// the file at path, in available_filter_functions' form, as bpftrace's
// --traceable-functions does. It must come before the first use of the
// list.
func UseTraceableFunctions(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	traceableFile = path
	return nil
}

// TraceableFunctions returns the kernel's traceable functions, computed
// once per process.
func TraceableFunctions() (*FuncList, error) {
	funcListCache.once.Do(func() {
		funcListCache.list, funcListCache.err = traceableFunctions()
	})
	return funcListCache.list, funcListCache.err
}

func traceableFunctions() (*FuncList, error) {
	list, filterErr := FilterFunctions()
	if filterErr == nil {
		return list, nil
	}
	funcs, err := btfKallsymsFunctions()
	if err != nil {
		return nil, fmt.Errorf("list traceable functions: %w", errors.Join(filterErr, err))
	}
	return &FuncList{Source: SourceBTFKallsyms, Funcs: funcs}, nil
}

// FilterFunctions reads ftrace's list of the functions it can trace,
// available_filter_functions, which some kernels do not let anyone read,
// or the file UseTraceableFunctions named.
func FilterFunctions() (*FuncList, error) {
	if traceableFile != "" {
		data, err := os.ReadFile(traceableFile)
		if err != nil {
			return nil, err
		}
		return &FuncList{Source: traceableFile, Funcs: ParseFilterFunctions(data)}, nil
	}
	dir, err := TracefsDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "available_filter_functions"))
	if err != nil {
		return nil, err
	}
	return &FuncList{Source: SourceFilterFunctions, Funcs: ParseFilterFunctions(data)}, nil
}

// ParseFilterFunctions parses available_filter_functions: one function a
// line, followed by " [module]" for module functions. The result is sorted
// and free of duplicates.
func ParseFilterFunctions(data []byte) []Func {
	var out []Func
	for line := range strings.Lines(string(data)) {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "" {
			continue
		}
		mod := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(rest), "["), "]")
		out = append(out, Func{Name: name, Module: mod})
	}
	sortFuncs(&out)
	return out
}

func sortFuncs(fs *[]Func) {
	slices.SortFunc(*fs, func(a, b Func) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Module, b.Module)
	})
	*fs = slices.Compact(*fs)
}

// btfKallsymsFunctions lists the functions that vmlinux and module BTF
// describe and that kallsyms lists as code in the same module.
func btfKallsymsFunctions() ([]Func, error) {
	ks, err := LoadKallsyms()
	if err != nil {
		return nil, err
	}
	code := map[Func]bool{}
	for _, s := range ks.Symbols() {
		if s.IsFunc() {
			code[Func{s.Name, s.Module}] = true
		}
	}
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	var out []Func
	collect := func(spec *btf.Spec, module string) error {
		for t, err := range spec.All() {
			if err != nil {
				return err
			}
			if fn, ok := t.(*btf.Func); ok && code[Func{fn.Name, module}] {
				out = append(out, Func{fn.Name, module})
			}
		}
		return nil
	}
	if err := collect(spec, ""); err != nil {
		return nil, fmt.Errorf("read vmlinux BTF: %w", err)
	}
	// Kernels whose BTF comes from a vmlinux file have no /sys/kernel/btf
	// and so no module BTF either.
	modules, err := btfCache.Modules()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list module BTF: %w", err)
	}
	for _, m := range modules {
		mspec, err := btfCache.Module(m)
		if err != nil {
			return nil, fmt.Errorf("read BTF of module %s: %w", m, err)
		}
		if err := collect(mspec, m); err != nil {
			return nil, fmt.Errorf("read BTF of module %s: %w", m, err)
		}
	}
	sortFuncs(&out)
	return out, nil
}
