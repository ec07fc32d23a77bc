package testenv

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// BTFProgram loads a socket filter program whose BTF names it name and
// its one sub-program, which it calls, sub; the program is unloaded when
// the test ends. It is a target for trampolines on BPF programs, which
// need the target's BTF: running it (Program.Run, with at least 14 bytes
// of data) runs both functions once, and both return 7.
func BTFProgram(t testing.TB, name, sub string) *ebpf.Program {
	t.Helper()
	Root(t)
	intType := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	fn := func(name string, params ...btf.FuncParam) *btf.Func {
		return &btf.Func{Name: name, Type: &btf.FuncProto{Return: intType, Params: params}, Linkage: btf.StaticFunc}
	}
	ctx := btf.FuncParam{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: name,
		Type: ebpf.SocketFilter,
		Instructions: asm.Instructions{
			btf.WithFuncMetadata(asm.Call.Label(sub), fn(name, ctx)),
			asm.Return(),
			btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 7).WithSymbol(sub), fn(sub)),
			asm.Return(),
		},
		License: "GPL",
	})
	if err != nil {
		t.Fatal(fmt.Errorf("load a program with BTF: %w", err))
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}
