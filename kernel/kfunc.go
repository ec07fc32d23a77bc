package kernel

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// FuncID returns the vmlinux BTF id of function name, by which a
// program calls it as a kfunc.
func FuncID(name string) (btf.TypeID, bool) {
	spec, err := KernelBTF()
	if err != nil {
		return 0, false
	}
	types, err := spec.AnyTypesByName(name)
	if err != nil {
		return 0, false
	}
	for _, t := range types {
		if fn, ok := t.(*btf.Func); ok {
			id, err := spec.TypeID(fn)
			return id, err == nil
		}
	}
	return 0, false
}

// KfuncCall is the instruction that calls the kernel function of
// vmlinux BTF id id.
func KfuncCall(id btf.TypeID) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)}
}

// HasFunc reports whether the kernel's (vmlinux) BTF describes function
// name, which is how bpftrace's kfunc_exist tells that a kfunc exists.
func HasFunc(name string) bool {
	_, ok := FuncID(name)
	return ok
}

// KfuncAllowed reports whether programs of type pt may call kernel
// function name. It loads a program that only makes the call: the
// function is allowed unless the verifier says it is not, as bpftrace's
// kfunc_allowed decides (a load refused for another reason, such as a
// tracing program's missing target, leaves the answer yes).
func KfuncAllowed(name string, pt ebpf.ProgramType) bool {
	key := kfuncQuery{name, pt}
	if v, ok := kfuncAnswers.Load(key); ok {
		return v.(bool)
	}
	yes := kfuncAllowed(name, pt)
	kfuncAnswers.Store(key, yes)
	return yes
}

// kfuncAnswers remembers KfuncAllowed's answers: the checker asks again
// on each of its passes, and each question costs a program load.
var kfuncAnswers sync.Map // kfuncQuery → bool

type kfuncQuery struct {
	name string
	pt   ebpf.ProgramType
}

func kfuncAllowed(name string, pt ebpf.ProgramType) bool {
	id, ok := FuncID(name)
	if !ok {
		return false
	}
	spec := &ebpf.ProgramSpec{
		Type:         pt,
		Instructions: asm.Instructions{KfuncCall(id), asm.Return()},
		License:      "GPL",
	}
	prog, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction})
	if err == nil {
		prog.Close()
		return true
	}
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return true
	}
	return !strings.Contains(strings.Join(ve.Log, "\n"), fmt.Sprintf("calling kernel function %s is not allowed", name))
}

// PercpuVar returns the vmlinux BTF id of the per-CPU variable name, which
// a program loads with bpf_this_cpu_ptr or bpf_per_cpu_ptr.
func PercpuVar(name string) (btf.TypeID, error) {
	spec, err := KernelBTF()
	if err != nil {
		return 0, err
	}
	types, err := spec.AnyTypesByName(name)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return 0, err
	}
	for _, t := range types {
		if v, ok := t.(*btf.Var); ok {
			return spec.TypeID(v)
		}
	}
	return 0, fmt.Errorf("could not resolve variable %q from BTF", name)
}
