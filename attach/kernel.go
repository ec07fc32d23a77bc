package attach

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// Kernel answers the checker's questions about kernel types and symbols
// from BTF and kallsyms. It implements check.Kernel.
type Kernel struct{}

// Type looks up a kernel type by name.
func (Kernel) Type(kind syntax.Token, name string) (*check.Type, error) {
	full := name
	switch kind {
	case syntax.STRUCT:
		full = "struct " + name
	case syntax.UNION:
		full = "union " + name
	case syntax.ENUM:
		full = "enum " + name
	}
	bt, err := kernel.TypeByName(full)
	if err != nil {
		return nil, fmt.Errorf("unknown kernel type %s: %w", full, err)
	}
	t, err := check.FromBTF(bt, check.KernelSpace)
	if err != nil {
		return nil, fmt.Errorf("kernel type %s: %w", full, err)
	}
	return t, nil
}

// Symbol returns a kernel symbol's address.
func (Kernel) Symbol(name string) (uint64, error) {
	k, err := kernel.LoadKallsyms()
	if err != nil {
		return 0, err
	}
	addr, ok := k.Address(name)
	if !ok {
		// init_task is data every kernel has: without it, kallsyms
		// lists code only, and no variable can be found.
		if _, data := k.Address("init_task"); !data {
			return 0, fmt.Errorf("failed to resolve kernel symbol: %s (no kernel symbol of that name: this kernel's kallsyms lists no variables, it was built without CONFIG_KALLSYMS_ALL)", name)
		}
		return 0, fmt.Errorf("failed to resolve kernel symbol: %s", name)
	}
	return addr, nil
}

var enums struct {
	once   sync.Once
	values map[string]int64
}

// Enum returns the value of a kernel enum constant, from every enum the
// kernel's BTF describes; the table is built on first use.
func (Kernel) Enum(name string) (int64, bool) {
	enums.once.Do(func() {
		enums.values = map[string]int64{}
		spec, err := kernel.KernelBTF()
		if err != nil {
			return
		}
		for t, err := range spec.All() {
			if err != nil {
				return
			}
			if e, ok := t.(*btf.Enum); ok {
				for _, v := range e.Values {
					enums.values[v.Name] = int64(v.Value)
				}
			}
		}
	})
	v, ok := enums.values[name]
	return v, ok
}

// Kfunc reports whether the kernel's BTF describes function name.
func (Kernel) Kfunc(name string) bool { return kernel.HasFunc(name) }

// kfuncProgTypes are the program types bpftrace 0.26.1 asks the kernel
// about for kfunc_allowed, by probe type; the others are kprobes.
var kfuncProgTypes = map[string]ebpf.ProgramType{
	"BEGIN": ebpf.RawTracepoint, "END": ebpf.RawTracepoint,
	"test": ebpf.XDP, "bench": ebpf.XDP,
	"tracepoint": ebpf.TracePoint,
	"profile":    ebpf.PerfEvent, "interval": ebpf.PerfEvent, "software": ebpf.PerfEvent,
	"hardware": ebpf.PerfEvent, "watchpoint": ebpf.PerfEvent,
	"fentry": ebpf.Tracing, "fexit": ebpf.Tracing, "iter": ebpf.Tracing, "rawtracepoint": ebpf.Tracing,
}

// KfuncAllowed reports whether a probe of type provider may call kernel
// function name.
func (Kernel) KfuncAllowed(name, provider string) bool {
	pt, ok := kfuncProgTypes[provider]
	if !ok {
		pt = ebpf.Kprobe
	}
	return kernel.KfuncAllowed(name, pt)
}

// PercpuVar returns the BTF id of the per-CPU kernel variable name. The
// verifier finds the variable's address in kallsyms, which must list it.
func (k Kernel) PercpuVar(name string) (uint32, error) {
	id, err := kernel.PercpuVar(name)
	if err != nil {
		return 0, err
	}
	if _, err := k.Symbol(name); err != nil {
		return 0, err
	}
	return uint32(id), nil
}
