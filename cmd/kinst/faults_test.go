package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// Each fault injected at one step (see internal/inject) ends kinst with
// one sentence saying what failed and status 1, and leaves nothing
// behind: no program of its own in the kernel, no -c command.
func TestInjectedFaults(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	bin := target(t)
	tests := []struct {
		name   string
		inject string
		out    string // -o, with a probe printing to it
		stdout string
		stderr string // with MARK for the mark
	}{
		{name: "map creation refused", inject: "maps.fail=1",
			stderr: "kinst: load: create maps: maps: injected fault\n"},
		{name: "second load refused", inject: "load.fail=2",
			stderr: "-e:1:NN: cannot load probe tracepoint:syscalls:sys_enter_getpid as tracepoint: load: injected fault\nPROG\n" +
				"INDENT^" + strings.Repeat("~", 35) + "\n"},
		{name: "second attach fails", inject: "attach.fail=2", stdout: "Attaching 2 probes...\n",
			stderr: "-e:1:NN: attach tracepoint:syscalls:sys_enter_getpid: attach: injected fault\nPROG\n" +
				"INDENT^" + strings.Repeat("~", 35) + "\n"},
		{name: "command does not start", inject: "command.fail=1",
			stderr: "kinst: command " + bin + ": command: injected fault\n"},
		// What was read is printed, and the maps.
		{name: "ring buffer unreadable", inject: "read.fail=1", stdout: "Attaching 2 probes...\n\n\n@a: 0\n@b: 0\n",
			stderr: "kinst: read events: read: injected fault\n"},
		{name: "output device full", out: "/dev/full", stdout: "\n\n",
			stderr: "kinst: write output: write /dev/full: no space left on device\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mark := newMark()
			ms := strconv.FormatInt(5000+mark%1000, 10)
			prog := fmt.Sprintf(`tracepoint:syscalls:sys_enter_getppid /pid == %[1]d/ { @a = count(); } `+
				`tracepoint:syscalls:sys_enter_getpid /pid == %[1]d/ { @b = count(); }`, mark)
			args := []string{"-c", bin + " sleep " + ms}
			if tt.out != "" {
				prog += ` interval:ms:10 { printf("tick\n"); }`
				args = append(args, "-o", tt.out)
			}
			args = append(args, "-e", prog)
			// The second probe starts after the first's "} ".
			col := strings.Index(prog, "} ") + 3
			stderr := strings.NewReplacer("PROG", prog, "NN", strconv.Itoa(col), "INDENT", strings.Repeat(" ", col-1)).Replace(tt.stderr)
			kinstEnv(t, []string{"KINST_INJECT=" + tt.inject}, args...).want(t, 1, tt.stdout, stderr)
			checkGone(t, bpfHeld{}, mark)
			checkNoProcess(t, "sleep", ms)
		})
	}
}
