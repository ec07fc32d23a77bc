package preprocess

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkShippedTools measures what preprocessing costs the tools
// Debian's bpftrace installs, against the real system headers: biolatency
// has no directives, runqlat includes <linux/sched.h> (kernel UAPI),
// tcpaccept <sys/socket.h> (glibc, 14 headers deep) and runqlen skips
// its includes and declarations with #ifndef BPFTRACE_HAVE_BTF. The
// cached runs find what the includes define in the cache.
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
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := Preprocess(path, src, conf); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
		b.Run(tool+"_cached", func(b *testing.B) {
			conf := &Config{BTF: func() bool { return true }, CacheDir: b.TempDir()}
			if _, err := Preprocess(path, src, conf); err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := Preprocess(path, src, conf); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkAllShippedTools preprocesses every tool in /usr/sbin once per
// iteration: the cost of the whole collection, without the cache and
// with it filled.
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
	for _, cached := range []bool{false, true} {
		name := "cold"
		conf := &Config{BTF: func() bool { return true }}
		if cached {
			name, conf.CacheDir = "cached", b.TempDir()
		}
		b.Run(name, func(b *testing.B) {
			all := func() {
				for i, p := range paths {
					if _, err := Preprocess(p, srcs[i], conf); err != nil {
						b.Fatal(err)
					}
				}
			}
			if cached {
				all() // fills the cache
			}
			cpu := cpuTime(b)
			for b.Loop() {
				all()
			}
			cpu.report(b)
			b.ReportMetric(float64(len(paths)), "tools")
		})
	}
}

// cpuClock measures the process's CPU time (user and system, the
// garbage collector's included) over a benchmark: on a loaded machine
// it says more than the wall-clock ns/op.
type cpuClock time.Duration

func cpuTime(b *testing.B) cpuClock {
	b.Helper()
	return cpuClock(processCPU(b))
}

func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU(b)-time.Duration(c))/float64(b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
