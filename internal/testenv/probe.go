package testenv

import (
	"debug/elf"
	"fmt"
	"os"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	ebpffeatures "github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Each probe loads the smallest program of its kind and attaches it for real,
// since loading alone proves nothing about attaching (the host loads kprobe
// programs but has no kprobes). The probes attach to functions every kernel
// of interest has and that the probe does not need to call.
const (
	probeFunc         = "vfs_read"
	probeSecurityFunc = "security_file_open"
)

func newProg(typ ebpf.ProgramType, attach ebpf.AttachType, attachTo string) (*ebpf.Program, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         typ,
		AttachType:   attach,
		AttachTo:     attachTo,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		return nil, fmt.Errorf("load %s program: %w", typ, err)
	}
	return prog, nil
}

// attach loads a program and attaches it with fn, then undoes both.
func attach(typ ebpf.ProgramType, at ebpf.AttachType, attachTo string, fn func(*ebpf.Program) (link.Link, error)) error {
	prog, err := newProg(typ, at, attachTo)
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := fn(prog)
	if err != nil {
		return fmt.Errorf("attach %s program: %w", typ, err)
	}
	return l.Close()
}

func probeKprobe() error {
	return attach(ebpf.Kprobe, ebpf.AttachNone, "", func(p *ebpf.Program) (link.Link, error) {
		return link.Kprobe(probeFunc, p, nil)
	})
}

func probeKretprobe() error {
	return attach(ebpf.Kprobe, ebpf.AttachNone, "", func(p *ebpf.Program) (link.Link, error) {
		return link.Kretprobe(probeFunc, p, nil)
	})
}

func probeKprobeMulti() error {
	return attach(ebpf.Kprobe, ebpf.AttachTraceKprobeMulti, "", func(p *ebpf.Program) (link.Link, error) {
		return link.KprobeMulti(p, link.KprobeMultiOptions{Symbols: []string{probeFunc}})
	})
}

func probeKprobeSession() error {
	return attach(ebpf.Kprobe, ebpf.AttachTraceKprobeSession, "", func(p *ebpf.Program) (link.Link, error) {
		return link.KprobeMulti(p, link.KprobeMultiOptions{Symbols: []string{probeFunc}, Session: true})
	})
}

func probeTracing(at ebpf.AttachType, fn string) error {
	return attach(ebpf.Tracing, at, fn, func(p *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: p, AttachType: at})
	})
}

func probeFentry() error  { return probeTracing(ebpf.AttachTraceFEntry, probeFunc) }
func probeFexit() error   { return probeTracing(ebpf.AttachTraceFExit, probeFunc) }
func probeFmodRet() error { return probeTracing(ebpf.AttachModifyReturn, probeSecurityFunc) }

func probeIter() error {
	return attach(ebpf.Tracing, ebpf.AttachTraceIter, "task", func(p *ebpf.Program) (link.Link, error) {
		return link.AttachIter(link.IterOptions{Program: p})
	})
}

func probeUprobe() error {
	exe, off, err := entryOffset()
	if err != nil {
		return err
	}
	return attach(ebpf.Kprobe, ebpf.AttachNone, "", func(p *ebpf.Program) (link.Link, error) {
		return exe.Uprobe("", p, &link.UprobeOptions{Address: off})
	})
}

func probeUprobeMulti() error {
	exe, off, err := entryOffset()
	if err != nil {
		return err
	}
	return attach(ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, "", func(p *ebpf.Program) (link.Link, error) {
		return exe.UprobeMulti(nil, p, &link.UprobeMultiOptions{Addresses: []uint64{off}})
	})
}

// entryOffset opens the test binary for uprobes and returns the file offset
// of its entry point, which runs once at start-up and never again, and which
// a stripped binary has too.
func entryOffset() (*link.Executable, uint64, error) {
	path, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && f.Entry >= p.Vaddr && f.Entry < p.Vaddr+p.Memsz {
			exe, err := link.OpenExecutable(path)
			return exe, f.Entry - p.Vaddr + p.Off, err
		}
	}
	return nil, 0, fmt.Errorf("%s: entry point %#x is in no executable segment", path, f.Entry)
}

func probeRingbuf() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		return fmt.Errorf("create ring buffer: %w", err)
	}
	return m.Close()
}

func probeBTF() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return err
	}
	if _, err := btf.LoadKernelSpec(); err != nil {
		return fmt.Errorf("load kernel BTF: %w", err)
	}
	return nil
}

// Helpers, asked of tracepoint programs.
func probeForEachMapElem() error {
	return ebpffeatures.HaveProgramHelper(ebpf.TracePoint, asm.FnForEachMapElem)
}

func probeMapLookupPercpuElem() error {
	return ebpffeatures.HaveProgramHelper(ebpf.TracePoint, asm.FnMapLookupPercpuElem)
}

func probeLoop() error {
	return ebpffeatures.HaveProgramHelper(ebpf.TracePoint, asm.FnLoop)
}

func probeTracepoint() error {
	return attach(ebpf.TracePoint, ebpf.AttachNone, "", func(p *ebpf.Program) (link.Link, error) {
		return link.Tracepoint("syscalls", "sys_enter_getppid", p, nil)
	})
}

func probeRawTracepoint() error {
	return attach(ebpf.RawTracepoint, ebpf.AttachNone, "", func(p *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: p})
	})
}

// probePerfEvent attaches to a software CPU-clock event of this process.
func probePerfEvent() error {
	prog, err := newProg(ebpf.PerfEvent, ebpf.AttachNone, "")
	if err != nil {
		return err
	}
	defer prog.Close()
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: 1_000_000,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("perf_event_open: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		return fmt.Errorf("attach perf_event program: %w", err)
	}
	return nil
}
