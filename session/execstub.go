package session

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The -c command is started through a stub: a static executable of a
// few instructions that names itself "kinst", stops itself with SIGSTOP,
// and once let go execs the command. kinst attaches its probes while the
// stub is stopped, so that probes see the command's own execve, as
// bpftrace's do, and nothing of kinst's runs under the command's pid
// but that one system call.
//
// The stub is called as STUB PATH ARGV0 ARGV1... and runs
//
//	prctl(PR_SET_NAME, "kinst")
//	kill(getpid(), SIGSTOP)
//	execve(PATH, &ARGV0, envp)
//	exit_group(-errno)
//
// so that a failed exec's errno is its exit status.

// stubBase is where the stub's one segment is loaded.
const stubBase = 0x400000

// stubELF wraps code, loaded at stubBase right after the headers, in an
// ELF executable for machine. The headers are written field by field:
// binary.Write's reflection cost every run of kinst a tenth of a
// millisecond at start-up, -c or not.
func stubELF(machine elf.Machine, code []byte) []byte {
	const ehsize, phsize = 64, 56
	le := binary.LittleEndian
	size := uint64(ehsize + phsize + len(code))
	b := make([]byte, 0, size)
	// Elf64_Ehdr
	b = append(b, elf.ELFMAG...)
	b = append(b, byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT))
	b = append(b, make([]byte, elf.EI_NIDENT-len(elf.ELFMAG)-3)...)
	b = le.AppendUint16(b, uint16(elf.ET_EXEC))
	b = le.AppendUint16(b, uint16(machine))
	b = le.AppendUint32(b, uint32(elf.EV_CURRENT))
	b = le.AppendUint64(b, stubBase+ehsize+phsize) // entry
	b = le.AppendUint64(b, ehsize)                 // phoff
	b = le.AppendUint64(b, 0)                      // shoff
	b = le.AppendUint32(b, 0)                      // flags
	b = le.AppendUint16(b, ehsize)
	b = le.AppendUint16(b, phsize)
	b = le.AppendUint16(b, 1) // phnum
	b = le.AppendUint16(b, 0) // shentsize
	b = le.AppendUint16(b, 0) // shnum
	b = le.AppendUint16(b, 0) // shstrndx
	// Elf64_Phdr
	b = le.AppendUint32(b, uint32(elf.PT_LOAD))
	b = le.AppendUint32(b, uint32(elf.PF_R|elf.PF_X))
	b = le.AppendUint64(b, 0)        // offset
	b = le.AppendUint64(b, stubBase) // vaddr
	b = le.AppendUint64(b, stubBase) // paddr
	b = le.AppendUint64(b, size)     // filesz
	b = le.AppendUint64(b, size)     // memsz
	b = le.AppendUint64(b, 0x1000)   // align
	return append(b, code...)
}

// stubFile writes the stub to an anonymous file and returns its
// descriptor and a path to exec, or -1 and "" where there is no stub
// for this machine or no file to hold it: the command is then started
// directly, and its execve is not seen.
func stubFile() (fd int, path string) {
	if stub == nil {
		return -1, ""
	}
	// MFD_EXEC (6.3) keeps the file executable where vm.memfd_noexec=1
	// would seal it; older kernels know no such flag and need none.
	fd, err := unix.MemfdCreate("kinst-exec", unix.MFD_CLOEXEC|unix.MFD_EXEC)
	if err == unix.EINVAL {
		fd, err = unix.MemfdCreate("kinst-exec", unix.MFD_CLOEXEC)
	}
	if err != nil {
		return -1, ""
	}
	if n, err := unix.Write(fd, stub); err != nil || n != len(stub) {
		unix.Close(fd)
		return -1, ""
	}
	return fd, fmt.Sprintf("/proc/self/fd/%d", fd)
}
