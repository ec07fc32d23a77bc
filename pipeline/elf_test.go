package pipeline

import (
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
)

// Sections name the target where libbpf could attach to it, and the
// kind of program otherwise.
func TestSectionName(t *testing.T) {
	target := func(provider, name, fn string) *check.Target {
		return &check.Target{Provider: provider, Name: name, Func: fn}
	}
	tests := []struct {
		mech    codegen.Mechanism
		targets []*check.Target
		want    string
	}{
		{codegen.MechKprobe, []*check.Target{target("kprobe", "vfs_read", "vfs_read")}, "kprobe/vfs_read"},
		{codegen.MechKprobe, []*check.Target{target("kretprobe", "vfs_read", "vfs_read")}, "kretprobe/vfs_read"},
		{codegen.MechKprobe, []*check.Target{target("kprobe", "vfs_read+16", "vfs_read")}, "kprobe/vfs_read+16"},
		{codegen.MechKprobe, []*check.Target{target("kprobe", "vfs_read", "vfs_read"), target("kprobe", "vfs_write", "vfs_write")}, "kprobe"},
		{codegen.MechUprobe, []*check.Target{target("uprobe", "/bin/bash:readline", "readline")}, "uprobe//bin/bash:readline"},
		{codegen.MechUprobe, []*check.Target{target("uretprobe", "/bin/bash:readline", "readline")}, "uretprobe//bin/bash:readline"},
		{codegen.MechUprobe, []*check.Target{target("usdt", "/bin/x:prov:probe", "probe")}, "uprobe"},
		// A kind libbpf has no section for is named by the program type.
		{codegen.MechUprobe, []*check.Target{target("watchpoint", "/bin/x:f+arg0:8:w", "f")}, ""},
		{codegen.MechKprobeMulti, []*check.Target{target("kprobe", "vfs_read", "vfs_read")}, "kprobe.multi"},
		{codegen.MechKprobeMulti, []*check.Target{target("kretprobe", "vfs_read", "vfs_read")}, "kretprobe.multi"},
		{codegen.MechKprobeSession, []*check.Target{target("kprobe", "vfs_read", "vfs_read")}, "kprobe.session"},
		{codegen.MechUprobeMulti, []*check.Target{target("uprobe", "/bin/bash:readline", "readline")}, "uprobe.multi"},
		{codegen.MechUprobeMulti, []*check.Target{target("uretprobe", "/bin/bash:readline", "readline")}, "uretprobe.multi"},
		{codegen.MechTracepoint, []*check.Target{target("tracepoint", "syscalls:sys_enter_read", "sys_enter_read")}, "tracepoint/syscalls/sys_enter_read"},
		{codegen.MechRawTracepoint, []*check.Target{target("rawtracepoint", "sched_switch", "sched_switch")}, "raw_tracepoint/sched_switch"},
		{codegen.MechTestRun, []*check.Target{target("BEGIN", "", "")}, ""},
		{codegen.MechPerfEvent, []*check.Target{target("profile", "hz:99", "99")}, ""},
		// bpfelf names a trampoline by the function it is bound to.
		{codegen.MechFentry, []*check.Target{target("kprobe", "vfs_read", "vfs_read")}, ""},
	}
	for _, tt := range tests {
		p := &codegen.Program{Mechanism: tt.mech, Targets: tt.targets}
		if got := sectionName(p); got != tt.want {
			t.Errorf("%s of %s: section %q, want %q", tt.mech, tt.targets[0].FullName(), got, tt.want)
		}
	}
}
