// Package testenv holds the helpers kinst's tests use to ask what the machine
// under test offers: kernel features, root, the kinst binary and busybox.
//
// A test states what it needs and testenv decides, from evidence, whether the
// test may run, must skip or has found a bug:
//
//	func TestKprobeCount(t *testing.T) {
//		testenv.Require(t, testenv.Kprobe)
//		kinst := testenv.Kinst(t)
//		...
//	}
//
// Require skips where the kernel really lacks a feature (its configuration
// says so, its version is too old, or a policy refuses it with EPERM) and
// fails where the evidence says the feature must be there but a real attempt
// to use it fails. The same tests run on the host and inside the QEMU guests
// of package vm, and skip or run according to each kernel.
package testenv
