package elfsym

import (
	"debug/dwarf"
	"errors"
	"fmt"

	"kinst.dev/kinst/kernel"
)

// ErrNoDebugInfo reports a file without DWARF debug information.
var ErrNoDebugInfo = errors.New("no DWARF debug information (build it with -g)")

// A Param is a function parameter as the file's DWARF describes it.
type Param struct {
	Name string
	Type dwarf.Type
}

// A Func is a function with its parameters, for uprobe arguments.
type Func struct {
	Name   string
	Params []Param
}

// Debug holds the DWARF data of one ELF file.
type Debug struct {
	path string
	data *dwarf.Data
	src  sourceIndex // what Source has read
}

// OpenDebug reads the DWARF data of the ELF file at path, or of its
// separate debug file (by build ID or .gnu_debuglink, as for symbols);
// the error wraps ErrNoDebugInfo when neither has any.
func OpenDebug(path string) (*Debug, error) {
	return openDebug(path, path)
}

// openDebug is OpenDebug of the file at openPath, which may be a /proc
// alias, named path, whose directory is where .gnu_debuglink points.
func openDebug(openPath, path string) (*Debug, error) {
	ef, err := openELF(openPath, path)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	if ef.Section(".debug_info") == nil {
		dbg := findDebugFile(ef, path)
		if dbg == "" {
			return nil, fmt.Errorf("%s: %w", path, ErrNoDebugInfo)
		}
		if ef, err = OpenELF(dbg); err != nil {
			return nil, err
		}
		defer ef.Close()
		if ef.Section(".debug_info") == nil {
			return nil, fmt.Errorf("%s and its debug file %s: %w", path, dbg, ErrNoDebugInfo)
		}
	}
	data, err := ef.DWARF()
	if err != nil {
		return nil, fmt.Errorf("read DWARF of %s: %w", path, err)
	}
	return &Debug{path: path, data: data}, nil
}

// Funcs lists the functions whose names match the glob pattern, with
// their parameters, in the order the DWARF gives them. Declarations
// without a body and inlined-only copies are skipped.
func (d *Debug) Funcs(pattern string) ([]Func, error) {
	var out []Func
	seen := map[string]bool{}
	r := d.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF of %s: %w", d.path, err)
		}
		if e == nil {
			return out, nil
		}
		if e.Tag != dwarf.TagSubprogram {
			if e.Tag != dwarf.TagCompileUnit && e.Children {
				r.SkipChildren()
			}
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		_, hasCode := e.Val(dwarf.AttrLowpc).(uint64)
		if !e.Children || name == "" || !hasCode || seen[name] || !kernel.Match(pattern, name) {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		seen[name] = true
		f := Func{Name: name}
		for {
			c, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("read DWARF of %s: %w", d.path, err)
			}
			if c == nil || c.Tag == 0 {
				break
			}
			if c.Tag == dwarf.TagFormalParameter {
				pname, _ := c.Val(dwarf.AttrName).(string)
				off, ok := c.Val(dwarf.AttrType).(dwarf.Offset)
				if !ok {
					continue
				}
				t, err := d.data.Type(off)
				if err != nil {
					return nil, fmt.Errorf("type of %s parameter %s in %s: %w", name, pname, d.path, err)
				}
				f.Params = append(f.Params, Param{Name: pname, Type: t})
			}
			if c.Children {
				r.SkipChildren()
			}
		}
		out = append(out, f)
	}
}

// attrNoreturn is DW_AT_noreturn, which debug/dwarf does not name.
const attrNoreturn dwarf.Attr = 0x87

// NoReturn lists the functions the DWARF marks as never returning
// (C11's _Noreturn, GCC's noreturn attribute): those defined in the file
// and those it declares for its calls, which a static program links in.
// Each is named as its symbol is: by linkage name where it has one.
func (d *Debug) NoReturn() ([]string, error) {
	var out []string
	r := d.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF of %s: %w", d.path, err)
		}
		if e == nil {
			return out, nil
		}
		if e.Tag == dwarf.TagSubprogram {
			if never, _ := e.Val(attrNoreturn).(bool); never {
				name, _ := e.Val(dwarf.AttrLinkageName).(string)
				if name == "" {
					name, _ = e.Val(dwarf.AttrName).(string)
				}
				if name != "" {
					out = append(out, name)
				}
			}
		}
		if e.Tag != dwarf.TagCompileUnit && e.Children {
			r.SkipChildren()
		}
	}
}

// Type finds a named struct, union, enum (kind "struct", "union",
// "enum") or typedef (kind "").
func (d *Debug) Type(kind, name string) (dwarf.Type, error) {
	r := d.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF of %s: %w", d.path, err)
		}
		if e == nil {
			return nil, fmt.Errorf("%s: no type %s", d.path, typeName(kind, name))
		}
		want := map[string]dwarf.Tag{"struct": dwarf.TagStructType, "union": dwarf.TagUnionType, "enum": dwarf.TagEnumerationType, "": dwarf.TagTypedef}[kind]
		if n, _ := e.Val(dwarf.AttrName).(string); e.Tag == want && n == name {
			if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); !decl {
				return d.data.Type(e.Offset)
			}
		}
		if e.Tag != dwarf.TagCompileUnit && e.Children {
			r.SkipChildren()
		}
	}
}

func typeName(kind, name string) string {
	if kind == "" {
		return name
	}
	return kind + " " + name
}
