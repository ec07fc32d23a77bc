package attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
)

// Options say how to attach one program.
type Options struct {
	// IDs holds each target's id, which its cookie carries.
	IDs []uint64
	// Multi attaches all targets with one kprobe.multi or uprobe.multi
	// link, the program loaded for it, or syscalls tracepoints of one
	// direction with one perf event on raw_syscalls, the program telling
	// the system calls apart by number.
	Multi bool
	// Session makes Multi's kprobe.multi link a session link, which runs
	// the program, loaded for it, at the functions' entry and again at
	// their return when it returns 0 at the entry.
	Session bool
	// Trampoline attaches a kprobe target's program, loaded as fentry or
	// fexit for its function, through a BPF trampoline.
	Trampoline bool
	// Pid restricts uprobes to one process.
	Pid int
	// PerfPid restricts profile, software and hardware events to one
	// process, as bpftrace 0.26.1's -p does: the events count its
	// threads alone, on every CPU.
	PerfPid int
	// Cpid is the pid of the -c command: watchpoints watch its memory
	// when Pid is 0.
	Cpid int
	// FileActivation raises USDT semaphores in every process that maps
	// the probe's file, where kinst raises them itself (see
	// FeatUprobeRefCtr) and there is neither -p nor -c.
	FileActivation bool
	// Cookies gives each target's link its id as the attach cookie; the
	// program needs them when it serves several targets and reads probe
	// or func. Older kernels refuse cookies on some link types.
	Cookies bool
}

// Attached is what Attach attached.
type Attached struct {
	Links []io.Closer
	// Skipped holds one error per target that could not be attached
	// when others could: wildcards name functions some of which the
	// kernel will not probe.
	Skipped []error
}

// Attach attaches prog to every target. A program with several targets
// skips the ones that fail, as long as one attaches; otherwise a failure
// detaches what was attached before returning, so nothing is left behind.
// So does ctx's end, which Attach looks for between two targets.
func Attach(ctx context.Context, prog *ebpf.Program, targets []*check.Target, opts Options) (*Attached, error) {
	a := &Attached{}
	if opts.Multi {
		ls, skipped, err := attachMulti(prog, targets, opts)
		if err != nil {
			return nil, err
		}
		a.Links, a.Skipped = ls, skipped
		return a, nil
	}
	for i, t := range targets {
		if err := ctx.Err(); err != nil {
			Detach(a.Links)
			return nil, err
		}
		var cookie uint64
		if opts.Cookies {
			cookie = opts.IDs[i]
		}
		ls, err := attachOne(prog, t, cookie, opts)
		if err != nil {
			err = &Error{Target: t, Err: err}
			if len(targets) > 1 && !exhausted(err) {
				a.Skipped = append(a.Skipped, err)
				continue
			}
			Detach(a.Links)
			return nil, err
		}
		a.Links = append(a.Links, ls...)
	}
	if len(a.Links) == 0 && len(a.Skipped) > 0 {
		return nil, a.Skipped[0]
	}
	return a, nil
}

// An Error is the failure to attach one target.
type Error struct {
	Target *check.Target
	Err    error
}

