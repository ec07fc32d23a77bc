// Package coredump writes an ELF core file of a running or stopped
// Linux process, as gdb's gcore does, from any Go program: it reads the
// threads' registers under ptrace and the memory from /proc. kinst's
// core() and kinst break --core dump through it.
package coredump

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrExited marks a process that ended before it could be dumped.
var ErrExited = errors.New("process exited")

// The notes of a Linux core file that elf does not name.
const (
	ntFile = 0x46494c45 // "FILE": the mapped files
	ntAuxv = 6          // the auxiliary vector
	// The size of struct elf_prstatus and struct elf_prpsinfo on x86-64.
	prstatusSize = 336
	prpsinfoSize = 136
	fpregsSize   = 512
	pageSize     = 4096
)

// A mapping is a line of /proc/PID/maps.
type mapping struct {
	start, end, offset uint64
	perms              string
	path               string
}

// readMaps reads a process's memory mappings.
func readMaps(pid int) ([]mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var maps []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 5 {
			continue
		}
		var m mapping
		lo, hi, _ := strings.Cut(fields[0], "-")
		m.start, _ = strconv.ParseUint(lo, 16, 64)
		m.end, _ = strconv.ParseUint(hi, 16, 64)
		m.offset, _ = strconv.ParseUint(fields[2], 16, 64)
		m.perms = fields[1]
		if len(fields) == 6 {
			m.path = strings.TrimSpace(fields[5])
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}

// threadState is the state letter of a thread in /proc, or an error
// once the process is gone.
func threadState(pid, tid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	// The command name, in parentheses, may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("cannot read the state of thread %d", tid)
	}
	return b[i+2], nil
}

// threads lists a process's threads, first the one named first if it
// is among them.
func threads(pid, first int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.SortFunc(tids, func(a, b int) int {
		switch first {
		case a:
			return -1
		case b:
			return 1
		}
		return a - b
	})
	return tids, nil
}

// untraced checks that no debugger traces the process, which ptrace
// allows one tracer.
func untraced(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok && strings.TrimSpace(v) != "0" {
			return fmt.Errorf("already traced, by process %s: detach that debugger first", strings.TrimSpace(v))
		}
	}
	return nil
}

// waitStopped waits until every thread of the process is stopped.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		tids, err := threads(pid, 0)
		if err != nil {
			return err
		}
		stopped := true
		for _, tid := range tids {
			st, err := threadState(pid, tid)
			if err != nil {
				return err
			}
			if st == 'Z' || st == 'X' {
				return fmt.Errorf("%w: pid %d", ErrExited, pid)
			}
			stopped = stopped && (st == 'T' || st == 't')
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %v", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// A threadRegs is a thread's registers, read under ptrace.
type threadRegs struct {
	tid  int
	regs unix.PtraceRegs
	fp   [fpregsSize]byte // struct user_fpregs_struct: x87, SSE and MXCSR
}

// seize takes the stopped process's threads under ptrace and reads
// their registers; release lets them go back to their stop. ptrace
// requests must all come from one thread, which the caller locks.
func seize(pid, first int) (regs []threadRegs, release func(), err error) {
	if err := untraced(pid); err != nil {
		return nil, nil, err
	}
	tids, err := threads(pid, first)
	if err != nil {
		return nil, nil, err
	}
	var held []int
	release = func() {
		for _, tid := range held {
			unix.PtraceDetach(tid)
		}
	}
	for _, tid := range tids {
		// Seizing a stopped thread makes it trap into a ptrace stop,
		// which wait reports.
		if err := unix.PtraceSeize(tid); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // it ended meanwhile
			}
			release()
			return nil, nil, fmt.Errorf("ptrace thread %d: %w", tid, err)
		}
		held = append(held, tid)
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			release()
			return nil, nil, fmt.Errorf("wait for thread %d: %w", tid, err)
		}
		if ws.Exited() || ws.Signaled() {
			held = held[:len(held)-1]
			continue
		}
		r := threadRegs{tid: tid}
		if err := unix.PtraceGetRegs(tid, &r.regs); err != nil {
			release()
			return nil, nil, fmt.Errorf("read the registers of thread %d: %w", tid, err)
		}
		if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETFPREGS, uintptr(tid), 0, uintptr(unsafe.Pointer(&r.fp[0])), 0, 0); errno != 0 {
			release()
			return nil, nil, fmt.Errorf("read the floating-point registers of thread %d: %w", tid, errno)
		}
		regs = append(regs, r)
	}
	if len(regs) == 0 {
		release()
		return nil, nil, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	return regs, release, nil
}

