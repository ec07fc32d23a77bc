package instruments

import (
	"strings"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
)

// A probeFunc is what a probe's target says about the function it is
// in, for the log and for count's table.
type probeFunc struct {
	probe  string // the probe's full name, as the probe builtin gives it
	name   string // the function, system call or tracepoint
	symbol string // the symbol addr belongs to, where it differs from name
	addr   uint64 // its address (kallsyms, or the ELF symbol's value); 0 if none
	// tracepoint is a tracepoint's category and name, "" for other
	// probes.
	tracepoint string
}

// syscallSymbols are the prefixes x86-64 kernels give the function
// behind a system call.
var syscallSymbols = []string{"__x64_sys_", "__se_sys_", "__do_sys_", "sys_"}

// A describer describes the functions of probes, reading each binary's
// symbols once.
type describer struct {
	files map[string]*elfsym.File // nil for a file that cannot be read
}

// describe names the function of a probe's target, such as vfs_read,
// readline in /bin/bash or the system call of
// tracepoint:syscalls:sys_exit_openat, and finds its address. A system
// call's tracepoints name the call and give the address of the kernel
// function that implements it.
func (d *describer) describe(t *check.Target) *probeFunc {
	fn := &probeFunc{probe: t.FullName(), name: t.Name}
	switch a := t.Attach.(type) {
	case attach.Kprobe:
		fn.addr = kernelAddr(a.Symbol, a.Offset)
	case attach.Tracing:
		fn.addr = kernelAddr(a.Symbol, 0)
	case attach.Uprobe:
		fn.name = strings.TrimPrefix(t.Name, a.Path+":")
		if f := d.file(a.Path); f != nil {
			fn.addr, _ = f.OffsetAddr(a.Offset)
		}
	case attach.Tracepoint:
		fn.tracepoint = t.Name
		call, ok := strings.CutPrefix(a.Name, "sys_enter_")
		if !ok {
			call, ok = strings.CutPrefix(a.Name, "sys_exit_")
		}
		if a.Category != "syscalls" || !ok {
			break
		}
		fn.name = call
		if ks, err := kernel.LoadKallsyms(); err == nil {
			for _, prefix := range syscallSymbols {
				if addr, ok := ks.Address(prefix + call); ok {
					fn.symbol, fn.addr = prefix+call, addr
					break
				}
			}
		}
	default:
		fn.name = fn.probe
	}
	return fn
}

// kernelAddr is the address of a kernel symbol plus off, or 0.
func kernelAddr(sym string, off uint64) uint64 {
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		return 0
	}
	addr, ok := ks.Address(sym)
	if !ok {
		return 0
	}
	return addr + off
}

// file reads a binary's symbols, once; nil if it cannot.
func (d *describer) file(path string) *elfsym.File {
	f, ok := d.files[path]
	if !ok {
		f, _ = elfsym.Open(path)
		if d.files == nil {
			d.files = map[string]*elfsym.File{}
		}
		d.files[path] = f
	}
	return f
}
