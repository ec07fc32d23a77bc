package main

import (
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// TestCommOfPid: bpftrace 0.26.1's comm(pid) names the task pid has:
// in a task iterator, which runs in kinst's process, pid is kinst's own.
// A pid no task has gives N/A and the warning 0.26.1's standard library
// makes, located there; probes whose type may not call the kfunc
// bpf_task_from_pid refuse it.
func TestCommOfPid(t *testing.T) {
	testenv.Require(t, testenv.Iter, testenv.Ringbuf)
	if !kernel.KfuncAllowed("bpf_task_from_pid", ebpf.Tracing) {
		t.Skip("the kernel has no bpf_task_from_pid (Linux 6.2) for tracing programs")
	}
	self := comm(filepath.Base(testenv.Kinst(t)))
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", `iter:task { @a = comm(pid); @b = comm(-5); exit() }`).want(t, 0,
		"\n\n@a: "+self+"\n@b: N/A\n",
		"stdlib/base.bt:162:7-46: WARNING: No such process (pid=-5)\n")
	if kernel.KfuncAllowed("bpf_task_from_pid", ebpf.RawTracepoint) {
		return // BEGIN's raw tracepoint programs may call it too
	}
	kinstEnv(t, []string{"KINST_COMPAT="}, "-e", `BEGIN { @a = comm(1); }`).want(t, 1, "",
		"-e:1:14: Syntax comm(PID) is not supported in this probe type yet. Type: special\n"+
			"BEGIN { @a = comm(1); }\n"+
			"             ^~~~~~~\n")
}