// note appends an ELF note: name and description, each padded to 4
// bytes.
func note(b []byte, typ uint32, name string, desc []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)+1))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, name...)
	b = append(b, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// procIDs reads a process's parent, process group and session from
// /proc/PID/stat, its name, state and nice value.
type procIDs struct {
	ppid, pgrp, sid int
	state           byte
	nice            int
}

func readProcIDs(pid int) procIDs {
	var p procIDs
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return p
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice.
	if len(f) > 16 {
		p.state = f[0][0]
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		p.sid, _ = strconv.Atoi(f[3])
		p.nice, _ = strconv.Atoi(f[16])
	}
	return p
}

// prstatus is a thread's struct elf_prstatus, as the kernel writes it
// for the signal sig.
func prstatus(pid int, ids procIDs, t threadRegs, sig int) []byte {
	b := make([]byte, prstatusSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(sig)) // pr_info.si_signo
	le.PutUint16(b[12:], uint16(sig))
	le.PutUint32(b[32:], uint32(t.tid))
	le.PutUint32(b[36:], uint32(ids.ppid))
	le.PutUint32(b[40:], uint32(ids.pgrp))
	le.PutUint32(b[44:], uint32(ids.sid))
	var regs bytes.Buffer
	binary.Write(&regs, le, &t.regs)
	copy(b[112:], regs.Bytes())
	le.PutUint32(b[328:], 1) // pr_fpvalid: NT_PRFPREG follows
	return b
}

// prpsinfo is the process's struct elf_prpsinfo.
func prpsinfo(pid int, ids procIDs) []byte {
	b := make([]byte, prpsinfoSize)
	le := binary.LittleEndian
	b[0] = 3 // pr_state: stopped ('T'), as the kernel numbers states
	b[1] = 'T'
	b[3] = byte(int8(ids.nice))
	var st syscall.Stat_t
	if syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st) == nil {
		le.PutUint32(b[16:], st.Uid)
		le.PutUint32(b[20:], st.Gid)
	}
	le.PutUint32(b[24:], uint32(pid))
	le.PutUint32(b[28:], uint32(ids.ppid))
	le.PutUint32(b[32:], uint32(ids.pgrp))
	le.PutUint32(b[36:], uint32(ids.sid))
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	copy(b[40:55], bytes.TrimSuffix(comm, []byte("\n")))
	args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args = bytes.TrimSuffix(args, []byte{0})
	args = bytes.ReplaceAll(args, []byte{0}, []byte{' '})
	copy(b[56:135], args)
	return b
}

// fileNote is the NT_FILE note's description: the file-backed mappings
// with their offsets in pages, then their paths.
func fileNote(maps []mapping) []byte {
	var files []mapping
	for _, m := range maps {
		if strings.HasPrefix(m.path, "/") {
			files = append(files, m)
		}
	}
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint64(b, uint64(len(files)))
	b = le.AppendUint64(b, pageSize)
	for _, m := range files {
		b = le.AppendUint64(b, m.start)
		b = le.AppendUint64(b, m.end)
		b = le.AppendUint64(b, m.offset/pageSize)
	}
	for _, m := range files {
		b = append(b, strings.TrimSuffix(m.path, " (deleted)")...)
		b = append(b, 0)
	}
	return b
}

// dumped reports whether a mapping's memory goes into the core: the
// readable ones, but for the vsyscall page, which is the same in every
// process, and device memory.
func (m mapping) dumped() bool {
	return m.perms[0] == 'r' && m.path != "[vsyscall]" && m.path != "[vvar]" && m.path != "[vvar_vclock]" && !strings.HasPrefix(m.path, "/dev/")
}

