package attach

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// Watchpoint targets a hardware breakpoint on a data address: in the
// traced process when there is one (-p or -c), else in the kernel.
type Watchpoint struct {
	Addr uint64
	Len  uint64
	// Mode is the perf bp_type: a mix of bpRead, bpWrite and bpExec.
	Mode uint32
}

// ErrNoDebugRegisters says the CPU's debug registers are all in use:
// x86-64 has four, shared by the watchpoints of a thread.
var ErrNoDebugRegisters = errors.New("out of watchpoint registers")

// The bp_type bits of <linux/hw_breakpoint.h>.
const (
	bpRead  = 1
	bpWrite = 2
	bpExec  = 4
)

// watchpoints resolves watchpoint:ADDR:LEN:MODE and its asynchronous
// twin, and watchpoint:FUNC+argN:LEN:MODE, which watches the address
// FUNC's argument N holds in the traced process.
func (r *Resolver) watchpoints(ap *syntax.AttachPoint) ([]*check.Target, error) {
	form := ap.Provider + ":ADDRESS:LENGTH:MODE"
	if len(ap.Parts) != 3 {
		return nil, fmt.Errorf("%s probes are written %s or %s:FUNCTION+argN:LENGTH:MODE", ap.Provider, form, ap.Provider)
	}
	n, err := strconv.ParseUint(ap.Parts[1], 0, 64)
	if err != nil || n != 1 && n != 2 && n != 4 && n != 8 {
		return nil, fmt.Errorf("%s length %q must be 1, 2, 4 or 8", ap.Provider, ap.Parts[1])
	}
	mode, err := watchMode(ap.Parts[2])
	if err != nil {
		return nil, fmt.Errorf("%s mode %q %w", ap.Provider, ap.Parts[2], err)
	}
	if mode == bpExec && n != 8 {
		// The kernel takes execution breakpoints the size of a long
		// only: bpftrace 0.26.1 asks for that whatever the length
		// given, while 0.17 passed it on and failed to attach.
		if r.Compat == compat.V017 {
			return nil, fmt.Errorf("%s length for execution must be 8, the size of a long, as the kernel requires", ap.Provider)
		}
		n = 8
	}
	if fn, arg, ok := strings.Cut(ap.Parts[0], "+arg"); ok {
		return r.watchArg(ap, fn, arg, Watchpoint{Len: n, Mode: mode})
	}
	addr, err := strconv.ParseUint(ap.Parts[0], 0, 64)
	if err != nil {
		return nil, fmt.Errorf("%s address %q must be a number, such as 0x10000000, or FUNCTION+argN", ap.Provider, ap.Parts[0])
	}
	if mode != bpExec && addr%n != 0 {
		return nil, fmt.Errorf("%s address %#x is not aligned to its length %d, as the debug registers need", ap.Provider, addr, n)
	}
	name := strings.Join(ap.Parts, ":")
	return []*check.Target{{
		Provider: ap.Provider,
		Name:     name,
		Func:     name,
		Attach:   Watchpoint{Addr: addr, Len: n, Mode: mode},
	}}, nil
}

// watchArg resolves watchpoint:FUNC+argN:LEN:MODE: one target per
// function FUNC matches in the traced process's executable, each set up
// by a uprobe at the function's entry. Targets are named as bpftrace
// names them: the -c command as given or /proc/PID/exe, the function,
// N unless 0, the length and the mode.
func (r *Resolver) watchArg(ap *syntax.AttachPoint, fn, argText string, w Watchpoint) ([]*check.Target, error) {
	arg, err := strconv.Atoi(argText)
	if err != nil || arg < 0 {
		return nil, fmt.Errorf("%s argument %q must be arg0 to arg%d", ap.Provider, "arg"+argText, check.MaxArgs-1)
	}
	if arg >= check.MaxArgs {
		return nil, fmt.Errorf("%s argument arg%d is out of reach: x86-64 passes arg0 to arg%d in registers", ap.Provider, arg, check.MaxArgs-1)
	}
	var path, shown string
	switch {
	case r.Pid != 0:
		if path, err = processExe(r.Pid); err != nil {
			return nil, err
		}
		shown = fmt.Sprintf("/proc/%d/exe", r.Pid)
	case r.Command != "":
		if path, err = elfsym.Resolve(r.Command, 0); err != nil {
			return nil, err
		}
		shown = r.Command
	default:
		return nil, fmt.Errorf("%s on a function's argument watches a process: give -p PID or -c CMD", ap.Provider)
	}
	f, err := r.open(path)
	if err != nil {
		return nil, err
	}
	syms := []elfsym.Symbol{{Name: fn}}
	if kernel.HasGlob(fn) {
		if syms = f.Symbols(fn); len(syms) == 0 {
			return nil, &check.ListError{Err: fmt.Errorf("no function in %s matches %s", path, fn), Pattern: "uprobe:" + path + ":*", Listed: "them"}
		}
	} else if syms[0].Offset, err = f.SymbolOffset(fn, 0); err != nil {
		return nil, err
	}
	suffix := fmt.Sprintf(":%d:%s", w.Len, modeName(w.Mode))
	if arg != 0 {
		suffix = fmt.Sprintf(":%d", arg) + suffix
	}
	targets := make([]*check.Target, len(syms))
	for i, s := range syms {
		entry := &check.Target{
			Provider: "uprobe",
			Name:     path + ":" + s.Name,
			Func:     s.Name,
			Attach:   Uprobe{Path: path, Symbol: s.Name, Offset: s.Offset, Traced: true},
		}
		targets[i] = &check.Target{
			Provider: ap.Provider,
			Name:     shown + ":" + s.Name + suffix,
			Func:     s.Name,
			Attach:   w,
			Watch:    &check.WatchSetup{Entry: entry, Arg: arg, Async: ap.Provider == "asyncwatchpoint"},
		}
	}
	return targets, nil
}

