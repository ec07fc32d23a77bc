package main

import (
	"runtime"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// override() in a kprobe replaces the probed function's result without
// running it: the workload's five nanosleep calls return -7, which the
// exit tracepoint counts, as bpftrace's override(rc) does.
func TestKprobeOverride(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the probed syscall is named for x86-64")
	}
	testenv.Require(t, testenv.Kprobe, testenv.Tracepoint, testenv.Ringbuf)
	prog := `kprobe:__x64_sys_nanosleep /tid == cpid/ { override(-7); }
tracepoint:syscalls:sys_exit_nanosleep /tid == cpid/ { @ret[args->ret] = count(); }`
	// Without --unsafe the program is refused before anything runs,
	// whether or not the kernel has the helper.
	kinst(t, "-e", prog, "-c", workload(t)+" nanosleep 5 1000").want(t, 1, "",
		"-e:1:44: override() changes the system it runs on: run kinst with --unsafe to allow it\n"+
			"kprobe:__x64_sys_nanosleep /tid == cpid/ { override(-7); }\n"+
			strings.Repeat(" ", 43)+"^~~~~~~~\n")
	if st := kernel.Probe(kernel.FeatOverrideReturn); !st.Available {
		t.Skip(st.Reason)
	}
	kinst(t, "-q", "--unsafe", "-e", prog, "-c", workload(t)+" nanosleep 5 1000").want(t, 0, "\n\n@ret[-7]: 5\n", "")
}
