package main

import (
	"os"
	"path/filepath"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestLongOptions: bpftrace 0.26.1's long names of the one-letter
// options do what the letters do.
func TestLongOptions(t *testing.T) {
	testenv.Root(t)
	out := filepath.Join(t.TempDir(), "out")
	def := []string{"KINST_COMPAT="}
	kinstEnv(t, def, "--quiet", "--cmd", "/bin/true", "--output", out, "-e", `begin { printf("%d\n", cpid > 0); exit(); }`).want(t, 0, "", "")
	if got, err := os.ReadFile(out); err != nil || string(got) != "1\n\n\n" {
		t.Errorf("--output file holds %q (%v), want \"1\\n\\n\\n\"", got, err)
	}
	kinstEnv(t, def, "--pid", "0x1", "-e", `begin { exit(); }`).want(t, 2, "", "kinst: pid '0x1' is not a valid decimal number\n")
	r := kinstEnv(t, def, "--list", "tracepoint:syscalls:sys_enter_getppid")
	r.want(t, 0, "tracepoint:syscalls:sys_enter_getppid\n", "")
	kinstEnv(t, def, "--version").want(t, 0, "kinst v"+version+"\n", "")
}

// TestRefusedOptions: an option of bpftrace 0.26.1 that kinst cannot
// honour is refused in one sentence.
func TestRefusedOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aot", "x", "-e", "begin {}"}, "kinst: --aot: kinst compiles a program each time it runs and builds no ahead-of-time binary: run the script with kinst itself\n"},
		{[]string{"--fmt", "x.bt"}, "kinst: --fmt: kinst has no formatter for bpftrace programs\n"},
		{[]string{"--dwarf-pid", "1", "-e", "begin {}"}, "kinst: --dwarf-pid: kinst does not unwind user stacks with DWARF\n"},
		{[]string{"-kk", "-e", "begin {}"}, "kinst: -kk has been deprecated: a single -k warns of failed helpers, probe reads included\n"},
		{[]string{"-k", "--no-warnings", "-e", "begin {}"}, "kinst: -k, --warnings conflicts with --no-warnings\n"},
		{[]string{"-d", "llvm", "-e", "begin {}"}, "kinst: invalid option for -d: llvm: use ast, types, codegen, dis, verifier, libbpf or all\n"},
		{[]string{"--probe-filter", "[x", "-e", "begin {}"}, "kinst: invalid --probe-filter regex '[x': error parsing regexp: missing closing ]: `[x`\n"},
		{[]string{"--no-feature", "kprobe_multi,fentry", "-e", "begin {}"}, "kinst: --no-feature can only have values 'kprobe_multi,kprobe_session,uprobe_multi', not 'fentry'\n"},
	} {
		kinstEnv(t, []string{"KINST_COMPAT="}, tc.args...).want(t, 2, "", tc.want)
	}
}

// TestDebugStage026: in the default mode -d takes bpftrace 0.26.1's
// stages, prints them on stderr and runs the program; in the 0.17 mode
// -d is still a dry run printing on stdout.
func TestDebugStage026(t *testing.T) {
	testenv.Root(t)
	const prog = `begin { exit(); }`
	const ast = "syntax tree:\nprogram\n  probe\n    attach BEGIN []\n    block\n      expression statement\n        call exit\n"
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-d", "parse", "-e", prog).want(t, 0, "\n\n", ast)
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "--debug=ast,libbpf", "-e", prog).want(t, 0, "\n\n", ast)
	r := kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-d", "-e", prog)
	if r.code != 0 || r.stderr != "" || len(r.stdout) < len(ast) || r.stdout[:len(ast)] != ast {
		t.Errorf("0.17 -d: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestProbeFilter: --probe-filter keeps the probes whose names match,
// and BEGIN and END; a filter matching nothing is an error.
func TestProbeFilter(t *testing.T) {
	testenv.Root(t)
	def := []string{"KINST_COMPAT="}
	kinstEnv(t, def, "--probe-filter", "interval:ms:(200|300)", "-e",
		`begin { printf("begin\n"); } interval:ms:100 { printf("bad\n"); exit(); } interval:ms:200 { printf("a\n"); } interval:ms:300 { printf("b\n"); exit(); } end { printf("end\n"); }`).
		want(t, 0, "begin\na\nb\nend\n\n\n", "Attached 4 probes\n")
	kinstEnv(t, def, "--probe-filter", "nonexistent", "-e", `interval:ms:100 { exit(); }`).
		want(t, 1, "", "kinst: no probes to attach: --probe-filter \"nonexistent\" matches none of the program's probes\n")
}

// TestTraceableFunctions: --traceable-functions replaces the kernel's
// list of the functions kprobes can reach.
func TestTraceableFunctions(t *testing.T) {
	testenv.Root(t)
	list := filepath.Join(t.TempDir(), "funcs")
	if err := os.WriteFile(list, []byte("vfs_read\nvfs_write\nxfs_fs_sync [xfs]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kinstEnv(t, []string{"KINST_COMPAT="}, "--traceable-functions", list, "-l", "kprobe:vfs_*").
		want(t, 0, "kprobe:vfs_read\nkprobe:vfs_write\n", "")
	kinstEnv(t, []string{"KINST_COMPAT="}, "--traceable-functions", "/nonexistent", "-l", "kprobe:vfs_*").
		want(t, 2, "", "kinst: --traceable-functions: stat /nonexistent: no such file or directory\n")
}
