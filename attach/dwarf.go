package attach

import (
	"debug/dwarf"
	"fmt"
	"sync"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/syntax"
)

// uprobeArgs describes a user function's arguments from its binary's
// DWARF: a record of one word per parameter, numbered as the calling
// convention passes them in registers. Parameters whose values are not
// integers or pointers read as uint64, as for kernel functions.
func uprobeArgs(f elfsym.Func) *check.Type {
	args := &check.Type{Kind: check.Record, Name: "struct " + f.Name + "_args", Size: 8 * len(f.Params), Space: check.UserSpace}
	conv := dwarfConverter{}
	for i, p := range f.Params {
		pt := conv.convert(p.Type)
		if pt == nil || !pt.InRegister() {
			pt = check.TUint64
		}
		args.Fields = append(args.Fields, &check.Field{Name: p.Name, Type: pt, Offset: 8 * i})
	}
	return args
}

// dwarfConverter turns DWARF types into kinst types; it remembers the
// records it has made so that self-referring structs end.
type dwarfConverter map[dwarf.Type]*check.Type

// convert returns t as a kinst type of user memory, or nil for void and
// types kinst cannot represent (floating point, functions).
func (conv dwarfConverter) convert(t dwarf.Type) *check.Type {
	switch u := t.(type) {
	case *dwarf.TypedefType:
		return conv.convert(u.Type)
	case *dwarf.QualType:
		return conv.convert(u.Type)
	case *dwarf.CharType:
		return check.IntType(1, true)
	case *dwarf.UcharType, *dwarf.BoolType:
		return check.TUint8
	case *dwarf.IntType:
		return intOfSize(u.ByteSize, true)
	case *dwarf.UintType:
		return intOfSize(u.ByteSize, false)
	case *dwarf.EnumType:
		return intOfSize(u.ByteSize, false)
	case *dwarf.FloatType:
		return check.FloatType(int(u.ByteSize), u.Name)
	case *dwarf.PtrType:
		return &check.Type{Kind: check.Ptr, Size: 8, Elem: conv.convert(u.Type), Space: check.UserSpace}
	case *dwarf.ArrayType:
		elem := conv.convert(u.Type)
		if elem == nil || u.Count < 0 {
			return nil
		}
		if elem.Kind == check.Int && elem.Size == 1 && elem.Signed {
			return check.StrType(int(u.Count))
		}
		return &check.Type{Kind: check.Array, Size: elem.Size * int(u.Count), Elem: elem, Len: int(u.Count), Space: check.UserSpace}
	case *dwarf.StructType:
		if r := conv[t]; r != nil {
			return r
		}
		name := u.Kind + " " + u.StructName
		if u.StructName == "" {
			name = u.Kind + " <anonymous>"
		}
		r := &check.Type{Kind: check.Record, Name: name, Space: check.UserSpace}
		conv[t] = r
		if !u.Incomplete {
			r.Size = int(u.ByteSize)
			conv.fields(r, u, 0)
		}
		return r
	}
	return nil
}

// fields adds the members of s, at base bytes into r, flattening
// anonymous members as C's name lookup does.
func (conv dwarfConverter) fields(r *check.Type, s *dwarf.StructType, base int) {
	for _, f := range s.Field {
		if f.Name == "" {
			if inner, ok := f.Type.(*dwarf.StructType); ok {
				conv.fields(r, inner, base+int(f.ByteOffset))
			}
			continue
		}
		ft := conv.convert(f.Type)
		if ft == nil {
			continue
		}
		field := &check.Field{Name: f.Name, Type: ft, Offset: base + int(f.ByteOffset)}
		if f.BitSize > 0 {
			bit := f.DataBitOffset
			if bit == 0 && f.BitOffset != 0 {
				// DWARF 2/3 count from the storage unit's high end.
				bit = f.ByteOffset*8 + f.ByteSize*8 - f.BitOffset - f.BitSize
			}
			field.Offset, field.BitOffset, field.Bits = base+int(bit/8), int(bit%8), int(f.BitSize)
		}
		r.Fields = append(r.Fields, field)
	}
}

func intOfSize(size int64, signed bool) *check.Type {
	switch size {
	case 1, 2, 4, 8:
		return check.IntType(int(size), signed)
	}
	return nil
}

// dwarfArgs looks a uprobe's function up in the binary's DWARF.
func dwarfArgs(path, fn string) (*check.Type, error) {
	d, err := elfsym.OpenDebug(path)
	if err != nil {
		return nil, err
	}
	fs, err := d.Funcs(fn)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("the DWARF of %s does not describe %s", path, fn)
	}
	return uprobeArgs(fs[0]), nil
}

// dwarfTypes returns a lookup of the named types in the binary at path,
// which reads its DWARF on first use.
func dwarfTypes(path string) func(kind syntax.Token, name string) (*check.Type, error) {
	var once sync.Once
	var d *elfsym.Debug
	var err error
	conv := dwarfConverter{}
	return func(kind syntax.Token, name string) (*check.Type, error) {
		once.Do(func() { d, err = elfsym.OpenDebug(path) })
		if err != nil {
			return nil, err
		}
		k := ""
		if kind != syntax.IDENT {
			k = kind.String()
		}
		dt, err := d.Type(k, name)
		if err != nil {
			return nil, err
		}
		t := conv.convert(dt)
		if t == nil {
			return nil, fmt.Errorf("%s: type %s is not supported", path, name)
		}
		return t, nil
	}
}

// cTypeString spells a DWARF type as bpftrace -lv lists uprobe arguments:
// "long int", "const char*", "struct kinst_point*".
func cTypeString(t dwarf.Type) string {
	switch u := t.(type) {
	case *dwarf.QualType:
		return u.Qual + " " + cTypeString(u.Type)
	case *dwarf.PtrType:
		if _, void := u.Type.(*dwarf.VoidType); void || u.Type == nil {
			return "void*"
		}
		return cTypeString(u.Type) + "*"
	case *dwarf.ArrayType:
		return fmt.Sprintf("%s[%d]", cTypeString(u.Type), u.Count)
	case *dwarf.StructType:
		return u.Kind + " " + u.StructName
	case *dwarf.EnumType:
		return "enum " + u.EnumName
	case *dwarf.TypedefType:
		return u.Name
	case *dwarf.VoidType:
		return "void"
	}
	return t.String()
}