// modeName writes a mode as bpftrace sorts it: r, w, x.
func modeName(mode uint32) string {
	var b strings.Builder
	for _, m := range []struct {
		bit uint32
		c   byte
	}{{bpRead, 'r'}, {bpWrite, 'w'}, {bpExec, 'x'}} {
		if mode&m.bit != 0 {
			b.WriteByte(m.c)
		}
	}
	return b.String()
}

// watchMode reads a mode made of r, w and x, each at most once.
func watchMode(s string) (uint32, error) {
	var mode uint32
	for _, c := range s {
		bit := map[rune]uint32{'r': bpRead, 'w': bpWrite, 'x': bpExec}[c]
		if bit == 0 || mode&bit != 0 {
			return 0, fmt.Errorf("must be made of r, w and x, each at most once")
		}
		mode |= bit
	}
	switch {
	case mode == 0:
		return 0, fmt.Errorf("is empty: use r, w, x or rw")
	case mode&bpExec != 0 && mode != bpExec:
		return 0, fmt.Errorf("mixes execution with reads or writes, which one debug register cannot watch")
	case mode == bpRead:
		// x86 debug registers cannot break on reads alone: the kernel
		// refuses HW_BREAKPOINT_R with EINVAL.
		return 0, fmt.Errorf("watches reads alone, which x86 debug registers cannot: use rw")
	}
	return mode, nil
}

// Watch sets the watchpoint w in process pid, or on every CPU for a
// kernel address when pid is 0, and attaches prog to each breakpoint
// event. When the debug registers are all taken, the error is
// ErrNoDebugRegisters.
func Watch(prog *ebpf.Program, w Watchpoint, pid int) (links []io.Closer, err error) {
	if w.Mode != bpExec && w.Addr%w.Len != 0 {
		return nil, fmt.Errorf("watch %#x: the address is not aligned to the length %d, as the debug registers need", w.Addr, w.Len)
	}
	type place struct{ pid, cpu int }
	places := []place{{pid, -1}}
	if pid == 0 {
		cpus, err := onlineCPUs()
		if err != nil {
			return nil, err
		}
		places = places[:0]
		for _, cpu := range cpus {
			places = append(places, place{-1, cpu})
		}
	}
	for _, pl := range places {
		attr := unix.PerfEventAttr{
			Type:    unix.PERF_TYPE_BREAKPOINT,
			Size:    uint32(unsafeSizeofPerfAttr),
			Sample:  1,
			Bp_type: w.Mode,
			Ext1:    w.Addr,
			Ext2:    w.Len,
		}
		fd, err := unix.PerfEventOpen(&attr, pl.pid, pl.cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			Detach(links)
			where := fmt.Sprintf("process %d", pl.pid)
			if pl.pid < 0 {
				where = fmt.Sprintf("the kernel on cpu %d", pl.cpu)
			}
			if err == unix.ENOSPC {
				err = ErrNoDebugRegisters
			}
			return nil, fmt.Errorf("watch %#x in %s: %w", w.Addr, where, err)
		}
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			unix.Close(fd)
			Detach(links)
			return nil, fmt.Errorf("attach to the watchpoint at %#x: %w", w.Addr, err)
		}
		links = append(links, &perfLink{link: l, fd: fd})
	}
	return links, nil
}
