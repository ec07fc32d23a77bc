package codegen

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/check"
)

// TestSplitSyscalls splits tracepoint probes into raw_syscalls programs
// and the rest, and chooses each one's mechanism.
func TestSplitSyscalls(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("kinst has the system call numbers of x86-64 only")
	}
	tp := func(names ...string) []*check.Target {
		var ts []*check.Target
		for _, n := range names {
			cat, name, _ := strings.Cut(n, ":")
			if name == "" {
				cat, name = "syscalls", n
			}
			ts = append(ts, &check.Target{Provider: "tracepoint", Name: cat + ":" + name, Func: name})
		}
		return ts
	}
	enter := []string{"sys_enter_read", "sys_enter_write", "sys_enter_openat", "sys_enter_close", "sys_enter_getppid", "sys_enter_newfstat", "sys_enter_umount", "sys_enter_mmap"}
	exit := []string{"sys_exit_read", "sys_exit_write", "sys_exit_openat", "sys_exit_close", "sys_exit_getppid", "sys_exit_newfstat", "sys_exit_umount", "sys_exit_mmap"}
	mixed := slices.Concat([]string{"sched:sched_switch"}, enter, exit)
	offset := func() (int, error) { return 16, nil }
	tests := []struct {
		name    string
		targets []*check.Target
		compat  func() (int, error)
		want    []string // per part: mechanism, why, first target, number of targets
	}{
		{"eight enter", tp(enter...), offset, []string{
			"raw_syscalls (one perf event on raw_syscalls:sys_enter serves all 8 syscalls tracepoints, told apart by system call number) syscalls:sys_enter_read 8"}},
		{"seven enter", tp(enter[:7]...), offset, []string{
			"tracepoint (tracepoints attach through perf events) syscalls:sys_enter_read 7"}},
		{"no compat offset", tp(enter...), func() (int, error) { return 0, errors.New("no BTF") }, []string{
			"tracepoint (tracepoints attach through perf events) syscalls:sys_enter_read 8"}},
		{"unknown call", tp(slices.Concat(enter[:7], []string{"sys_enter_nosuchcall"})...), offset, []string{
			"tracepoint (tracepoints attach through perf events) syscalls:sys_enter_read 8"}},
		{"both and another", tp(mixed...), offset, []string{
			"raw_syscalls (one perf event on raw_syscalls:sys_enter serves all 8 syscalls tracepoints, told apart by system call number) syscalls:sys_enter_read 8",
			"raw_syscalls (one perf event on raw_syscalls:sys_exit serves all 8 syscalls tracepoints, told apart by system call number) syscalls:sys_exit_read 8",
			"tracepoint (tracepoints attach through perf events) sched:sched_switch 1"}},
		{"few exits stay with the rest", tp(slices.Concat([]string{"sched:sched_switch"}, enter, exit[:2])...), offset, []string{
			"raw_syscalls (one perf event on raw_syscalls:sys_enter serves all 8 syscalls tracepoints, told apart by system call number) syscalls:sys_enter_read 8",
			"tracepoint (tracepoints attach through perf events) sched:sched_switch 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &compiler{opts: &Options{CompatStatus: tt.compat}}
			var got []string
			for _, p := range c.splitSyscalls(&check.Probe{Provider: "tracepoint", Targets: tt.targets}) {
				mech, why := c.choose(p)
				got = append(got, fmt.Sprintf("%s (%s) %s %d", mech, why, p.Targets[0].Name, len(p.Targets)))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestSplitSyscallsReadsBTFOnlyForFamilies: the offset CompatStatus gives
// comes from the kernel's BTF, megabytes to read, so probes with too few
// syscalls tracepoints to form a family never ask for it.
func TestSplitSyscallsReadsBTFOnlyForFamilies(t *testing.T) {
	asked := 0
	c := &compiler{opts: &Options{CompatStatus: func() (int, error) { asked++; return 16, nil }}}
	p := &check.Probe{Provider: "tracepoint", Targets: []*check.Target{
		{Provider: "tracepoint", Name: "syscalls:sys_enter_openat", Func: "sys_enter_openat"},
		{Provider: "tracepoint", Name: "sched:sched_switch", Func: "sched_switch"},
	}}
	if parts := c.splitSyscalls(p); len(parts) != 1 || asked != 0 {
		t.Errorf("%d parts, CompatStatus asked %d times; want 1 part, not asked", len(parts), asked)
	}
}
