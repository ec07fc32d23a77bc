package kernel

import (
	"runtime"
	"strings"
	"testing"
)

// The numbers are x86-64's, under the names the syscalls tracepoints
// give the calls, which for a few differ from <asm/unistd_64.h>'s.
func TestSyscallNumber(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("kinst has the system call numbers of x86-64 only")
	}
	tests := []struct {
		name string
		nr   int
		ok   bool
	}{
		{"read", 0, true},
		{"newfstat", 5, true},
		{"getppid", 110, true},
		{"umount", 166, true},
		{"openat", 257, true},
		{"uretprobe", 335, true},
		{"file_setattr", 469, true},
		{"fstat", 0, false},
		{"umount2", 0, false},
		{"nosuchcall", 0, false},
	}
	for _, tt := range tests {
		if nr, ok := SyscallNumber(tt.name); nr != tt.nr || ok != tt.ok {
			t.Errorf("SyscallNumber(%q) = %d, %v; want %d, %v", tt.name, nr, ok, tt.nr, tt.ok)
		}
	}
}

// Every syscalls tracepoint of the running kernel has a number.
func TestSyscallNumbersCoverTracepoints(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("kinst has the system call numbers of x86-64 only")
	}
	tps, err := Tracepoints("syscalls", "sys_enter_*")
	if err != nil || len(tps) == 0 {
		t.Skipf("no syscalls tracepoints to compare with: %v", err)
	}
	for _, tp := range tps {
		if _, ok := SyscallNumber(strings.TrimPrefix(tp.Name, "sys_enter_")); !ok {
			t.Errorf("no number for %s", tp)
		}
	}
}

// TS_COMPAT's word is thread_info.status, at the start of task_struct
// where x86 keeps thread_info: 8 bytes in since 5.11 added syscall_work.
func TestCompatStatusOffset(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("kinst has the system call numbers of x86-64 only")
	}
	if _, err := KernelBTF(); err != nil {
		t.Skip(err)
	}
	off, err := CompatStatusOffset()
	if err != nil || off != 16 && off != 8 {
		t.Errorf("CompatStatusOffset() = %d, %v; want 16 (8 before 5.11)", off, err)
	}
}