func (e *Error) Error() string { return "attach " + e.Target.FullName() + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// exhausted reports whether err says kinst ran out of a resource: the
// targets after it would fail the same way, so it is not one target's
// refusal to skip.
func exhausted(err error) bool {
	for _, errno := range []unix.Errno{unix.EMFILE, unix.ENFILE, unix.ENOMEM} {
		if IsErrno(err, errno) {
			return true
		}
	}
	return false
}

// IsErrno reports whether err comes of errno. cilium/ebpf formats some
// errors, such as a failed perf link, with %v, so the errno is looked
// for in the text too.
func IsErrno(err error, errno unix.Errno) bool {
	return err != nil && (errors.Is(err, errno) || strings.HasSuffix(err.Error(), ": "+errno.Error()))
}

// maxTracepointProgs is the kernel's limit of BPF programs on one
// tracepoint (BPF_TRACE_MAX_PROGS), all users' together.
const maxTracepointProgs = 64

func attachOne(prog *ebpf.Program, t *check.Target, cookie uint64, opts Options) ([]io.Closer, error) {
	pid := opts.Pid
	if _, isKprobe := t.Attach.(Kprobe); isKprobe && opts.Trampoline {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, Cookie: cookie})
		return one(l, err)
	}
	switch a := t.Attach.(type) {
	case Tracepoint:
		l, err := link.Tracepoint(a.Category, a.Name, prog, &link.TracepointOptions{Cookie: cookie})
		if IsErrno(err, unix.E2BIG) {
			// The errno's own text, "argument list too long", says
			// nothing of a limit.
			err = fmt.Errorf("the kernel allows at most %d BPF programs per tracepoint, this program's and other tools' together (E2BIG)", maxTracepointProgs)
		}
		return one(l, err)
	case RawTracepoint:
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.Name, Program: prog})
		return one(l, err)
	case Uprobe:
		if a.RefCtrOffset != 0 && manualSemaphores() {
			refCtr := a.RefCtrOffset
			a.RefCtrOffset = 0
			if t.Provider == "usdt" {
				return attachUSDTByHand(prog, a, refCtr, cookie, opts)
			}
			// A plain uprobe on a USDT site needs no semaphore.
		}
		ex, err := link.OpenExecutable(a.Path)
		if err != nil {
			return nil, err
		}
		if a.Traced && pid == 0 {
			pid = opts.Cpid
		}
		opts := &link.UprobeOptions{Address: a.Offset, PID: pid, Cookie: cookie, RefCtrOffset: a.RefCtrOffset}
		if a.Return {
			l, err := ex.Uretprobe(a.Symbol, prog, opts)
			return one(l, err)
		}
		l, err := ex.Uprobe(a.Symbol, prog, opts)
		return one(l, err)
	case Kprobe:
		opts := &link.KprobeOptions{Offset: a.Offset, Cookie: cookie}
		attach := link.Kprobe
		if a.Return {
			attach = link.Kretprobe
		}
		l, err := attach(a.Symbol, prog, opts)
		return one(l, kprobeRefused(a.Symbol, a.Offset, err))
	case Tracing:
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, Cookie: cookie})
		return one(l, err)
	case PerfEvent:
		return attachPerf(prog, a, opts.PerfPid)
	case Iter:
		return attachIter(prog)
	case Watchpoint:
		if t.Watch != nil {
			// Set at run time, once its function hands it an address.
			return nil, nil
		}
		if pid == 0 {
			pid = opts.Cpid
		}
		return Watch(prog, a, pid)
	}
	return nil, fmt.Errorf("%s probes are %w", t.Provider, ErrUnsupported)
}

// kprobeRefused explains a kprobe the kernel refused. cilium/ebpf retries
// a refused name with the architecture's syscall prefix and reports that
// attempt's "not found" ("token __x64_f: not found"), so then, and only
// then, the kernel is asked again for its own reason: each asking costs
// a kprobe registered and removed.
func kprobeRefused(name string, off uint64, err error) error {
	switch {
	case errors.Is(err, unix.EADDRNOTAVAIL):
		return ambiguous(name, err)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if errs, cerr := kernel.CheckKprobes(name, []uint64{off}); cerr == nil && errs[0] != nil {
		return errs[0]
	}
	return err
}

// ambiguous explains a kprobe's EADDRNOTAVAIL where kallsyms gives the
// name to several functions: since Linux 6.5 a kprobe refuses a name
// that does not say which one it means.
func ambiguous(name string, err error) error {
	if !errors.Is(err, unix.EADDRNOTAVAIL) {
		return err
	}
	ks, kerr := kernel.LoadKallsyms()
	if kerr != nil {
		return err
	}
	var where []string
	for _, s := range ks.ByName(name) {
		if s.IsFunc() {
			where = append(where, fmt.Sprintf("%#x", s.Addr))
		}
	}
	if len(where) < 2 {
		return err
	}
	// The sentence replaces the errno, which says nothing of names.
	return fmt.Errorf("%d kernel functions are named %s (at %s), and the kernel puts a kprobe only on a name that is unique",
		len(where), name, strings.Join(where, ", "))
}

func one(l link.Link, err error) ([]io.Closer, error) {
	if err != nil {
		return nil, err
	}
	return []io.Closer{l}, nil
}

// attachMulti attaches every target through one multi link, or one per
// process where kinst raises USDT semaphores itself. A uprobe.multi link
// leaves out the functions the kernel will not probe, each an error in
// skipped.
func attachMulti(prog *ebpf.Program, targets []*check.Target, opts Options) (links []io.Closer, skipped []error, err error) {
	var cookies []uint64
	if opts.Cookies {
		cookies = opts.IDs
	}
	if _, ok := targets[0].Attach.(Uprobe); ok && !(targets[0].Provider == "usdt" && manualSemaphores()) {
		return uprobeMulti(targets, func(idx []int) (link.Link, error) {
			return attachUprobeMulti(prog, pick(targets, idx), pick(cookies, idx), opts)
		})
	}
	links, err = attachMultiLink(prog, targets, cookies, opts)
	return links, nil, err
}

// pick returns the elements of list at idx, nil for a nil list.
func pick[T any](list []T, idx []int) []T {
	if list == nil {
		return nil
	}
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = list[j]
	}
	return out
}

