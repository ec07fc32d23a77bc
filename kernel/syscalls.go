package kernel

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

//go:generate go run gensyscalls.go

// SyscallNumber gives the number of the system call whose syscalls
// tracepoints are sys_enter_NAME and sys_exit_NAME, the id that
// raw_syscalls:sys_enter and sys_exit carry for it. The table is the
// x86-64 one, fixed by the kernel's ABI, and holds nothing elsewhere:
// tracefs and BTF name system calls without their numbers, and kallsyms
// lists no sys_call_table without CONFIG_KALLSYMS_ALL.
func SyscallNumber(name string) (int, bool) {
	n, ok := syscallNumbers[name]
	return n, ok
}

// TSCompat is the bit of x86's thread_info.status set while a task runs a
// 32-bit system call: raw_syscalls fires for those with their 32-bit
// number, while the kernel keeps syscalls tracepoints silent for them.
const TSCompat = 0x0002

// CompatStatusOffset gives where in a task_struct x86's thread_info.status
// lies, the word whose TSCompat bit marks a 32-bit system call.
func CompatStatusOffset() (int, error) {
	if syscallNumbers == nil {
		return 0, errors.New("kinst knows the system call numbers of x86-64 only")
	}
	spec, err := KernelBTF()
	if err != nil {
		return 0, err
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return 0, fmt.Errorf("task_struct: %w", err)
	}
	ti, err := member(task, "thread_info")
	if err != nil {
		return 0, err
	}
	info, ok := btf.UnderlyingType(ti.Type).(*btf.Struct)
	if !ok {
		return 0, errors.New("task_struct.thread_info is not a struct")
	}
	status, err := member(info, "status")
	if err != nil {
		return 0, err
	}
	return int(ti.Offset.Bytes() + status.Offset.Bytes()), nil
}

func member(s *btf.Struct, name string) (btf.Member, error) {
	for _, m := range s.Members {
		if m.Name == name {
			return m, nil
		}
	}
	return btf.Member{}, fmt.Errorf("struct %s has no member %s", s.Name, name)
}