// writeCore writes an ELF core file of the process, which is stopped
// and seized, with regs its threads' registers, the first the thread
// the signal sig stopped. hit, when not 0, is the address of a uprobe's
// breakpoint, which the core shows as the instruction the file has.
func writeCore(w io.Writer, pid int, regs []threadRegs, sig int, hit uint64) (int64, error) {
	maps, err := readMaps(pid)
	if err != nil {
		return 0, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	ids := readProcIDs(pid)
	var notes []byte
	for i, t := range regs {
		s := 0
		if i == 0 {
			s = sig
		}
		notes = note(notes, uint32(elf.NT_PRSTATUS), "CORE", prstatus(pid, ids, t, s))
		notes = note(notes, uint32(elf.NT_FPREGSET), "CORE", t.fp[:])
		if i == 0 {
			// The kernel writes the process's notes after its first
			// thread's status.
			notes = note(notes, uint32(elf.NT_PRPSINFO), "CORE", prpsinfo(pid, ids))
			if auxv, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid)); err == nil {
				notes = note(notes, ntAuxv, "CORE", auxv)
			}
			notes = note(notes, ntFile, "CORE", fileNote(maps))
		}
	}

	const ehdrSize, phdrSize = 64, 56
	phnum := 1 + len(maps)
	le := binary.LittleEndian
	hdr := make([]byte, 0, ehdrSize+phdrSize*phnum)
	hdr = append(hdr, 0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), byte(elf.ELFOSABI_NONE))
	hdr = append(hdr, make([]byte, 8)...)
	hdr = le.AppendUint16(hdr, uint16(elf.ET_CORE))
	hdr = le.AppendUint16(hdr, uint16(elf.EM_X86_64))
	hdr = le.AppendUint32(hdr, uint32(elf.EV_CURRENT))
	hdr = le.AppendUint64(hdr, 0)        // e_entry
	hdr = le.AppendUint64(hdr, ehdrSize) // e_phoff
	hdr = le.AppendUint64(hdr, 0)        // e_shoff
	hdr = le.AppendUint32(hdr, 0)        // e_flags
	hdr = le.AppendUint16(hdr, ehdrSize)
	hdr = le.AppendUint16(hdr, phdrSize)
	hdr = le.AppendUint16(hdr, uint16(phnum))
	hdr = le.AppendUint16(hdr, 0) // e_shentsize
	hdr = le.AppendUint16(hdr, 0) // e_shnum
	hdr = le.AppendUint16(hdr, 0) // e_shstrndx
	phdr := func(typ elf.ProgType, flags elf.ProgFlag, off, vaddr, filesz, memsz, align uint64) {
		hdr = le.AppendUint32(hdr, uint32(typ))
		hdr = le.AppendUint32(hdr, uint32(flags))
		hdr = le.AppendUint64(hdr, off)
		hdr = le.AppendUint64(hdr, vaddr)
		hdr = le.AppendUint64(hdr, 0) // p_paddr
		hdr = le.AppendUint64(hdr, filesz)
		hdr = le.AppendUint64(hdr, memsz)
		hdr = le.AppendUint64(hdr, align)
	}
	notesOff := uint64(ehdrSize + phdrSize*phnum)
	phdr(elf.PT_NOTE, 0, notesOff, 0, uint64(len(notes)), 0, 0)
	off := (notesOff + uint64(len(notes)) + pageSize - 1) &^ (pageSize - 1)
	dataOff := off
	for _, m := range maps {
		var flags elf.ProgFlag
		for i, f := range []elf.ProgFlag{elf.PF_R, elf.PF_W, elf.PF_X} {
			if m.perms[i] != '-' {
				flags |= f
			}
		}
		size := m.end - m.start
		filesz := uint64(0)
		if m.dumped() {
			filesz = size
		}
		phdr(elf.PT_LOAD, flags, off, m.start, filesz, size, pageSize)
		off += filesz
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	n := int64(0)
	write := func(b []byte) error {
		k, err := bw.Write(b)
		n += int64(k)
		return err
	}
	if err := write(hdr); err != nil {
		return n, err
	}
	if err := write(notes); err != nil {
		return n, err
	}
	if err := write(make([]byte, dataOff-notesOff-uint64(len(notes)))); err != nil {
		return n, err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return n, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	defer mem.Close()
	buf := make([]byte, 1<<20)
	for _, m := range maps {
		if !m.dumped() {
			continue
		}
		for addr := m.start; addr < m.end; {
			chunk := buf[:min(uint64(len(buf)), m.end-addr)]
			// process_vm_readv pins pages in batches, where reads of
			// /proc/PID/mem go a page at a time; it stops at the
			// first page it cannot read, which the file reads.
			k, _ := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &chunk[0], Len: uint64(len(chunk))}},
				[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(chunk)}}, 0)
			k = max(k, 0)
			if k < len(chunk) {
				r, err := mem.ReadAt(chunk[k:], int64(addr)+int64(k))
				if err != nil {
					// Memory the kernel will not read (a mapping past
					// the end of its file, say) is zero in the core,
					// as a hole.
					clear(chunk[k+r:])
				}
			}
			if hit >= addr && hit < addr+uint64(len(chunk)) && m.path != "" {
				chunk[hit-addr] = unprobed(pid, m, hit, chunk[hit-addr])
			}
			if err := write(chunk); err != nil {
				return n, err
			}
			addr += uint64(len(chunk))
		}
	}
	return n, bw.Flush()
}

