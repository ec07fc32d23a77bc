// Package hwbp finds out whether hardware breakpoints work on this
// machine: a kernel may accept a breakpoint perf event on a machine (a
// virtual one, typically) whose debug registers never trap, and then a
// watchpoint attaches and never fires. Both `kinst features` and the
// tests ask it.
package hwbp

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNeverFires reports breakpoints the kernel accepts that do not trap.
var ErrNeverFires = errors.New("hardware breakpoints are accepted but never fire on this machine (a virtual machine that does not pass debug registers through)")

// breakpointW is HW_BREAKPOINT_W of <linux/hw_breakpoint.h>: trap on writes.
const breakpointW = 2

var target uint64

// Probe sets a write breakpoint on a variable of this process, writes the
// variable and reads how often the breakpoint hit. It returns nil when it
// hit, ErrNeverFires when it did not, or perf_event_open's error.
func Probe() error {
	// The event counts in the thread that opens it; the write must come
	// from the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := unix.PerfEventAttr{
		Type:    unix.PERF_TYPE_BREAKPOINT,
		Size:    uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bp_type: breakpointW,
		Ext1:    uint64(uintptr(unsafe.Pointer(&target))),
		Ext2:    8,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("perf_event_open breakpoint: %w", err)
	}
	defer unix.Close(fd)
	for i := range 3 {
		atomic.StoreUint64(&target, uint64(i))
	}
	var buf [8]byte
	if _, err := unix.Read(fd, buf[:]); err != nil {
		return fmt.Errorf("read breakpoint count: %w", err)
	}
	if *(*uint64)(unsafe.Pointer(&buf)) == 0 {
		return ErrNeverFires
	}
	return nil
}
