package pipeline

import (
	"io"
	"strings"

	"kinst.dev/kinst/bpfelf"
	"kinst.dev/kinst/codegen"
)

// WriteELF writes out's programs and maps to w as a BPF ELF object in
// libbpf's conventions (see package bpfelf). A program's section
// names its target in libbpf's terms where it has exactly one that
// libbpf could attach to ("tracepoint/syscalls/sys_enter_read",
// "kretprobe/vfs_read", "uprobe//bin/bash:readline"), and otherwise
// only its kind ("kprobe.multi", "uprobe", "perf_event").
func WriteELF(w io.Writer, out *codegen.Output) error {
	coll := out.Collection.Copy()
	for _, p := range out.Programs {
		coll.Programs[p.Name].SectionName = sectionName(p)
		for _, q := range p.Fallback {
			coll.Programs[q.Name].SectionName = sectionName(q)
		}
	}
	return bpfelf.Write(w, coll)
}

// sectionName is a program's section, or "" to let bpfelf name it by
// its type alone.
func sectionName(p *codegen.Program) string {
	t := p.Targets[0]
	ret := strings.HasSuffix(t.Provider, "retprobe")
	kind, target := "", t.Name
	switch p.Mechanism {
	case codegen.MechKprobe, codegen.MechUprobe:
		switch t.Provider {
		case "kprobe", "kretprobe", "uprobe", "uretprobe":
			kind = t.Provider
		case "usdt":
			// A USDT site is an address, which libbpf's uprobe sections
			// cannot name.
			return "uprobe"
		default:
			return ""
		}
	case codegen.MechKprobeMulti:
		if ret {
			return "kretprobe.multi"
		}
		return "kprobe.multi"
	case codegen.MechKprobeSession:
		return "kprobe.session"
	case codegen.MechUprobeMulti:
		if ret {
			return "uretprobe.multi"
		}
		return "uprobe.multi"
	case codegen.MechTracepoint:
		kind, target = "tracepoint", strings.Replace(t.Name, ":", "/", 1)
	case codegen.MechSyscalls:
		// One tracepoint serves every target.
		if strings.HasPrefix(t.Func, "sys_exit_") {
			return "tracepoint/raw_syscalls/sys_exit"
		}
		return "tracepoint/raw_syscalls/sys_enter"
	case codegen.MechRawTracepoint:
		if t.Provider != "rawtracepoint" {
			return ""
		}
		kind, target = "raw_tracepoint", t.Func
	default:
		return ""
	}
	if len(p.Targets) > 1 {
		return kind
	}
	return kind + "/" + target
}
