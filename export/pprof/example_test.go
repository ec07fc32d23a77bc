package pprof_test

import (
	"os"

	"kinst.dev/kinst/export/pprof"
	"kinst.dev/kinst/output"
)

// Folded stacks of a map keyed by comm and kstack, as
// @[comm, kstack] = count() fills it: the comm is the root frame.
func ExampleWriteFolded() {
	stack := func(names ...string) output.Value {
		frames := make([]output.Frame, len(names))
		for i, n := range names {
			frames[i] = output.Frame{Symbol: n}
		}
		return output.Kstack(output.StackBpftrace, frames)
	}
	m := &output.Map{Name: "@", Kind: output.KindCount, Entries: []output.Entry{
		{Key: []output.Value{output.String("sh"), stack("vfs_read", "ksys_read", "do_syscall_64")}, Value: output.Count(3)},
		{Key: []output.Value{output.String("sh"), stack("vfs_write", "ksys_write", "do_syscall_64")}, Value: output.Count(1)},
		{Key: []output.Value{output.String("cat"), stack("vfs_read", "ksys_read", "do_syscall_64")}, Value: output.Count(7)},
	}}
	pprof.WriteFolded(os.Stdout, m, nil)
	// Output:
	// cat;do_syscall_64;ksys_read;vfs_read 7
	// sh;do_syscall_64;ksys_read;vfs_read 3
	// sh;do_syscall_64;ksys_write;vfs_write 1
}
