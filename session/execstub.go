package session

import (
	"bytes"
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
// ELF executable for machine.
func stubELF(machine elf.Machine, code []byte) []byte {
	const ehsize, phsize = 64, 56
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     stubBase + ehsize + phsize,
		Phoff:     ehsize,
		Ehsize:    ehsize,
		Phentsize: phsize,
		Phnum:     1,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	size := uint64(ehsize + phsize + len(code))
	prog := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Vaddr:  stubBase,
		Paddr:  stubBase,
		Filesz: size,
		Memsz:  size,
		Align:  0x1000,
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, &hdr)
	binary.Write(&b, binary.LittleEndian, &prog)
	b.Write(code)
	return b.Bytes()
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
