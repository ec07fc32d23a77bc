// Command workload makes exactly the system calls it is told to, so that
// tests and benchmarks can compare what kinst counts with what happened.
//
// Usage:
//
//	workload getppid N          N getppid calls
//	workload openat N PATH      N openat calls on PATH (each file is closed)
//	workload nanosleep N USEC   N sleeps of USEC microseconds
//	workload write N BYTES      N writes of BYTES bytes to /dev/null
//	workload spin MS            burn CPU for MS milliseconds
//	workload burn MS            burn CPU for MS milliseconds in the Go
//	                            function main.burn, for profiles; it reads
//	                            the clock once every few milliseconds
//	workload clocksleep N USEC  N clock_nanosleep calls of USEC microseconds,
//	                            a call the Go runtime never makes itself
//	workload open N PATH        N opens of PATH; exits with the errno of the
//	                            last one that failed, 0 if none did
//	workload call N             N calls of the Go function main.callee, which
//	                            returns 2*i+1 for its i-th call (from 0), for
//	                            uprobes; it makes no system call
//	workload paced N RATE       N getppid calls at RATE calls a second, evenly
//	                            spaced (by spinning, not sleeping)
//	workload stream MS RATE FILE
//	                            getppid calls at RATE calls a second, paced
//	                            as paced, for MS milliseconds; then writes
//	                            the number of calls made to FILE: a load
//	                            that slows the workload lowers the count,
//	                            not the duration
//	workload threads N          N threads one after another, each of which
//	                            ends with the exit system call at once
//	workload udp N BYTES        N UDP datagrams of BYTES bytes over the
//	                            loopback to a socket of its own, which reads
//	                            each; byte j of each is 'a' + j%26
//	workload fsopen N FSTYPE    N fsopen calls of the file system type
//	                            FSTYPE, each descriptor closed: each calls
//	                            the type's init_fs_context once
//
// The calls are raw system calls from one locked thread, so the pid and
// tid the probes see are the process's own. The Go runtime opens a few
// files of its own before main runs (cgroup limits, huge page size), so
// tests of openat filter on the path.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// init locks the main goroutine to the main thread, where main then
// runs (locking in main itself leaves a window in which the scheduler
// may move it): tests pick the workload's system calls by tid == cpid.
func init() { runtime.LockOSThread() }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "workload: %v\n", err)
		os.Exit(2)
	}
}

