package main

import (
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestCompatSwitch runs the same program in the default mode (bpftrace
// 0.26.1) and in the 0.17 mode, chosen by --compat and by KINST_COMPAT.
func TestCompatSwitch(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { printf("%s|", probe); exit(); } END { printf("%s\n", probe); }`
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", []string{"KINST_COMPAT="}, nil, "begin|end\n"},
		{"flag", nil, []string{"--compat", "0.17"}, "BEGIN|END\n"},
		{"env", []string{"KINST_COMPAT=0.17"}, nil, "BEGIN|END\n"},
		{"flag over env", []string{"KINST_COMPAT=0.17"}, []string{"--compat=0.26"}, "begin|end\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := kinstEnv(t, tc.env, append(tc.args, "-q", "-e", prog)...)
			if r.code != 0 || r.stdout != tc.want+"\n\n" && r.stdout != tc.want {
				t.Errorf("exit %d, stdout %q, want %q\nstderr:\n%s", r.code, r.stdout, tc.want, r.stderr)
			}
		})
	}
	kinstEnv(t, []string{"KINST_COMPAT=0.18"}, "-e", prog).want(t, 2, "",
		"kinst: KINST_COMPAT: unknown bpftrace version \"0.18\": kinst follows 0.26.1 by default, and 0.17 on request\n")
	kinst(t, "--compat", "1", "-e", prog).want(t, 2, "",
		"kinst: --compat: unknown bpftrace version \"1\": kinst follows 0.26.1 by default, and 0.17 on request\n")
}

// TestVerifyLLVMIR: bpftrace 0.26's test engine passes --verify-llvm-ir
// to every run, and kinst, which has no LLVM IR, takes it as a no-op.
func TestVerifyLLVMIR(t *testing.T) {
	testenv.Root(t)
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "--verify-llvm-ir", "-q", "-e", `BEGIN { printf("ok\n"); exit(); }`).want(t, 0, "ok\n\n\n", "")
}

// TestKeptAfterIf: a variable every branch of an if/else assigns is read
// after it, as bpftrace 0.17's tools do, with a warning in the default
// mode, where bpftrace 0.26.1 refuses it; none in the 0.17 mode.
func TestKeptAfterIf(t *testing.T) {
	testenv.Root(t)
	const prog = `BEGIN { if (1) { $a = "v4"; } else { $a = "v6"; } printf("%s\n", $a); exit(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog).want(t, 0, "v4\n\n\n", `-e:1:66: warning: $a is assigned in every branch of an if/else but declared before none: bpftrace 0.26.1 refuses to read it after the if, as bpftrace 0.17 did not (declare it first with let $a;)
BEGIN { if (1) { $a = "v4"; } else { $a = "v6"; } printf("%s\n", $a); exit(); }
`+strings.Repeat(" ", 65)+`^~
`)
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", prog).want(t, 0, "v4\n\n\n", "")
}

// TestRemovedSyntax: what bpftrace 0.25 removed without giving the
// syntax another meaning still works in both modes, with a warning in
// the default mode, where bpftrace 0.26.1 refuses it.
func TestRemovedSyntax(t *testing.T) {
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	prog := "uprobe:" + bin + ":kinst_add { @ = sarg0; }"
	warning := "-e:1:" + strconv.Itoa(len(prog)-7) + ": warning: sarg0 was removed in bpftrace 0.25, which refuses it and reads the stack with *(reg(\"sp\") + OFFSET); kinst still reads it\n" +
		prog + "\n" + strings.Repeat(" ", len(prog)-8) + "^~~~~\n"
	kinstEnv(t, []string{"KINST_COMPAT="}, "--dry-run", "-e", prog).want(t, 0, "", warning)
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "--dry-run", "-e", prog).want(t, 0, "", "")
	prog = "asyncwatchpoint:kinst_watch+arg0:8:w { @ = count(); }"
	kinstEnv(t, []string{"KINST_COMPAT="}, "--dry-run", "-e", prog, "-c", bin+" watch 1").want(t, 0, "",
		"-e:1:1: warning: asyncwatchpoint was removed in bpftrace 0.25, which refuses it; kinst still sets it\n"+prog+"\n^"+strings.Repeat("~", 35)+"\n")
}
