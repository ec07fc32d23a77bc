package instruments

import (
	"strconv"
	"strings"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
)

// A probeFunc is what a probe's name says about the function it is in,
// for the log and for count's table.
type probeFunc struct {
	name   string // the function, system call or tracepoint
	symbol string // the symbol addr belongs to, where it differs from name
	addr   uint64 // its address (kallsyms, or the ELF symbol's value); 0 if none
}

// syscallSymbols are the prefixes x86-64 kernels give the function
// behind a system call.
var syscallSymbols = []string{"__x64_sys_", "__se_sys_", "__do_sys_", "sys_"}

// A describer describes the functions of probes, reading each binary's
// symbols once.
type describer struct {
	files map[string]*elfsym.File // nil for a file that cannot be read
}

// describe names the function of a probe such as "kprobe:vfs_read",
// "uretprobe:/bin/bash:readline" or "tracepoint:syscalls:sys_exit_openat"
// and finds its address. A system call's tracepoints name the call and
// give the address of the kernel function that implements it.
func (d *describer) describe(probe string) *probeFunc {
	provider, rest, _ := strings.Cut(probe, ":")
	switch provider {
	case "kprobe", "kretprobe", "fentry", "fexit":
		fn := &probeFunc{name: rest}
		sym, off := splitOffset(rest)
		if ks, err := kernel.LoadKallsyms(); err == nil {
			if addr, ok := ks.Address(sym); ok {
				fn.addr = addr + off
			}
		}
		return fn
	case "uprobe", "uretprobe":
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return &probeFunc{name: rest}
		}
		path, spec := rest[:i], rest[i+1:]
		fn := &probeFunc{name: spec}
		if strings.HasPrefix(spec, "0x") {
			fn.addr, _ = strconv.ParseUint(spec[2:], 16, 64)
			return fn
		}
		sym, off := splitOffset(spec)
		f, ok := d.files[path]
		if !ok {
			f, _ = elfsym.Open(path)
			if d.files == nil {
				d.files = map[string]*elfsym.File{}
			}
			d.files[path] = f
		}
		if f != nil {
			if s, err := f.Lookup(sym); err == nil {
				fn.addr = s.Addr + off
			}
		}
		return fn
	case "tracepoint":
		cat, name, _ := strings.Cut(rest, ":")
		call, ok := strings.CutPrefix(name, "sys_enter_")
		if !ok {
			call, ok = strings.CutPrefix(name, "sys_exit_")
		}
		if cat != "syscalls" || !ok {
			return &probeFunc{name: rest}
		}
		fn := &probeFunc{name: call}
		if ks, err := kernel.LoadKallsyms(); err == nil {
			for _, prefix := range syscallSymbols {
				if addr, ok := ks.Address(prefix + call); ok {
					fn.symbol, fn.addr = prefix+call, addr
					break
				}
			}
		}
		return fn
	}
	return &probeFunc{name: probe}
}

// splitOffset splits "func+off" into the function and the offset.
func splitOffset(s string) (string, uint64) {
	if i := strings.LastIndexByte(s, '+'); i > 0 {
		if off, err := strconv.ParseUint(s[i+1:], 0, 64); err == nil {
			return s[:i], off
		}
	}
	return s, 0
}
