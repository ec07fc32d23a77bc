package guesttest

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// The workload: reads of /dev/zero and writes to /dev/null, each of which
// calls vfs_read or vfs_write exactly once in the kernel.
const (
	reads  = 1000
	writes = 250
)

// A counter is an array map with one 64-bit slot that a program increments.
type counter struct{ m *ebpf.Map }

func newCounter(t *testing.T) counter {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatalf("create counter map: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return counter{m}
}

func (c counter) value(t *testing.T) uint64 {
	t.Helper()
	var v uint64
	if err := c.m.Lookup(uint32(0), &v); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return v
}

// lockThread pins the test goroutine to its thread for the rest of the test
// and returns the bpf_get_current_pid_tgid value of that thread, so programs
// count only the workload's calls and none of the rest of the system's.
func lockThread(t *testing.T) uint64 {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return uint64(os.Getpid())<<32 | uint64(unix.Gettid())
}

// countingProgram loads a program that, when it runs on the thread pidTgid,
// adds one to the counter and returns ret; elsewhere it returns 0.
func countingProgram(t *testing.T, typ ebpf.ProgramType, at ebpf.AttachType, attachTo string, c counter, pidTgid uint64, ret int32) *ebpf.Program {
	t.Helper()
	insns := asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.LoadImm(asm.R1, int64(pidTgid), asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R1, "other"),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, c.m.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "other"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, ret),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("other"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: typ, AttachType: at, AttachTo: attachTo, Instructions: insns, License: "GPL",
	})
	if err != nil {
		t.Fatalf("load %s program: %v", typ, err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// readAndWrite runs the workload on the calling thread: n reads of one byte
// from /dev/zero and m writes of one byte to /dev/null, straight through the
// system calls.
func readAndWrite(t *testing.T, n, m int) {
	t.Helper()
	zero, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(zero)
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	var buf [1]byte
	for range n {
		if _, err := unix.Read(zero, buf[:]); err != nil {
			t.Fatalf("read /dev/zero: %v", err)
		}
	}
	for range m {
		if _, err := unix.Write(null, buf[:]); err != nil {
			t.Fatalf("write /dev/null: %v", err)
		}
	}
}

func attached(t *testing.T, l link.Link, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

// expectCount runs the workload and checks the counter against want.
func expectCount(t *testing.T, c counter, what string, n, m int, want uint64) {
	t.Helper()
	readAndWrite(t, n, m)
	if got := c.value(t); got != want {
		t.Fatalf("%s counted %d calls, want exactly %d", what, got, want)
	}
	t.Logf("%s counted exactly %d calls (%d reads, %d writes)", what, want, n, m)
}

func TestKprobeCountsReads(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Kprobe, ebpf.AttachNone, "", c, tid, 0)
	l, err := link.Kprobe("vfs_read", prog, nil)
	attached(t, l, err)
	expectCount(t, c, "kprobe:vfs_read", reads, writes, reads)
}

func TestKretprobeCountsReads(t *testing.T) {
	testenv.Require(t, testenv.Kretprobe)
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Kprobe, ebpf.AttachNone, "", c, tid, 0)
	l, err := link.Kretprobe("vfs_read", prog, nil)
	attached(t, l, err)
	expectCount(t, c, "kretprobe:vfs_read", reads, writes, reads)
}

func TestKprobeMultiCountsReadsAndWrites(t *testing.T) {
	testenv.Require(t, testenv.KprobeMulti)
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Kprobe, ebpf.AttachTraceKprobeMulti, "", c, tid, 0)
	l, err := link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{"vfs_read", "vfs_write"}})
	attached(t, l, err)
	expectCount(t, c, "kprobe.multi:vfs_read,vfs_write", reads, writes, reads+writes)
}

func TestFentryCountsReads(t *testing.T) {
	testenv.Require(t, testenv.Fentry)
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Tracing, ebpf.AttachTraceFEntry, "vfs_read", c, tid, 0)
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
	attached(t, l, err)
	expectCount(t, c, "fentry:vfs_read", reads, writes, reads)
}

func TestFexitCountsWrites(t *testing.T) {
	testenv.Require(t, testenv.Fexit)
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Tracing, ebpf.AttachTraceFExit, "vfs_write", c, tid, 0)
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFExit})
	attached(t, l, err)
	expectCount(t, c, "fexit:vfs_write", reads, writes, writes)
}

// TestFmodRetDeniesOpen makes security_file_open fail with EPERM for the
// test's thread only, and checks both the count and the opens' errors.
func TestFmodRetDeniesOpen(t *testing.T) {
	testenv.Require(t, testenv.FmodRet)
	const opens = 50
	c, tid := newCounter(t), lockThread(t)
	prog := countingProgram(t, ebpf.Tracing, ebpf.AttachModifyReturn, "security_file_open", c, tid, -int32(unix.EPERM))
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachModifyReturn})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	for i := range opens {
		fd, err := unix.Open("/etc/hostname", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			l.Close()
			t.Fatalf("open %d succeeded under fmod_ret returning -EPERM", i)
		}
		if !errors.Is(err, unix.EPERM) {
			l.Close()
			t.Fatalf("open %d: %v, want EPERM", i, err)
		}
	}
	if got := c.value(t); got != opens {
		l.Close()
		t.Fatalf("fmod_ret:security_file_open counted %d calls, want exactly %d", got, opens)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open("/etc/hostname", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open after detaching fmod_ret: %v", err)
	}
	unix.Close(fd)
	t.Logf("fmod_ret:security_file_open denied exactly %d of %d opens with EPERM", opens, opens)
}
