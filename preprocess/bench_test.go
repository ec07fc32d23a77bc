package preprocess

import (
	"os"
	"testing"
)

// BenchmarkShippedTools measures what preprocessing costs the tools
// Debian's bpftrace installs, against the real system headers: biolatency
// has no directives, runqlat includes <linux/sched.h> (kernel UAPI) and
// tcpaccept <sys/socket.h> (glibc, 14 headers deep).
func BenchmarkShippedTools(b *testing.B) {
	for _, tool := range []string{"biolatency", "runqlat", "tcpaccept"} {
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
