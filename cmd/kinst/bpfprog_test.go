package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/internal/testenv"
)

// default026 is the environment of the default mode, bpftrace 0.26.1's.
var default026 = []string{"KINST_COMPAT="}

// btfTarget loads a program with BTF named name, with the sub-program
// name_sub, and returns it with its id.
func btfTarget(t *testing.T, name string) (*ebpf.Program, ebpf.ProgramID) {
	t.Helper()
	prog := testenv.BTFProgram(t, name, name+"_sub")
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Fatal("the kernel gives no program id")
	}
	return prog, id
}

// runOnce runs prog once, as a packet filter.
func runOnce(t *testing.T, prog *ebpf.Program) {
	t.Helper()
	if _, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Fatalf("run the target program: %v", err)
	}
}

// fentry:bpf and fexit:bpf attach to a running program and its
// sub-programs, each named by probe as fentry:bpf:ID:NAME: by name alone,
// and by id with a wildcard; fexit reads each function's return value,
// and arg0 is the program's context.
func TestFentryBPFProgram(t *testing.T) {
	testenv.Require(t, testenv.Fentry, testenv.Fexit, testenv.Ringbuf)
	prog, id := btfTarget(t, "kinst_bpfp")
	for _, tc := range []struct {
		name, prog string
		links      int
		want       string
	}{
		{"name", `fexit:bpf:kinst_bpfp { @[probe] = count(); exit(); }`, 1,
			fmt.Sprintf("\n\n@[fexit:bpf:%d:kinst_bpfp]: 1\n", id)},
		{"id", fmt.Sprintf(`fentry:bpf:%d:* { @[probe] = count(); } fexit:bpf:%[1]d:* { @r[probe] = retval; } fexit:bpf:kinst_bpfp { exit(); }`, id), 5,
			fmt.Sprintf("\n\n@[fentry:bpf:%d:kinst_bpfp]: 1\n@[fentry:bpf:%[1]d:kinst_bpfp_sub]: 1\n@r[fexit:bpf:%[1]d:kinst_bpfp]: 7\n@r[fexit:bpf:%[1]d:kinst_bpfp_sub]: 7\n", id)},
		{"arg0", fmt.Sprintf(`fentry:bpf:%d:kinst_bpfp { @ctx = arg0 != 0; exit(); }`, id), 1, "\n\n@ctx: true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startEnv(t, default026, "-q", "-e", tc.prog)
			k.waitAttached(t, tc.links)
			runOnce(t, prog)
			k.wait(t).want(t, 0, tc.want, "")
		})
	}
}

// The listing names each function of a running program with BTF as
// fentry:bpf:ID:NAME, the program first.
func TestListBPFPrograms(t *testing.T) {
	_, id := btfTarget(t, "kinst_bpfl")
	want := fmt.Sprintf("fexit:bpf:%d:kinst_bpfl\nfexit:bpf:%[1]d:kinst_bpfl_sub\n", id)
	kinstEnv(t, default026, "-l", fmt.Sprintf("fexit:bpf:%d:*", id)).want(t, 0, want, "")
	kinstEnv(t, default026, "-l", "fexit:bpf:kinst_bpfl*").want(t, 0, want, "")
}

// Errors name the attach point and say what is missing.
func TestFentryBPFProgramErrors(t *testing.T) {
	testenv.Require(t, testenv.Fentry)
	_, id := btfTarget(t, "kinst_bpfe")
	for _, tc := range []struct {
		name, prog, stderr string
		env                []string
	}{
		{"no-name", `fentry:bpf:kinst_nosuch { }`, `-e:1:1: no matches for fentry:bpf:kinst_nosuch: no running BPF program or sub-program with BTF is named kinst_nosuch; kinst -l 'fentry:bpf:*' lists those there are
fentry:bpf:kinst_nosuch { }
^~~~~~~~~~~~~~~~~~~~~~~
`, default026},
		{"no-id", `fentry:bpf:0:kinst_bpfe { }`, `-e:1:1: no running BPF program has id 0; kinst -l 'fentry:bpf:*' lists the running programs with BTF
fentry:bpf:0:kinst_bpfe { }
^~~~~~~~~~~~~~~~~~~~~~~
`, default026},
		{"id-other-name", fmt.Sprintf(`fexit:bpf:%d:kinst_nosuch { }`, id), fmt.Sprintf(`-e:1:1: no matches for fexit:bpf:%d:kinst_nosuch: BPF program %[1]d has no function named kinst_nosuch; kinst -l 'fexit:bpf:*' lists those there are
fexit:bpf:%[1]d:kinst_nosuch { }
^%s
`, id, strings.Repeat("~", len(fmt.Sprint(id))+22)), default026},
		{"bad-id", `fentry:bpf:x:kinst_bpfe { }`, `-e:1:1: the BPF program id "x" is not a number or *
fentry:bpf:x:kinst_bpfe { }
^~~~~~~~~~~~~~~~~~~~~~~
`, default026},
		// bpftrace 0.17 has no such probes: bpf is read as a module.
		{"0.17", `fentry:bpf:kinst_bpfe { }`, `-e:1:1: kernel function kinst_bpfe does not exist or cannot be traced; kinst -l 'fentry:kinst_bpfe*' lists similar ones
fentry:bpf:kinst_bpfe { }
^~~~~~~~~~~~~~~~~~~~~
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinstEnv(t, tc.env, "-e", tc.prog).want(t, 1, "", tc.stderr)
		})
	}
}

// args has no type on BPF programs: a located error, before the
// programs are looked for, so wherever fentry is refused too.
func TestFentryBPFProgramArgs(t *testing.T) {
	kinstEnv(t, default026, "-e", `fentry:bpf:kinst_any { print(args); }`).want(t, 1, "", `-e:1:30: args is not available in fentry:bpf probes, on running BPF programs; arg0, arg1, … read their arguments
fentry:bpf:kinst_any { print(args); }
                             ^~~~
`)
}

// One kinst traces another's program: a loop over a map makes it a
// program with a sub-program (the loop's body, formap_3), which BTF
// describes, the program's function named probe.
func TestFexitOtherKinst(t *testing.T) {
	testenv.Require(t, testenv.Fexit, testenv.ForEachMapElem, testenv.Ringbuf)
	first := startEnv(t, default026, "-q", "-e", `interval:100ms { @m[1] = 1; for ($kv : @m) { @n = $kv.1; } }`)
	held := first.waitAttached(t, 1)
	if len(held.progs) != 1 {
		t.Fatalf("the first kinst holds programs %v, want one", held.progs)
	}
	var id ebpf.ProgramID
	for id = range held.progs {
	}
	list := kinstEnv(t, default026, "-l", fmt.Sprintf("fexit:bpf:%d:*", id))
	list.want(t, 0, fmt.Sprintf("fexit:bpf:%d:formap_3\nfexit:bpf:%[1]d:probe\n", id), "")
	kinstEnv(t, default026, "-q", "-e", fmt.Sprintf(`fexit:bpf:%d:probe { @[probe] = 1; exit(); }`, id)).
		want(t, 0, fmt.Sprintf("\n\n@[fexit:bpf:%d:probe]: 1\n", id), "")
}
