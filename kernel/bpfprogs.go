package kernel

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// A BPFFunc is a function of a running BPF program that a trampoline can
// attach to: the program itself or one of its sub-programs, named as the
// program's BTF names it.
type BPFFunc struct {
	ProgID ebpf.ProgramID
	Name   string
	// NumArgs is the function's arity, which places the return value
	// in an fexit program's context; 0 where BTF does not say.
	NumArgs int
}

// ErrNoProgram is the error for a program id no running program has.
var ErrNoProgram = errors.New("no such BPF program")

// BPFFuncs lists the functions of the running BPF programs, program by
// program in the order of their ids, as bpftrace 0.26.1 finds them: only
// programs loaded with BTF are there, as a trampoline's target needs it;
// each under the name BTF gives its first function (the name the program
// was loaded with is cut to 15 characters), then its sub-programs. Going
// through the programs needs CAP_SYS_ADMIN.
func BPFFuncs() ([]BPFFunc, error) {
	var all []BPFFunc
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return all, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list BPF programs: %w", err)
		}
		id = next
		fns, err := ProgramFuncs(id)
		if err != nil {
			continue // gone since, or not described: passed over
		}
		all = append(all, fns...)
	}
}

// ProgramFuncs lists the functions of the running program id: the
// program under the name BTF gives its first function, then its
// sub-programs. A program without BTF has none to list.
func ProgramFuncs(id ebpf.ProgramID) ([]BPFFunc, error) {
	prog, err := ebpf.NewProgramFromID(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w with id %d", ErrNoProgram, id)
	}
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return nil, err
	}
	if _, ok := info.BTFID(); !ok {
		return nil, fmt.Errorf("BPF program %d (%s) was loaded without BTF, which a trampoline needs", id, info.Name)
	}
	main := BPFFunc{ProgID: id, Name: info.Name}
	fns := []BPFFunc{main}
	infos, err := info.FuncInfos()
	if err != nil {
		// Described by BTF, its functions not: it is listed by its
		// name alone, as bpftrace lists it.
		return fns, nil
	}
	for i, fi := range infos {
		f := BPFFunc{ProgID: id, Name: fi.Func.Name}
		if proto, ok := fi.Func.Type.(*btf.FuncProto); ok {
			f.NumArgs = len(proto.Params)
		}
		if i == 0 {
			fns[0] = f
		} else {
			fns = append(fns, f)
		}
	}
	return fns, nil
}