// uprobeMulti attaches the targets with one uprobe.multi link. The
// kernel refuses the whole link when it refuses one function (an
// instruction it cannot step over, such as a lock prefix at
// pthread_spin_lock): then the refused ones are found by halves, and the
// link attaches the rest.
func uprobeMulti(targets []*check.Target, attach func(idx []int) (link.Link, error)) ([]io.Closer, []error, error) {
	all := make([]int, len(targets))
	for i := range all {
		all[i] = i
	}
	l, err := attach(all)
	if err == nil {
		return []io.Closer{l}, nil, nil
	}
	if len(targets) == 1 || exhausted(err) {
		return nil, nil, err
	}
	refused := map[int]error{}
	var find func(idx []int, err error) error
	find = func(idx []int, err error) error {
		if len(idx) == 1 {
			if errors.Is(err, errNotSupp) {
				err = fmt.Errorf("the kernel cannot put a uprobe on its instruction: %w", err)
			}
			refused[idx[0]] = &Error{Target: targets[idx[0]], Err: err}
			return nil
		}
		for _, half := range [][]int{idx[:len(idx)/2], idx[len(idx)/2:]} {
			l, err := attach(half)
			switch {
			case err == nil:
				l.Close()
			case exhausted(err):
				return err
			default:
				if err := find(half, err); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if ferr := find(all, err); ferr != nil {
		return nil, nil, ferr
	}
	if len(refused) == 0 {
		// Each half attaches and the whole does not: no function's fault.
		return nil, nil, err
	}
	var rest []int
	var skipped []error
	for _, i := range all {
		if e := refused[i]; e != nil {
			skipped = append(skipped, e)
		} else {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return nil, nil, skipped[0]
	}
	if l, err = attach(rest); err != nil {
		return nil, nil, err
	}
	return []io.Closer{l}, skipped, nil
}

// errNotSupp is the kernel's ENOTSUPP, which it gives for an instruction
// a uprobe cannot be put on.
const errNotSupp = unix.Errno(524)

// attachUprobeMulti attaches one uprobe.multi link of targets, all in
// one file.
func attachUprobeMulti(prog *ebpf.Program, targets []*check.Target, cookies []uint64, opts Options) (link.Link, error) {
	ex, first, uopts, err := multiOptions(targets, cookies, opts.Pid)
	if err != nil {
		return nil, err
	}
	if manualSemaphores() {
		// The kernel cannot count them, and kinst raises only USDT
		// probes' semaphores itself.
		uopts.RefCtrOffsets = nil
	}
	if first.Return {
		return ex.UretprobeMulti(nil, prog, uopts)
	}
	return ex.UprobeMulti(nil, prog, uopts)
}

// multiOptions gathers what one uprobe.multi link of targets, all in one
// file, needs: the file, its first target, and the link's options.
func multiOptions(targets []*check.Target, cookies []uint64, pid int) (*link.Executable, Uprobe, *link.UprobeMultiOptions, error) {
	first := targets[0].Attach.(Uprobe)
	ex, err := link.OpenExecutable(first.Path)
	if err != nil {
		return nil, first, nil, err
	}
	addrs := make([]uint64, len(targets))
	var refCtrs []uint64
	for i, t := range targets {
		u := t.Attach.(Uprobe)
		if u.Path != first.Path {
			return nil, first, nil, fmt.Errorf("one uprobe.multi link covers one file, not %s and %s", first.Path, u.Path)
		}
		addrs[i] = u.Offset
		if u.RefCtrOffset != 0 && refCtrs == nil {
			refCtrs = make([]uint64, len(targets))
		}
		if refCtrs != nil {
			refCtrs[i] = u.RefCtrOffset
		}
	}
	return ex, first, &link.UprobeMultiOptions{Addresses: addrs, RefCtrOffsets: refCtrs, Cookies: cookies, PID: uint32(pid)}, nil
}

// attachMultiLink attaches the targets through one multi link, or USDT
// probes one per process where kinst raises their semaphores itself.
func attachMultiLink(prog *ebpf.Program, targets []*check.Target, cookies []uint64, opts Options) ([]io.Closer, error) {
	switch first := targets[0].Attach.(type) {
	case Tracepoint:
		dir := "sys_enter"
		if strings.HasPrefix(first.Name, "sys_exit_") {
			dir = "sys_exit"
		}
		for _, t := range targets {
			tp, ok := t.Attach.(Tracepoint)
			if !ok || tp.Category != "syscalls" || !strings.HasPrefix(tp.Name, dir+"_") {
				return nil, fmt.Errorf("one raw_syscalls:%s perf event serves syscalls:%s_* tracepoints, not %s", dir, dir, t.FullName())
			}
		}
		return one(link.Tracepoint("raw_syscalls", dir, prog, nil))
	case Kprobe:
		syms := make([]string, len(targets))
		for i, t := range targets {
			syms[i] = t.Attach.(Kprobe).Symbol
		}
		kopts := link.KprobeMultiOptions{Symbols: syms, Cookies: cookies, Session: opts.Session}
		if first.Return && !opts.Session {
			return one(link.KretprobeMulti(prog, kopts))
		}
		return one(link.KprobeMulti(prog, kopts))
	case Uprobe:
		ex, first, uopts, err := multiOptions(targets, cookies, opts.Pid)
		if err != nil {
			return nil, err
		}
		refCtrs := uopts.RefCtrOffsets
		attach := func() (link.Link, error) {
			if first.Return {
				return ex.UretprobeMulti(nil, prog, uopts)
			}
			return ex.UprobeMulti(nil, prog, uopts)
		}
		if refCtrs == nil {
			return one(attach())
		}
		uopts.RefCtrOffsets = nil
		return multiByHand(first.Path, refCtrs, attach, uopts, opts)
	}
	return nil, fmt.Errorf("%s probes cannot share a multi link", targets[0].Provider)
}

// multiByHand attaches a uprobe.multi link of USDT sites per process
// whose semaphores kinst raises itself, each restricted to its process.
func multiByHand(path string, refCtrs []uint64, attach func() (link.Link, error), uopts *link.UprobeMultiOptions, opts Options) ([]io.Closer, error) {
	pids, err := semaphorePids(path, opts)
	if err != nil {
		return nil, err
	}
	offs := slices.DeleteFunc(slices.Clone(refCtrs), func(off uint64) bool { return off == 0 })
	return byProcess(path, offs, pids, opts, func(pid int) (link.Link, error) {
		uopts.PID = uint32(pid)
		return attach()
	})
}

// perfLink is a perf event with a program attached; closing it detaches
// the program and closes the event.
type perfLink struct {
	link io.Closer
	fd   int
}

func (p *perfLink) Close() error {
	err := p.link.Close()
	return errors.Join(err, unix.Close(p.fd))
}

// attachPerf opens the event on every CPU (profile, software, hardware) or
// on CPU 0 (interval) and attaches prog to each; for the events of every
// CPU, pid, when not 0, restricts them to one process.
func attachPerf(prog *ebpf.Program, ev PerfEvent, pid int) (links []io.Closer, err error) {
	cpus := []int{0}
	if ev.AllCPUs {
		cpus, err = onlineCPUs()
		if err != nil {
			return nil, err
		}
	}
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   ev.Type,
			Config: ev.Config,
			Size:   uint32(unsafeSizeofPerfAttr),
		}
		if ev.Freq != 0 {
			attr.Sample = ev.Freq
			attr.Bits |= unix.PerfBitFreq
		} else {
			attr.Sample = ev.Period
		}
		who := -1
		if ev.AllCPUs && pid != 0 {
			who = pid
		}
		fd, err := unix.PerfEventOpen(&attr, who, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			Detach(links)
			return nil, fmt.Errorf("open perf event on cpu %d: %w", cpu, err)
		}
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			unix.Close(fd)
			Detach(links)
			return nil, fmt.Errorf("attach to perf event on cpu %d: %w", cpu, err)
		}
		links = append(links, &perfLink{link: l, fd: fd})
	}
	return links, nil
}

// unsafeSizeofPerfAttr is sizeof(struct perf_event_attr) as x/sys/unix
// lays it out.
const unsafeSizeofPerfAttr = unix.PERF_ATTR_SIZE_VER7

// onlineCPUs lists the CPUs in /sys/devices/system/cpu/online, which
// reads like "0-3,5".
func onlineCPUs() ([]int, error) {
	data, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(data)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Detach closes links concurrently: closing a tracepoint or a kprobe
// waits for an RCU grace period, and concurrent closes share one.
func Detach(links []io.Closer) error {
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
