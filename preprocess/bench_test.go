package preprocess

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkShippedTools measures what preprocessing costs the tools
// Debian's bpftrace installs, against the real system headers: biolatency
// has no directives, runqlat includes <linux/sched.h> (kernel UAPI),
// tcpaccept <sys/socket.h> (glibc, 14 headers deep) and runqlen skips
// its includes and declarations with #ifndef BPFTRACE_HAVE_BTF.
func BenchmarkShippedTools(b *testing.B) {
	for _, tool := range []string{"biolatency", "runqlat", "tcpaccept", "runqlen"} {
		path := "/usr/sbin/" + tool + ".bt"
		src, err := os.ReadFile(path)
		if err != nil {
			b.Logf("%s: %v", tool, err)
			continue
		}
		b.Run(tool, func(b *testing.B) {
			conf := &Config{BTF: func() bool { return true }}
			for b.Loop() {
				if _, err := Preprocess(path, src, conf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllShippedTools preprocesses every tool in /usr/sbin once per
// iteration: the cost of the whole collection.
func BenchmarkAllShippedTools(b *testing.B) {
	paths, _ := filepath.Glob("/usr/sbin/*.bt")
	if len(paths) == 0 {
		b.Skip("bpftrace's tools are not installed")
	}
	srcs := make([][]byte, len(paths))
	for i, p := range paths {
		var err error
		if srcs[i], err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
	conf := &Config{BTF: func() bool { return true }}
	for b.Loop() {
		for i, p := range paths {
			if _, err := Preprocess(p, srcs[i], conf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(paths)), "tools")
}
