package codegen

import (
	"slices"
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// TestChoose runs the mechanism choice over probes and fake kernels:
// each row names the mechanisms its kernel supports and expects one
// mechanism and its reason.
func TestChoose(t *testing.T) {
	fn := func(name string, typed bool) *check.Target {
		return &check.Target{Provider: "kprobe", Name: name, Func: name, Typed: typed}
	}
	offset := &check.Target{Provider: "kprobe", Name: "vfs_read+4", Func: "vfs_read", Typed: true}
	noFtrace := &check.Target{Provider: "kprobe", Name: "entry_SYSCALL_64", Func: "entry_SYSCALL_64", NoFtrace: true}
	user := func(file, name string) *check.Target {
		return &check.Target{Provider: "uprobe", Name: file + ":" + name, Func: name}
	}
	probe := func(provider string, targets ...*check.Target) *check.Probe {
		return &check.Probe{Provider: provider, Targets: targets}
	}
	using := func(p *check.Probe, builtin string) *check.Probe {
		p.Uses = map[string]bool{builtin: true}
		return p
	}
	calling := func(p *check.Probe, f string) *check.Probe {
		p.Calls = map[*syntax.CallExpr]*check.Call{{}: {Func: f}}
		return p
	}
	all := []Mechanism{MechKprobeMulti, MechFentry, MechFexit, MechFmodRet, MechUprobeMulti}
	tests := []struct {
		name     string
		probe    *check.Probe
		supports []Mechanism
		force    Mechanism
		want     Mechanism
		why      string
	}{
		{"begin", probe("BEGIN"), all, "", MechTestRun, "BEGIN and END run once, in kinst's own context"},
		{"end forced", probe("END"), all, MechKprobe, MechTestRun, "BEGIN and END run once, in kinst's own context"},
		{"test", probe("test"), all, "", MechXDP, "test and bench probes run as XDP programs, which the kernel can run repeatedly and time"},
		{"bench forced", probe("bench"), all, MechKprobe, MechXDP, "test and bench probes run as XDP programs, which the kernel can run repeatedly and time"},
		{"tracepoint", probe("tracepoint"), nil, "", MechTracepoint, "tracepoints attach through perf events"},
		{"rawtracepoint", probe("rawtracepoint"), nil, "", MechRawTracepoint, "raw tracepoints attach by name"},
		{"interval", probe("interval"), nil, "", MechPerfEvent, "timers are perf events"},
		{"software", probe("software"), nil, "", MechPerfEvent, "software and hardware events are perf events"},
		{"watchpoint", probe("watchpoint"), nil, "", MechPerfEvent, "watchpoints are perf breakpoint events"},
		{"iter", probe("iter"), nil, "", MechIter, "iterators are tracing programs the kernel runs per object"},
		{"fentry asked", probe("fentry", fn("vfs_read", true)), nil, "", MechFentry, "asked for fentry"},
		{"fexit asked", probe("fexit", fn("vfs_read", true)), nil, "", MechFexit, "asked for fexit"},
		{"fmod_ret asked", probe("fmod_ret", fn("vfs_read", true)), nil, "", MechFmodRet, "asked for fmod_ret"},

		{"kprobe typed", probe("kprobe", fn("vfs_read", true)), all, "", MechFentry, "a BPF trampoline (fentry) costs a call where a kprobe costs a breakpoint"},
		{"kretprobe typed", probe("kretprobe", fn("vfs_read", true)), all, "", MechFexit, "a BPF trampoline (fexit) costs a call where a kprobe costs a breakpoint"},
		{"kprobe untyped", probe("kprobe", fn("vfs_read", false)), all, "", MechKprobe, "the function has no BTF type, which a trampoline needs"},
		{"kprobe no fentry", probe("kprobe", fn("vfs_read", true)), nil, "", MechKprobe, "this kernel refuses fentry programs"},
		{"kretprobe no fexit", probe("kretprobe", fn("vfs_read", true)), []Mechanism{MechFentry}, "", MechKprobe, "this kernel refuses fexit programs"},
		{"kprobe offset", probe("kprobe", offset), all, "", MechKprobe, "an offset into a function needs a kprobe"},
		{"kprobe offset forced", probe("kprobe", offset), all, MechFentry, MechKprobe, "an offset into a function needs a kprobe"},
		{"kprobe beyond ftrace", probe("kprobe", noFtrace), all, "", MechKprobe, "ftrace cannot reach entry_SYSCALL_64: only a kprobe attaches to it"},
		{"kprobe beyond ftrace forced", probe("kprobe", noFtrace), all, MechKprobeMulti, MechKprobe, "ftrace cannot reach entry_SYSCALL_64: only a kprobe attaches to it"},
		{"kprobe sarg", using(probe("kprobe", fn("vfs_read", true)), "sarg0"), all, "", MechKprobe, "the program reads saved registers, which only a kprobe gives"},
		{"kprobe ctx", using(probe("kprobe", fn("vfs_read", true)), "ctx"), all, "", MechKprobe, "the program reads saved registers, which only a kprobe gives"},
		{"kprobe reg", calling(probe("kprobe", fn("vfs_read", true)), "reg"), all, MechKprobeMulti, MechKprobe, "the program reads saved registers, which only a kprobe gives"},
		{"kprobe override", calling(probe("kprobe", fn("vfs_read", true)), "override"), all, "", MechKprobe, "the program reads saved registers, which only a kprobe gives"},
		{"kprobe many", probe("kprobe", fn("vfs_read", true), fn("vfs_write", true)), all, "", MechKprobeMulti, "one kprobe.multi link attaches all 2 functions"},
		{"kprobe many no multi", probe("kprobe", fn("vfs_read", true), fn("vfs_write", true)), []Mechanism{MechFentry}, "", MechKprobe, "this kernel has no kprobe.multi: one kprobe link per function"},
		{"forced kprobe", probe("kprobe", fn("vfs_read", true)), all, MechKprobe, MechKprobe, "forced with --attach"},
		{"forced multi", probe("kprobe", fn("vfs_read", true)), nil, MechKprobeMulti, MechKprobeMulti, "forced with --attach"},
		{"forced fentry on return", probe("kretprobe", fn("vfs_read", true)), nil, MechFentry, MechFexit, "forced with --attach"},
		{"forced fentry untyped", probe("kprobe", fn("vfs_read", true), fn("mystery", false)), all, MechFentry, MechKprobe, "--attach asked for a trampoline, but BTF does not describe every function"},

		{"uprobe one", probe("uprobe", user("/bin/bash", "readline")), all, "", MechUprobe, "one function"},
		{"uprobe many", probe("uprobe", user("/bin/bash", "readline"), user("/bin/bash", "main")), all, "", MechUprobeMulti, "one uprobe.multi link attaches all 2 functions"},
		{"uretprobe many", probe("uretprobe", user("/bin/bash", "readline"), user("/bin/bash", "main")), all, "", MechUprobeMulti, "one uprobe.multi link attaches all 2 functions"},
		{"uprobe many files", probe("uprobe", user("/bin/bash", "readline"), user("/bin/sh", "main")), all, "", MechUprobe, "this kernel has no uprobe.multi, or the functions are in several files: one link each"},
		{"uprobe no multi", probe("uprobe", user("/bin/bash", "readline"), user("/bin/bash", "main")), nil, "", MechUprobe, "this kernel has no uprobe.multi, or the functions are in several files: one link each"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &compiler{opts: &Options{
				Force:    tt.force,
				Supports: func(m Mechanism) bool { return slices.Contains(tt.supports, m) },
			}}
			got, why := c.choose(tt.probe)
			if got != tt.want || why != tt.why {
				t.Errorf("got %s (%s), want %s (%s)", got, why, tt.want, tt.why)
			}
		})
	}
}

// TestChooseNoFeatures checks that a kernel answering nothing, as when
// Options.Supports is nil, gets kprobes.
func TestChooseNoFeatures(t *testing.T) {
	c := &compiler{opts: &Options{}}
	p := &check.Probe{Provider: "kprobe", Targets: []*check.Target{{Provider: "kprobe", Name: "vfs_read", Func: "vfs_read", Typed: true}}}
	if got, why := c.choose(p); got != MechKprobe || why != "this kernel refuses fentry programs" {
		t.Errorf("got %s (%s), want kprobe", got, why)
	}
}