// blockPreemption blocks SIGURG on the main thread. The Go runtime sends
// it to preempt a goroutine that ran for 10 ms, which on an emulated CPU
// the main one can, and a sleep it lands in ends early with EINTR: the
// tests count sleeps that return 0. Preemption then waits for the next
// call into the runtime.
func blockPreemption() {
	set := unix.Sigset_t{}
	set.Val[0] = 1 << (unix.SIGURG - 1)
	unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil)
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: workload getppid|openat|nanosleep|write|spin ARGS")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		return fmt.Errorf("bad count %q", args[1])
	}
	switch args[0] {
	case "getppid":
		for i := 0; i < n; i++ {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	case "openat":
		if len(args) < 3 {
			return fmt.Errorf("openat needs a path")
		}
		path, err := unix.BytePtrFromString(args[2])
		if err != nil {
			return err
		}
		dirfd := unix.AT_FDCWD
		for i := 0; i < n; i++ {
			fd, _, _ := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)), unix.O_RDONLY, 0, 0, 0)
			if int(fd) >= 0 {
				unix.Syscall(unix.SYS_CLOSE, fd, 0, 0)
			}
		}
	case "nanosleep":
		if len(args) < 3 {
			return fmt.Errorf("nanosleep needs microseconds")
		}
		us, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		ts := unix.NsecToTimespec(int64(us) * 1000)
		blockPreemption()
		for i := 0; i < n; i++ {
			unix.Syscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		}
	case "write":
		if len(args) < 3 {
			return fmt.Errorf("write needs a size")
		}
		size, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		fd, err := unix.Open("/dev/null", unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		buf := make([]byte, size)
		for i := 0; i < n; i++ {
			unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(size))
		}
	case "udp":
		if len(args) < 3 {
			return fmt.Errorf("udp needs a size")
		}
		size, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return udp(n, size)
	case "open":
		if len(args) < 3 {
			return fmt.Errorf("open needs a path")
		}
		failed := 0
		for i := 0; i < n; i++ {
			fd, err := unix.Open(args[2], unix.O_RDONLY, 0)
			if err != nil {
				failed = int(err.(unix.Errno))
				continue
			}
			unix.Close(fd)
		}
		if failed != 0 {
			os.Exit(failed)
		}
	case "fsopen":
		if len(args) < 3 {
			return fmt.Errorf("fsopen needs a file system type")
		}
		for i := 0; i < n; i++ {
			fd, err := unix.Fsopen(args[2], unix.FSOPEN_CLOEXEC)
			if err != nil {
				return fmt.Errorf("fsopen %s: %w", args[2], err)
			}
			unix.Close(fd)
		}
	case "clocksleep":
		if len(args) < 3 {
			return fmt.Errorf("clocksleep needs microseconds")
		}
		us, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		ts := unix.NsecToTimespec(int64(us) * 1000)
		blockPreemption()
		for i := 0; i < n; i++ {
			unix.Syscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		}
	case "call":
		sum := 0
		for i := 0; i < n; i++ {
			sum += callee(i)
		}
		if sum != n*n {
			return fmt.Errorf("callee returned a sum of %d, want %d", sum, n*n)
		}
	case "paced":
		if len(args) < 3 {
			return fmt.Errorf("paced needs a rate")
		}
		rate, err := strconv.Atoi(args[2])
		if err != nil || rate <= 0 {
			return fmt.Errorf("bad rate %q", args[2])
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
			for time.Now().Before(due) {
			}
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	case "stream":
		if len(args) < 4 {
			return fmt.Errorf("stream needs a rate and a file")
		}
		rate, err := strconv.Atoi(args[2])
		if err != nil || rate <= 0 {
			return fmt.Errorf("bad rate %q", args[2])
		}
		start := time.Now()
		end := start.Add(time.Duration(n) * time.Millisecond)
		calls := 0
		for now := start; now.Before(end); now = time.Now() {
			if due := start.Add(time.Duration(calls) * time.Second / time.Duration(rate)); now.Before(due) {
				continue
			}
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
			calls++
		}
		return os.WriteFile(args[3], []byte(strconv.Itoa(calls)), 0o644)
	case "threads":
		// A goroutine that ends locked to its thread takes the thread
		// with it, through the exit system call; each is waited for.
		tids := make(chan int)
		for i := 0; i < n; i++ {
			go func() {
				runtime.LockOSThread()
				tids <- unix.Gettid()
			}()
			task := fmt.Sprintf("/proc/self/task/%d", <-tids)
			for {
				if _, err := os.Stat(task); err != nil {
					break
				}
				time.Sleep(10 * time.Microsecond)
			}
		}
	case "burn":
		end := time.Now().Add(time.Duration(n) * time.Millisecond)
		x := uint64(1)
		for time.Now().Before(end) {
			x = burn(x)
		}
		if x == 0 {
			return fmt.Errorf("burn reached 0") // keeps x alive; it never is 0
		}
	case "spin":
		end := time.Now().Add(time.Duration(n) * time.Millisecond)
		for time.Now().Before(end) {
		}
	default:
		return fmt.Errorf("unknown workload %q", args[0])
	}
	return nil
}

// burn does a few milliseconds of arithmetic and nothing else, so that
// a CPU profile of the burn workload finds it on CPU, not the clock.
//
//go:noinline
func burn(x uint64) uint64 {
	for range 1 << 20 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x | 1
}

// callee is what uprobe tests probe: its i-th call returns 2*i+1. It is
// not inlined, so every call is a real call; it allocates nothing and
// keeps no stack frame, so a uretprobe's return address never meets the
// Go runtime's stack copying or garbage collector.
//
//go:noinline
func callee(i int) int { return 2*i + 1 }

// udp sends n datagrams of size bytes from one loopback socket to
// another, receiving each before the next is sent: no datagram is
// dropped, and none is answered with an ICMP error.
func udp(n, size int) error {
	loopback := [4]byte{127, 0, 0, 1}
	rx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	if err := unix.Bind(rx, &unix.SockaddrInet4{Addr: loopback}); err != nil {
		return err
	}
	sa, err := unix.Getsockname(rx)
	if err != nil {
		return err
	}
	tx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	payload := make([]byte, size)
	for j := range payload {
		payload[j] = byte('a' + j%26)
	}
	buf := make([]byte, size+1)
	for i := 0; i < n; i++ {
		if err := unix.Sendto(tx, payload, 0, sa); err != nil {
			return err
		}
		if _, _, err := unix.Recvfrom(rx, buf, 0); err != nil {
			return err
		}
	}
	return nil
}
