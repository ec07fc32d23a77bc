package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/internal/testenv"
)

// --emit-elf writes the object and stops, printing nothing, as bpftrace
// does; cilium/ebpf reads the object back. (package bpfelf checks its
// contents against what kinst compiles and loads one.)
func TestEmitELF(t *testing.T) {
	t.Parallel()
	testenv.Root(t)
	testenv.Require(t, testenv.Tracepoint)
	path := filepath.Join(t.TempDir(), "prog.o")
	kinst(t, "--emit-elf", path, "-e", `tracepoint:syscalls:sys_enter_getppid { @n = count(); printf("%d\n", pid); }`).want(t, 0, "", "")
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Programs["probe1"]
	if len(spec.Programs) != 1 || p == nil || p.SectionName != "tracepoint/syscalls/sys_enter_getppid" || p.Type != ebpf.TracePoint {
		t.Errorf("programs %v, want probe1, a tracepoint program in section tracepoint/syscalls/sys_enter_getppid", spec.Programs)
	}
	var maps []string
	for name := range spec.Maps {
		maps = append(maps, name)
	}
	slices.Sort(maps)
	if want := []string{".data.lost", "consts", "events", "map0"}; !slices.Equal(maps, want) {
		t.Errorf("maps %q, want %q", maps, want)
	}

	kinst(t, "--emit-elf", "/nonexistent/prog.o", "-e", "BEGIN {}").
		want(t, 1, "", "kinst: --emit-elf: open /nonexistent/prog.o: no such file or directory\n")
}
