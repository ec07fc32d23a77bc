package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// kernelReasons are the refusals that are about the machine, not about
// kinst: a probe type the kernel lacks, a function, symbol, library or
// struct field that is not there (runqlen reads a field 6.13 renamed), a
// function the kernel refuses kprobes in. Anything else is a gap in
// kinst's language.
var kernelReasons = regexp.MustCompile(`not available|the kernel refuses a kprobe|refused by this kernel|no such binary|does not exist or cannot be traced|no traceable kernel function matches|no such function|no matches for uprobe|failed to resolve kernel symbol|in this kernel's BTF has no field`)

// shippedTools finds the tools Debian's bpftrace package installs in
// /usr/sbin, or that vmrun put on the guest's PATH with --file.
func shippedTools(t *testing.T) []string {
	t.Helper()
	dirs := append([]string{"/usr/sbin"}, filepath.SplitList(os.Getenv("PATH"))...)
	seen := map[string]bool{}
	var tools []string
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.bt"))
		for _, f := range files {
			if name := filepath.Base(f); !seen[name] {
				seen[name] = true
				tools = append(tools, f)
			}
		}
	}
	if len(tools) == 0 {
		t.Skip("no bpftrace tools in /usr/sbin or on PATH (make deps installs Debian's bpftrace)")
	}
	return tools
}

// Every tool bpftrace ships compiles and loads, unless this kernel or
// machine lacks what it names, which kinst then says.
func TestShippedToolsLoad(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	for _, tool := range shippedTools(t) {
		t.Run(strings.TrimSuffix(filepath.Base(tool), ".bt"), func(t *testing.T) {
			t.Parallel()
			r := kinst(t, "--dry-run", tool)
			if r.code == 0 {
				return
			}
			// Warnings (a header this machine lacks) come before the error.
			first := r.stderr
			for strings.HasPrefix(first, "kinst: warning: ") {
				_, first, _ = strings.Cut(first, "\n")
			}
			first, _, _ = strings.Cut(first, "\n")
			if !kernelReasons.MatchString(first) {
				t.Errorf("exit status %d, and the reason is not the kernel's:\n%s", r.code, r.stderr)
			}
		})
	}
}