// Dump writes an ELF core file of process pid to path, with thread
// first at the top (gdb's current thread; 0 for the main thread), and
// returns its size. A process found running is stopped for the dump and
// goes on after it; one found stopped, as a probe's signal("SIGSTOP") or
// core() leaves it, stays stopped. at, when not nil, holds the
// registers of thread first at a uprobe's hit, in the order of x86-64's
// struct pt_regs, which the core shows instead of those after the probed
// instruction ran. An error for a process that ended before its core was
// written matches ErrExited.
//
// The dump seizes the threads with ptrace: a process that is a child of
// the caller's must not be waited for meanwhile except for its exit (a
// pidfd, or waitid with WNOWAIT), as the stops reach its parent's wait.
func Dump(path string, pid, first int, at []uint64) (int64, error) {
	st, err := threadState(pid, pid)
	if err != nil {
		return 0, fmt.Errorf("no process %d", pid)
	}
	size, err := dumpCore(path, pid, first, at)
	if st != 'T' {
		unix.Kill(pid, unix.SIGCONT)
	}
	if errors.Is(err, ErrExited) {
		return 0, exitedError(pid)
	}
	if err != nil {
		return 0, fmt.Errorf("cannot dump process %d: %w", pid, err)
	}
	return size, nil
}

// exitedError is Dump's error for a process that ended before its core
// was written.
type exitedError int

func (e exitedError) Error() string {
	return fmt.Sprintf("process %d exited before its core was written", int(e))
}
func (exitedError) Is(target error) bool { return target == ErrExited }

// Stopped reports whether process pid is stopped by a signal, a stop
// Dump leaves it in.
func Stopped(pid int) (bool, error) {
	st, err := threadState(pid, pid)
	if err != nil {
		return false, fmt.Errorf("no process %d", pid)
	}
	return st == 'T', nil
}

// WaitStopped waits until every thread of process pid is stopped, for
// at most timeout.
func WaitStopped(pid int, timeout time.Duration) error { return waitStopped(pid, timeout) }

// dumpCore writes the core of process pid to path: it stops the process
// with SIGSTOP, unless a probe already did, reads every thread's
// registers under ptrace and the memory from /proc/PID/mem, and lets it
// go back to its stop.
func dumpCore(path string, pid, first int, at []uint64) (int64, error) {
	if err := untraced(pid); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		f.Close()
		os.Remove(path)
		return 0, fmt.Errorf("%w: pid %d", ErrExited, pid)
	}
	n, err := dumpStopped(f, pid, first, at)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return n, err
}

func dumpStopped(w io.Writer, pid, first int, at []uint64) (int64, error) {
	if err := waitStopped(pid, 5*time.Second); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	regs, release, err := seize(pid, first)
	if err != nil {
		return 0, err
	}
	defer release()
	hit := uint64(0)
	if at != nil && regs[0].tid == first {
		setRegs(&regs[0].regs, at)
		hit = regs[0].regs.Rip
	}
	return writeCore(w, pid, regs, int(unix.SIGSTOP), hit)
}

// setRegs sets the registers of r that struct pt_regs has to regs, in
// its order.
func setRegs(r *unix.PtraceRegs, regs []uint64) {
	for i, p := range []*uint64{
		&r.R15, &r.R14, &r.R13, &r.R12, &r.Rbp, &r.Rbx, &r.R11, &r.R10, &r.R9, &r.R8,
		&r.Rax, &r.Rcx, &r.Rdx, &r.Rsi, &r.Rdi, &r.Orig_rax, &r.Rip, &r.Cs, &r.Eflags, &r.Rsp, &r.Ss,
	} {
		*p = regs[i]
	}
}

// int3 is x86's breakpoint instruction, which a uprobe writes over the
// first byte of the instruction it probes.
const int3 = 0xcc

// unprobed is the byte at addr in mapping m of pid as its file has it,
// where memory holds a uprobe's breakpoint, b.
func unprobed(pid int, m mapping, addr uint64, b byte) byte {
	if b != int3 {
		return b
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.start, m.end))
	if err != nil {
		return b
	}
	defer f.Close()
	orig := []byte{b}
	if _, err := f.ReadAt(orig, int64(m.offset+addr-m.start)); err != nil {
		return b
	}
	return orig[0]
}
