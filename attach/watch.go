package attach

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
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

// The bp_type bits of <linux/hw_breakpoint.h>.
const (
	bpRead  = 1
	bpWrite = 2
	bpExec  = 4
)

// watchpoints resolves watchpoint:ADDR:LEN:MODE and its asynchronous twin,
// which differ only in the FUNC+argN form.
func watchpoints(ap *syntax.AttachPoint) ([]*check.Target, error) {
	form := ap.Provider + ":ADDRESS:LENGTH:MODE"
	if len(ap.Parts) != 3 {
		return nil, fmt.Errorf("%s probes are written %s", ap.Provider, form)
	}
	if strings.Contains(ap.Parts[0], "+arg") {
		return nil, fmt.Errorf("%s on a function argument (%s) is %w by kinst; watch an absolute address: %s", ap.Provider, ap.Parts[0], ErrUnsupported, form)
	}
	addr, err := strconv.ParseUint(ap.Parts[0], 0, 64)
	if err != nil {
		return nil, fmt.Errorf("%s address %q must be a number, such as 0x10000000", ap.Provider, ap.Parts[0])
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
		return nil, fmt.Errorf("%s length for execution must be 8, the size of a long, as the kernel requires", ap.Provider)
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

// attachWatchpoint opens the breakpoint in process pid, or on every CPU
// for a kernel address when pid is 0, and attaches prog to each event.
func attachWatchpoint(prog *ebpf.Program, w Watchpoint, pid int) (links []io.Closer, err error) {
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
