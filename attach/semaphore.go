package attach

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
)

// On kernels without the uprobe reference counter (before 4.20) the
// kernel cannot raise a USDT probe's semaphore, so kinst raises it
// itself, as bpftrace does: it adds one to the 16-bit counter in the
// memory of each traced process through /proc/PID/mem when it attaches,
// and takes it off again when it detaches. The processes are -p's, the
// -c command, or with --usdt-file-activation every process that maps the
// probe's file; each gets a uprobe of its own, restricted to it.

// ErrSemaphore says a USDT probe's semaphore cannot be raised: the
// kernel lacks the reference counter and kinst has no process to raise
// it in.
var ErrSemaphore = errors.New("cannot raise the probe's USDT semaphore")

// manualSemaphores reports whether kinst must raise USDT semaphores
// itself.
func manualSemaphores() bool { return !kernel.Available(kernel.FeatUprobeRefCtr) }

// NeedsExec reports whether attaching t to a -c command needs the
// command's own memory, which it has only once it has exec'd: a USDT
// site whose semaphore kinst raises itself, or a watchpoint on an
// address, whose count would otherwise include the exec's own stores.
func NeedsExec(t *check.Target) bool {
	switch a := t.Attach.(type) {
	case Uprobe:
		return t.Provider == "usdt" && a.RefCtrOffset != 0 && manualSemaphores()
	case Watchpoint:
		return t.Watch == nil
	}
	return false
}

// semaphorePids lists the processes whose semaphores a USDT probe in
// path needs raised: -p's, else the -c command's, else with file
// activation every process mapping path.
func semaphorePids(path string, opts Options) ([]int, error) {
	switch {
	case opts.Pid != 0:
		return []int{opts.Pid}, nil
	case opts.Cpid != 0:
		return []int{opts.Cpid}, nil
	case !opts.FileActivation:
		return nil, fmt.Errorf("%w: this kernel has no uprobe reference counter, which raises it in every process: give -p PID or --usdt-file-activation", ErrSemaphore)
	}
	pids, err := mappingPids(path)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("%w: no process runs %s for --usdt-file-activation to raise it in", ErrSemaphore, path)
	}
	return pids, nil
}

// gone reports whether err says a process ended: the processes file
// activation found may end before their semaphores are raised, and are
// then passed over.
func gone(err error, opts Options) bool {
	return opts.Pid == 0 && opts.Cpid == 0 && (errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH))
}

// fileID identifies a file as /proc/PID/maps does: device and inode.
type fileID struct {
	major, minor uint32
	ino          uint64
}

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return fileID{unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino}, nil
}

// mappingID is the file a mapping maps; ok is false for anonymous
// memory and pseudo files.
func mappingID(m elfsym.Mapping) (id fileID, ok bool) {
	major, minor, _ := strings.Cut(m.Dev, ":")
	maj, err1 := strconv.ParseUint(major, 16, 32)
	min, err2 := strconv.ParseUint(minor, 16, 32)
	if err1 != nil || err2 != nil || m.Inode == 0 {
		return fileID{}, false
	}
	return fileID{uint32(maj), uint32(min), m.Inode}, true
}

// mapsFile reports whether a mapping maps the file id with the
// permission perm ('x' or 'w').
func mapsFile(m elfsym.Mapping, id fileID, perm string) bool {
	mid, ok := mappingID(m)
	return ok && mid == id && strings.Contains(m.Perms, perm)
}

// mappingPids lists the processes that map path executable, as
// bpftrace's file activation finds them.
func mappingPids(path string) ([]int, error) {
	id, err := statID(path)
	if err != nil {
		return nil, err
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		maps, err := elfsym.ReadMaps(pid)
		if err != nil {
			continue // it ended meanwhile, or is not ours to read
		}
		if slices.ContainsFunc(maps, func(m elfsym.Mapping) bool { return mapsFile(m, id, "x") }) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// semaphoreAddr finds where the semaphore at file offset off of path
// lies in process pid: in the writable mapping of the file that covers
// the offset.
func semaphoreAddr(path string, off uint64, pid int) (uint64, error) {
	id, err := statID(path)
	if err != nil {
		return 0, err
	}
	maps, err := elfsym.ReadMaps(pid)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrSemaphore, err)
	}
	for _, m := range maps {
		if mapsFile(m, id, "w") && off >= m.Offset && off-m.Offset+2 <= m.End-m.Start {
			return m.Start + off - m.Offset, nil
		}
	}
	return 0, fmt.Errorf("%w: process %d does not map the data of %s (yet)", ErrSemaphore, pid, path)
}

