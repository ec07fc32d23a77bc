package main

import (
	"regexp"
	"testing"
)

// TestStacksInBegin: BEGIN and END run by BPF_PROG_TEST_RUN in kinst's
// own process, and their kstack is the kernel's path from kinst's bpf()
// call to the program, as both bpftrace releases print it on this
// kernel; their ustack is kinst's own.
func TestStacksInBegin(t *testing.T) {
	// The program's own frame is named after its tag; the offsets
	// depend on the kernel's build.
	kstack := regexp.MustCompile(`^\n {8}bpf_prog_[0-9a-f]{16}_p1_BEGIN\+\d+\n {8}__bpf_prog_test_run_raw_tp\+\d+\n\n\(\n {8}\S+\n, a\)\n\n\n$`)
	for _, mode := range []string{"KINST_COMPAT=", "KINST_COMPAT=0.17"} {
		r := kinstEnv(t, []string{mode}, "-q", "-e", `BEGIN { printf("%s\n", kstack(2)); print((ustack(1), "a")); exit(); }`)
		if r.code != 0 || r.stderr != "" || !kstack.MatchString(r.stdout) {
			t.Errorf("%s: exit status %d\nstdout:\n%q\nstderr:\n%s", mode, r.code, r.stdout, r.stderr)
		}
	}
}
