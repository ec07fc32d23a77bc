package check

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// fromBTF converts a kernel type to a kinst type. Structs and unions
// become records whose fields are converted only when a program names
// them, so that following pointers never walks the whole type graph.
func fromBTF(t btf.Type, space AddrSpace) (*Type, error) {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Int:
		if u.Encoding == btf.Bool {
			return TUint8, nil
		}
		signed := u.Encoding == btf.Signed || u.Encoding == btf.Char
		return IntType(int(u.Size), signed), nil
	case *btf.Enum:
		e := &Enum{Tag: "enum " + u.Name, Names: make(map[int64]string, len(u.Values))}
		if u.Name == "" {
			e.Tag = "enum <anonymous>"
		}
		for _, v := range u.Values {
			n := int64(v.Value)
			if _, dup := e.Names[n]; !dup {
				e.Names[n] = v.Name
			}
		}
		return &Type{Kind: Int, Size: int(u.Size), Signed: u.Signed, Enum: e}, nil
	case *btf.Float:
		return FloatType(int(u.Size), u.Name), nil
	case *btf.Pointer:
		elem, err := pointee(u.Target, space)
		if err != nil {
			return nil, err
		}
		return &Type{Kind: Ptr, Size: 8, Elem: elem, Space: space}, nil
	case *btf.Array:
		elem, err := fromBTF(u.Type, space)
		if err != nil {
			return nil, err
		}
		if elem.Kind == Int && elem.Size == 1 {
			return StrType(int(u.Nelems)), nil
		}
		return &Type{Kind: Array, Size: elem.Size * int(u.Nelems), Elem: elem, Len: int(u.Nelems), Space: space}, nil
	case *btf.Struct:
		return &Type{Kind: Record, Size: int(u.Size), Name: "struct " + u.Name, BTF: u, Space: space}, nil
	case *btf.Union:
		return &Type{Kind: Record, Size: int(u.Size), Name: "union " + u.Name, BTF: u, Space: space}, nil
	case *btf.FuncProto, *btf.Void:
		return nil, errUnsupportedBTF
	case nil:
		return nil, errUnsupportedBTF
	default:
		return nil, fmt.Errorf("kernel type %s: %w", t, errUnsupportedBTF)
	}
}

var errUnsupportedBTF = errors.New("type not supported")

// pointee converts what a pointer points to; void and functions give a
// nil element, an untyped pointer.
func pointee(t btf.Type, space AddrSpace) (*Type, error) {
	switch btf.UnderlyingType(t).(type) {
	case *btf.Void, *btf.FuncProto:
		return nil, nil
	}
	elem, err := fromBTF(t, space)
	if errors.Is(err, errUnsupportedBTF) {
		return nil, nil
	}
	return elem, err
}

// Field finds the field called name in record t, searching anonymous
// structs and unions as C does. It returns nil when there is none.
func (t *Type) Field(name string) *Field {
	if t.Kind != Record {
		return nil
	}
	for _, f := range t.Fields {
		if f.Name == name {
			return f.resolve()
		}
	}
	if t.BTF == nil {
		return nil
	}
	var members []btf.Member
	switch u := t.BTF.(type) {
	case *btf.Struct:
		members = u.Members
	case *btf.Union:
		members = u.Members
	}
	if f := btfField(members, name, 0, t.Space); f != nil {
		return f
	}
	if r, ok := renamedFields[[2]string{t.Name, name}]; ok {
		return btfField(members, r.name, 0, t.Space)
	}
	return nil
}

// A rename is a kernel struct field's new name and the release that gave
// it.
type rename struct{ name, release string }

// renamedFields lists kernel struct fields renamed without a change of
// meaning, by struct and old name, so that tools written for earlier
// kernels still read them: runqlen.bt reads cfs_rq.nr_running. Field
// finds the new name where the old one is gone, and the checker warns.
var renamedFields = map[[2]string]rename{
	{"struct cfs_rq", "nr_running"}:   {"nr_queued", "6.13"},
	{"struct cfs_rq", "h_nr_running"}: {"h_nr_queued", "6.13"},
}

func btfField(members []btf.Member, name string, base int, space AddrSpace) *Field {
	for _, m := range members {
		off := base + int(m.Offset.Bytes())
		if m.Name == "" {
			var inner []btf.Member
			switch u := btf.UnderlyingType(m.Type).(type) {
			case *btf.Struct:
				inner = u.Members
			case *btf.Union:
				inner = u.Members
			}
			if f := btfField(inner, name, off, space); f != nil {
				return f
			}
			continue
		}
		if m.Name != name {
			continue
		}
		ft, err := fromBTF(m.Type, space)
		if err != nil {
			return nil
		}
		f := &Field{Name: name, Type: ft, Offset: off}
		if m.BitfieldSize > 0 {
			bitOff := int(m.Offset) % 8
			f.Offset = base + int(m.Offset)/8
			f.Bits = int(m.BitfieldSize)
			f.BitOffset = bitOff
		}
		return f
	}
	return nil
}

// Members lists a record's fields in layout order, for printing whole
// records: the program's declared fields, or the kernel's with anonymous
// members flattened. Fields whose type kinst cannot represent are left
// out, and floating-point ones, which it cannot print, unless floats is
// set: bpftrace 0.26 prints them as null, 0.17 leaves them out.
func (t *Type) Members(floats bool) []*Field {
	var out []*Field
	if t.BTF == nil {
		for _, f := range t.Fields {
			if f.resolve().Type != nil && (floats || !f.Type.hasFloat()) {
				out = append(out, f)
			}
		}
		return out
	}
	for _, n := range t.FieldNames() {
		if f := t.Field(n); f != nil && (floats || !f.Type.hasFloat()) {
			out = append(out, f)
		}
	}
	return out
}

// FieldNames lists a record's field names, for suggestions in errors.
func (t *Type) FieldNames() []string {
	var names []string
	for _, f := range t.Fields {
		names = append(names, f.Name)
	}
	if t.BTF != nil {
		var walk func([]btf.Member)
		walk = func(ms []btf.Member) {
			for _, m := range ms {
				if m.Name != "" {
					names = append(names, m.Name)
					continue
				}
				switch u := btf.UnderlyingType(m.Type).(type) {
				case *btf.Struct:
					walk(u.Members)
				case *btf.Union:
					walk(u.Members)
				}
			}
		}
		switch u := t.BTF.(type) {
		case *btf.Struct:
			walk(u.Members)
		case *btf.Union:
			walk(u.Members)
		}
	}
	return names
}

// FromBTF converts a kernel BTF type for a Resolver or Kernel
// implementation: function parameters, return values and named types.
func FromBTF(t btf.Type, space AddrSpace) (*Type, error) { return fromBTF(t, space) }

// btfAlign is the C alignment of a kernel type, which BTF does not
// record: the largest of its members', or 1 for a packed struct whose
// size that alignment would not divide.
func btfAlign(t btf.Type) int {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Int:
		return max(1, min(int(u.Size), 16))
	case *btf.Enum:
		return max(1, int(u.Size))
	case *btf.Float:
		return max(1, int(u.Size))
	case *btf.Pointer:
		return 8
	case *btf.Array:
		return btfAlign(u.Type)
	case *btf.Struct:
		return membersAlign(u.Members, u.Size)
	case *btf.Union:
		return membersAlign(u.Members, u.Size)
	}
	return 1
}

func membersAlign(ms []btf.Member, size uint32) int {
	a := 1
	for _, m := range ms {
		a = max(a, btfAlign(m.Type))
	}
	if size%uint32(a) != 0 {
		return 1
	}
	return a
}