// addSemaphore adds delta to the 16-bit semaphore at addr in process pid.
func addSemaphore(pid int, addr uint64, delta int16) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [2]byte
	if _, err := f.ReadAt(b[:], int64(addr)); err != nil {
		return err
	}
	v := binary.LittleEndian.Uint16(b[:]) + uint16(delta)
	binary.LittleEndian.PutUint16(b[:], v)
	_, err = f.WriteAt(b[:], int64(addr))
	return err
}

// semaphore is a USDT semaphore kinst raised in one process.
type semaphore struct {
	pid  int
	addr uint64
}

// raiseSemaphore adds one to the semaphore at file offset off of path in
// process pid.
func raiseSemaphore(path string, off uint64, pid int) (*semaphore, error) {
	addr, err := semaphoreAddr(path, off, pid)
	if err != nil {
		return nil, err
	}
	if err := addSemaphore(pid, addr, 1); err != nil {
		return nil, fmt.Errorf("%w in process %d at %#x: %w", ErrSemaphore, pid, addr, err)
	}
	return &semaphore{pid, addr}, nil
}

// lower takes the one raiseSemaphore added off again; a process that
// ended meanwhile has nothing left to lower.
func (s *semaphore) lower() error {
	err := addSemaphore(s.pid, s.addr, -1)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EIO) {
		return nil
	}
	return err
}

// semaphoreLink is a uprobe link with the semaphores kinst raised for
// it, lowered once the uprobe is gone.
type semaphoreLink struct {
	link io.Closer
	sems []*semaphore
}

func (l *semaphoreLink) Close() error {
	errs := []error{l.link.Close()}
	for _, s := range l.sems {
		errs = append(errs, s.lower())
	}
	return errors.Join(errs...)
}

// raiseAll raises the semaphores at the file offsets offs of path in
// pid, each once, and returns them; on failure it lowers those it
// raised.
func raiseAll(path string, offs []uint64, pid int) ([]*semaphore, error) {
	var sems []*semaphore
	for _, off := range offs {
		s, err := raiseSemaphore(path, off, pid)
		if err != nil {
			for _, r := range sems {
				r.lower()
			}
			return nil, err
		}
		sems = append(sems, s)
	}
	return sems, nil
}

// attachUSDTByHand attaches a USDT uprobe whose semaphore at file offset
// refCtr kinst raises itself: one uprobe per process, in that process.
func attachUSDTByHand(prog *ebpf.Program, u Uprobe, refCtr, cookie uint64, opts Options) ([]io.Closer, error) {
	pids, err := semaphorePids(u.Path, opts)
	if err != nil {
		return nil, err
	}
	ex, err := link.OpenExecutable(u.Path)
	if err != nil {
		return nil, err
	}
	return byProcess(u.Path, []uint64{refCtr}, pids, opts, func(pid int) (link.Link, error) {
		uopts := &link.UprobeOptions{Address: u.Offset, PID: pid, Cookie: cookie}
		if u.Return {
			return ex.Uretprobe(u.Symbol, prog, uopts)
		}
		return ex.Uprobe(u.Symbol, prog, uopts)
	})
}

// byProcess raises the semaphores at file offsets offs of path in each
// process and attaches a link restricted to it; processes that ended
// meanwhile are passed over, as long as one is left.
func byProcess(path string, offs []uint64, pids []int, opts Options, attach func(pid int) (link.Link, error)) ([]io.Closer, error) {
	var links []io.Closer
	var lastGone error
	for _, pid := range pids {
		sems, err := raiseAll(path, offs, pid)
		if gone(err, opts) {
			lastGone = err
			continue
		}
		if err != nil {
			Detach(links)
			return nil, err
		}
		l, err := attach(pid)
		if err != nil {
			for _, s := range sems {
				s.lower()
			}
			if gone(err, opts) {
				lastGone = err
				continue
			}
			Detach(links)
			return nil, err
		}
		links = append(links, &semaphoreLink{link: l, sems: sems})
	}
	if len(links) == 0 && lastGone != nil {
		return nil, lastGone
	}
	return links, nil
}
