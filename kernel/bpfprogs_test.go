package kernel

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/internal/testenv"
)

// A program loaded with BTF is listed under its BTF name, then its
// sub-program; one without BTF is not listed, and asking for its
// functions says why.
func TestBPFFuncs(t *testing.T) {
	prog := testenv.BTFProgram(t, "kinst_bpf_main", "kinst_bpf_sub")
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	want := []BPFFunc{{ProgID: id, Name: "kinst_bpf_main", NumArgs: 1}, {ProgID: id, Name: "kinst_bpf_sub"}}
	fns, err := ProgramFuncs(id)
	if err != nil || !slices.Equal(fns, want) {
		t.Errorf("ProgramFuncs(%d) = %v, %v; want %v", id, fns, err, want)
	}
	all, err := BPFFuncs()
	if err != nil {
		t.Fatal(err)
	}
	mine := slices.DeleteFunc(all, func(f BPFFunc) bool { return f.ProgID != id })
	if !slices.Equal(mine, want) {
		t.Errorf("BPFFuncs() has %v of program %d; want %v", mine, id, want)
	}

	plain, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "kinst_nobtf", Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pinfo, _ := plain.Info()
	pid, _ := pinfo.ID()
	if _, err := ProgramFuncs(pid); err == nil || err.Error() != fmt.Sprintf("BPF program %d (kinst_nobtf)", pid)+" was loaded without BTF, which a trampoline needs" {
		t.Errorf("ProgramFuncs of a program without BTF: %v", err)
	}
	if _, err := ProgramFuncs(0); !errors.Is(err, ErrNoProgram) {
		t.Errorf("ProgramFuncs(0) = %v; want ErrNoProgram", err)
	}
}
