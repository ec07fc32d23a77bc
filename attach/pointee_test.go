package attach

import (
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
)

// Tracepoint pointer fields take their pointee from the format file's C
// type, through BTF where the type is the kernel's.
func TestPointee(t *testing.T) {
	if _, err := kernel.KernelBTF(); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	tests := []struct{ ctype, want string }{
		{"struct __kernel_timespec *", "struct __kernel_timespec"},
		{"const struct __kernel_timespec *", "struct __kernel_timespec"},
		{"const char *", "int8"},
		{"const char *const *", "int8 *"},
		{"unsigned long *", "uint64"},
		{"u32 *", "uint32"},
		{"pid_t *", "int32"},
		{"union bpf_attr *", "union bpf_attr"},
		{"void *", "none"},
		{"struct no_such_struct *", "none"},
	}
	for _, tt := range tests {
		got := pointee(tt.ctype, check.UserSpace)
		if got.String() != tt.want {
			t.Errorf("pointee(%q) = %s, want %s", tt.ctype, got, tt.want)
		}
	}
	if f := pointee("struct __kernel_timespec *", check.UserSpace).Field("tv_nsec"); f == nil || f.Offset != 8 || f.Type.String() != "int64" {
		t.Errorf("struct __kernel_timespec has tv_nsec %+v, want an int64 at offset 8", f)
	}
}
