// Package guesttest proves the QEMU bench with cilium/ebpf programs written
// directly, before kinst can attach kernel-function probes itself.
//
// Its tests attach a kprobe, a kretprobe, a kprobe.multi, an fentry, an fexit
// and an fmod_ret program to kernel functions that a controlled workload calls
// a known number of times from one thread, and require the exact count. On
// the host they skip with the reason testenv gives (kprobes compiled out,
// tracing programs refused); inside the bench's 6.1 and 6.12 guests they run,
// except kprobe.multi, which skips on 6.1 (no CONFIG_FPROBE) and must work on
// 6.12. The package holds only tests.
package guesttest
