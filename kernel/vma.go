package kernel

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// VMAIter is what a program needs to walk the current task's memory
// mappings with the open-coded iterator kfuncs bpf_iter_task_vma_new,
// _next and _destroy (Linux 6.7) and tell each mapping's file by its
// inode: the kfuncs' BTF ids, the size of the iterator's state, and the
// offsets of the fields it reads, vm_area_struct's vm_start and vm_file,
// file's f_inode and inode's i_ino.
type VMAIter struct {
	New, Next, Destroy btf.TypeID
	Size               int
	VMStart, VMFile    uint32
	FInode, IIno       uint32
}

// TaskVMAIter looks up in the kernel's BTF what walking the current
// task's mappings takes.
func TaskVMAIter() (*VMAIter, error) {
	var it VMAIter
	for _, k := range []struct {
		name string
		id   *btf.TypeID
	}{{"bpf_iter_task_vma_new", &it.New}, {"bpf_iter_task_vma_next", &it.Next}, {"bpf_iter_task_vma_destroy", &it.Destroy}} {
		id, ok := FuncID(k.name)
		if !ok {
			return nil, fmt.Errorf("the kernel has no %s (Linux 6.7)", k.name)
		}
		*k.id = id
	}
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	var state *btf.Struct
	if err := spec.TypeByName("bpf_iter_task_vma", &state); err != nil {
		return nil, fmt.Errorf("struct bpf_iter_task_vma: %w", err)
	}
	it.Size = int(state.Size)
	for _, f := range []struct {
		strct, field string
		off          *uint32
	}{
		{"vm_area_struct", "vm_start", &it.VMStart},
		{"vm_area_struct", "vm_file", &it.VMFile},
		{"file", "f_inode", &it.FInode},
		{"inode", "i_ino", &it.IIno},
	} {
		var s *btf.Struct
		if err := spec.TypeByName(f.strct, &s); err != nil {
			return nil, fmt.Errorf("struct %s: %w", f.strct, err)
		}
		off, ok := memberOffset(s.Members, f.field)
		if !ok {
			return nil, fmt.Errorf("struct %s has no member %s", f.strct, f.field)
		}
		*f.off = off
	}
	return &it, nil
}

// memberOffset finds member name among members and in the anonymous
// structs and unions among them, as C does, and gives its byte offset.
func memberOffset(members []btf.Member, name string) (uint32, bool) {
	for _, m := range members {
		if m.Name == name {
			return m.Offset.Bytes(), true
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch t := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = t.Members
		case *btf.Union:
			inner = t.Members
		}
		if off, ok := memberOffset(inner, name); ok {
			return m.Offset.Bytes() + off, true
		}
	}
	return 0, false
}
