package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The shipped tools that failed on constants from headers (TASK_RUNNING,
// AF_INET) now compile: runqlat loads and the others get as far as the
// kernel lets them, with no complaint about an identifier or a header.
func TestShippedToolConstants(t *testing.T) {
	t.Parallel()
	tracing(t)
	for _, tool := range []string{"runqlat", "tcpaccept", "tcpconnect", "tcpdrop", "tcpretrans"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			path := "/usr/sbin/" + tool + ".bt"
			if _, err := os.Stat(path); err != nil {
				t.Skipf("bpftrace's tools are not installed: %v", err)
			}
			r := kinst(t, "--dry-run", path)
			if tool == "runqlat" {
				r.want(t, 0, "", "")
				return
			}
			for _, bad := range []string{"unknown identifier", "not found", "#include"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("kinst --dry-run %s: %q in\n%s", path, bad, r.stderr)
				}
			}
		})
	}
}

// runqlat.bt, unchanged, measures the run queue latency of a workload
// that sleeps and wakes 200 times: each wake-up is one sample at least.
func TestRunqlat(t *testing.T) {
	t.Parallel()
	tracing(t)
	const path = "/usr/sbin/runqlat.bt"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("bpftrace's tools are not installed: %v", err)
	}
	r := kinst(t, path, "-c", workload(t)+" nanosleep 200 100")
	const head = "Attaching 5 probes...\nTracing CPU scheduler... Hit Ctrl-C to end.\n"
	if r.code != 0 || !strings.HasPrefix(r.stdout, head) || r.stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	_, hist, ok := strings.Cut(r.stdout, "\n@usecs: \n")
	if !ok {
		t.Fatalf("no @usecs histogram in\n%s", r.stdout)
	}
	hist, _, _ = strings.Cut(hist, "\n\n")
	bucket := regexp.MustCompile(`^\[[^\]]+[\])]\s+(\d+) \|@*\s*\|$`)
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(hist), "\n") {
		m := bucket.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a histogram line: %q in\n%s", line, hist)
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if total < 200 {
		t.Errorf("%d samples for at least 200 wake-ups:\n%s", total, hist)
	}
}

// -I adds a directory for #include, -IDIR too, and --include reads a
// header before the program; a header's macros and errors come through
// with the header's own positions.
func TestIncludeOptions(t *testing.T) {
	t.Parallel()
	tracing(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("defs.h", "#define GREETING \"hi\"\n#define TIMES(x) ((x) * 2)\n")
	bad := write("bad.h", "#define WRONG @m + \"s\"\n")
	prog := write("prog.bt", "#include <defs.h>\nBEGIN { printf(\"%s %d\\n\", GREETING, TIMES(21)); exit(); }\n")
	kinst(t, "-q", "-I", dir, prog).want(t, 0, "hi 42\n\n\n", "")
	kinst(t, "-q", "-I"+dir, prog).want(t, 0, "hi 42\n\n\n", "")
	kinst(t, "-q", "--include", filepath.Join(dir, "defs.h"), "-e", `BEGIN { printf("%s\n", GREETING); exit(); }`).want(t, 0, "hi\n\n\n", "")
	kinst(t, "-q", "--include", bad, "-e", `BEGIN { @m = 1; @n = WRONG; }`).want(t, 1, "",
		bad+":1:15: invalid operation: int64 + string[2] (strings support only == and !=)\n"+
			"#define WRONG @m + \"s\"\n"+
			"              ^~~~~~~~\n")
	kinst(t, "-e", "#include \"nothere.h\"\nBEGIN { exit(); }").want(t, 1, "",
		"-e:1:10: header \"nothere.h\" not found in ., /usr/local/include, /usr/include/x86_64-linux-gnu, /usr/include\n"+
			"#include \"nothere.h\"\n"+
			"         ^~~~~~~~~~~\n")
}

// A system header that is not installed is no error: one warning, and
// the program goes on with BTF.
func TestAbsentSystemHeader(t *testing.T) {
	t.Parallel()
	tracing(t)
	kinst(t, "--dry-run", "-e", "#include <net/sock.h>\n#include <net/sock.h>\n#include <linux/nothere.h>\nBEGIN { @ = sizeof(struct sock); }").want(t, 0, "",
		"kinst: warning: <net/sock.h>, <linux/nothere.h> not found: kinst goes on with the kernel's BTF types\n")
}

// Names resolve without headers: TCP_CLOSE is an enumerator of the
// kernel's BTF, AF_INET6 and SIGKILL come from kinst's table of libc and
// kernel headers, TASK_INTERRUPTIBLE from its kernel-internal list; a
// #define of the program's own wins over all of them.
func TestConstantsWithoutHeaders(t *testing.T) {
	t.Parallel()
	tracing(t)
	kinst(t, "-q", "-e", `BEGIN { printf("%d %d %d %d\n", TCP_CLOSE, AF_INET6, TASK_INTERRUPTIBLE, SIGKILL); exit(); }`).want(t, 0, "7 10 1 9\n\n\n", "")
	kinst(t, "-q", "-e", "#define AF_INET6 99\n#define TCP_CLOSE 98\n"+`BEGIN { printf("%d %d\n", AF_INET6, TCP_CLOSE); exit(); }`).want(t, 0, "99 98\n\n\n", "")
}

// TestHeaderCache runs kinst processes at once on an empty cache
// (KINST_CACHE_DIR): each prints what the header defines, and the cache
// ends with one whole entry, private to its owner. An edited header is
// seen by the next run.
func TestHeaderCache(t *testing.T) {
	t.Parallel()
	tracing(t)
	dir := t.TempDir()
	header := filepath.Join(dir, "defs.h")
	if err := os.WriteFile(header, []byte("#define GREETING \"hi\"\n#define TIMES(x) ((x) * 2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The cache keeps no entry for a header changed a moment ago.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(header, old, old); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	env := []string{"KINST_CACHE_DIR=" + cache}
	prog := "#include <defs.h>\nBEGIN { printf(\"%s %d\\n\", GREETING, TIMES(21)); exit(); }\n"
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { kinstEnv(t, env, "-q", "-I", dir, "-e", prog).want(t, 0, "hi 42\n\n\n", "") })
	}
	wg.Wait()
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || strings.HasPrefix(entries[0].Name(), ".") {
		t.Fatalf("cache holds %v, want one entry", entries)
	}
	for path, want := range map[string]os.FileMode{cache: os.ModeDir | 0o700, filepath.Join(cache, entries[0].Name()): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode(), err, want)
		}
	}
	if err := os.WriteFile(header, []byte("#define GREETING \"ho\"\n#define TIMES(x) ((x) * 3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kinstEnv(t, env, "-q", "-I", dir, "-e", prog).want(t, 0, "ho 63\n\n\n", "")
}
