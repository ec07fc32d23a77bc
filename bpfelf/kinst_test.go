package bpfelf_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/pipeline"
)

// TestKinstPrograms writes what kinst compiles and reads it back: the
// programs, their instructions and the maps are what kinst loads.
func TestKinstPrograms(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		src      string
		sections []string // of each program in order
		needs    testenv.Feature
	}{
		{`tracepoint:syscalls:sys_enter_getppid /pid == 1/ { @n = count(); @h[kstack] = hist(pid); printf("%d\n", tid); }`,
			[]string{"tracepoint/syscalls/sys_enter_getppid"}, testenv.Tracepoint},
		{`tracepoint:syscalls:sys_enter_getp* { @[probe] = count(); }`, []string{"tracepoint"}, testenv.Tracepoint},
		// Many syscalls tracepoints are one program on raw_syscalls,
		// whose table of system calls is a data section.
		{`tracepoint:syscalls:sys_exit_* { @[probe] = sum(args->ret); }`, []string{"tracepoint/raw_syscalls/sys_exit"}, testenv.Tracepoint},
		{`BEGIN { printf("hi\n"); exit(); } END { @x = 1; }`, []string{"raw_tracepoint", "raw_tracepoint"}, testenv.RawTracepoint},
		{`profile:hz:99 { @[cpu] = count(); } interval:s:1 { print(@); }`, []string{"perf_event", "perf_event"}, testenv.PerfEvent},
		{`rawtracepoint:sched_switch { @s = sum(arg0); }`, []string{"raw_tracepoint/sched_switch"}, testenv.RawTracepoint},
		// Test and bench probes are XDP programs, which BPF_PROG_TEST_RUN
		// repeats and times.
		{`test:a { @n = count(); return 1; } bench:b { @m = count(); }`, []string{"xdp", "xdp"}, testenv.Ringbuf},
		// A trampoline names its function; skboutput() adds a perf
		// event array.
		{`fexit:ip_output { @r[retval] = count(); skboutput("/dev/null", args->skb, 20, 0); }`, []string{"fexit/ip_output"}, testenv.Fexit},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			testenv.Require(t, tt.needs)
			out, err := pipeline.Compile("-e", []byte(tt.src), &pipeline.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := pipeline.WriteELF(&buf, out); err != nil {
				t.Fatal(err)
			}
			got, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Programs) != len(out.Collection.Programs) || len(out.Programs) != len(tt.sections) {
				t.Fatalf("read back %d programs of %d (%d without fallbacks), want %d", len(got.Programs), len(out.Collection.Programs), len(out.Programs), len(tt.sections))
			}
			for i, p := range out.Programs {
				want := p.Spec(out)
				g := got.Programs[p.Name]
				if g == nil {
					t.Fatalf("program %s missing", p.Name)
				}
				if g.SectionName != tt.sections[i] || g.Type != want.Type || g.AttachType != want.AttachType || g.License != want.License {
					t.Errorf("%s read back in %q as %s/%s license %q, want %q %s/%s %q", p.Name, g.SectionName, g.Type, g.AttachType, g.License,
						tt.sections[i], want.Type, want.AttachType, want.License)
				}
				sameInstructions(t, p.Name, want.Instructions, g.Instructions, got.ByteOrder)
			}
			sameMaps(t, out.Collection.Maps, got.Maps)
		})
	}
}

// TestLoadTracepoint loads a tracepoint program from the object with
// cilium/ebpf alone, attaches it and counts this process's getppid
// calls: the relocations point the instructions at the right maps.
func TestLoadTracepoint(t *testing.T) {
	testenv.Root(t)
	testenv.Require(t, testenv.Tracepoint)
	src := `tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @calls = count(); @last = tid; }`
	out, err := pipeline.Compile("-e", []byte(src), &pipeline.Options{Params: []string{strconv.Itoa(os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pipeline.WriteELF(&buf, out); err != nil {
		t.Fatal(err)
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	l, err := link.Tracepoint("syscalls", "sys_enter_getppid", coll.Programs[out.Programs[0].Name], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const calls = 7
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range calls {
		syscall.Getppid()
	}
	var perCPU []uint64
	if err := coll.Maps[out.Maps[0].Spec].Lookup(uint64(0), &perCPU); err != nil {
		t.Fatalf("@calls: %v", err)
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	var tid int64
	if err := coll.Maps[out.Maps[1].Spec].Lookup(uint64(0), &tid); err != nil {
		t.Fatalf("@last: %v", err)
	}
	if n != calls || tid != int64(syscall.Gettid()) {
		t.Errorf("@calls = %d, @last = %d; want %d and %d", n, tid, calls, syscall.Gettid())
	}
}

// libbpf, through bpftool where it is installed, loads the object too:
// it creates the maps, applies the relocations and gets the program past
// the verifier.
func TestLibbpfLoads(t *testing.T) {
	testenv.Root(t)
	testenv.Require(t, testenv.Tracepoint, testenv.Ringbuf)
	bpftool, err := exec.LookPath("bpftool")
	if err != nil {
		t.Skip("no bpftool on PATH")
	}
	src := `tracepoint:syscalls:sys_enter_getppid /pid == 1/ { @n = count(); @h = hist(tid); printf("%d\n", tid); }`
	out, err := pipeline.Compile("-e", []byte(src), &pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(t.TempDir(), "prog.o")
	f, err := os.Create(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := pipeline.WriteELF(f, out); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	pins := fmt.Sprintf("/sys/fs/bpf/kinst-bpfelf-%d", os.Getpid())
	defer os.RemoveAll(pins)
	if msg, err := exec.Command(bpftool, "prog", "loadall", obj, pins).CombinedOutput(); err != nil {
		t.Fatalf("bpftool prog loadall: %v\n%s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(pins, out.Programs[0].Name)); err != nil {
		t.Errorf("bpftool loaded the object but pinned no %s: %v", out.Programs[0].Name, err)
	}
}
