package check

import (
	"strings"

	"kinst.dev/kinst/syntax"
)

// declared holds the types and constants a program's C declarations
// give. Together with the kernel's BTF it is the one place type names
// resolve; the program's declarations win (see namedType).
type declared struct {
	tags     map[string]*Type // "struct X", "union X", "enum X"
	typedefs map[string]*Type
	enums    map[string]int64
	// enumTypes gives each of the program's enum constants its enum
	// type, which bpftrace 0.26 prints its values as names by.
	enumTypes map[string]*Type
	// complete records which tags have a body, as opposed to a forward
	// declaration or a pointer to a type not yet defined.
	complete map[string]bool
	// broken names the tags ("struct X"), typedefs and enum constants
	// whose declaration had an error, already reported: a use of one
	// fails without a second error.
	broken map[string]bool
	// redefined is a kernel type the program defines anew and uses,
	// if any. bpftrace's clang then sees no kernel type at all: while
	// declarations are laid out, BTF supplies none of their members.
	redefined string
	inDecls   bool
}

// refuseAnonymousEnums reports, as bpftrace 0.17 does before anything
// else, each enum defined with no tag outside a typedef.
func refuseAnonymousEnums(c *checker, prog *syntax.Program) bool {
	for _, d := range prog.Decls {
		if t := d.Type; !d.Typedef && t.Kind == syntax.ENUM && t.Name == "" {
			c.errs.Add(c.file, t.Pos(), t.Pos()+syntax.Pos(len("enum")), "a enum declared outside a typedef needs a name")
		}
	}
	return len(c.errs) > 0
}

// declare lays out the program's declarations in order. Each one hides
// a kernel type of the same name, as in bpftrace 0.17, whose fields come
// from the program's definition; BTF supplies every type the program
// does not declare.
func (c *checker) declare(prog *syntax.Program) {
	c.decls = declared{
		tags:      map[string]*Type{},
		typedefs:  map[string]*Type{},
		enums:     map[string]int64{},
		complete:  map[string]bool{},
		enumTypes: map[string]*Type{},
		broken:    map[string]bool{},
	}
	c.decls.redefined = c.redefinedKernelType(prog)
	c.decls.inDecls = true
	defer func() { c.decls.inDecls = false }()
	for _, d := range prog.Decls {
		base := c.ctype(d.Type)
		if !d.Typedef {
			continue
		}
		if base != nil && d.Type.Kind == syntax.IDENT && d.Type.Align != nil {
			base = c.aligned(base, d.Type.Align)
		}
		for _, n := range d.Names {
			var t *Type
			if base != nil {
				t = c.declarator(base, n)
			}
			if t != nil && n.Align != nil {
				t = c.aligned(t, n.Align)
			}
			if t == nil {
				c.decls.broken[n.Name] = true
				continue
			}
			c.decls.typedefs[n.Name] = t
		}
	}
}

// redefinedKernelType gives the name of the first struct, union, enum
// or typedef the program defines, the kernel's BTF also has and the
// probes use (in a cast, sizeof or offsetof, or as curtask's type), or
// "". bpftrace's clang then gets no kernel type: its header of the
// kernel types a program uses would define that one a second time.
func (c *checker) redefinedKernelType(prog *syntax.Program) string {
	if c.conf.Kernel == nil {
		return ""
	}
	used := map[string]bool{}
	for _, p := range prog.Probes {
		syntax.Inspect(p, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.TypeExpr:
				used[typeName(n.Kind, n.Name)] = true
			case *syntax.Ident:
				if n.Name == "curtask" {
					used["struct task_struct"] = true
				}
			}
			return true
		})
	}
	defined := func(kind syntax.Token, name string) bool {
		if !used[typeName(kind, name)] {
			return false
		}
		_, err := c.conf.Kernel.Type(kind, name)
		return err == nil
	}
	for _, d := range prog.Decls {
		if d.Typedef {
			for _, n := range d.Names {
				if defined(syntax.IDENT, n.Name) {
					return n.Name
				}
			}
		} else if d.Type.Body && d.Type.Name != "" && defined(d.Type.Kind, d.Type.Name) {
			return typeName(d.Type.Kind, d.Type.Name)
		}
	}
	return ""
}

// isBaseWords reports whether a type name is made of C's base type
// words, as opposed to a typedef name.
func isBaseWords(name string) bool {
	for _, w := range strings.Fields(name) {
		switch w {
		case "unsigned", "signed", "char", "short", "int", "long", "_Bool", "bool":
		default:
			return false
		}
	}
	return true
}

// baseType gives the integer type C's base type words name, in any
// order ("long unsigned int" is "unsigned long"), or nil for an invalid
// combination.
func baseType(name string) *Type {
	n := map[string]int{}
	for _, w := range strings.Fields(name) {
		n[w]++
	}
	unsigned := n["unsigned"] > 0
	if n["unsigned"]+n["signed"] > 1 || n["short"] > 1 || n["long"] > 2 || n["char"]+n["_Bool"]+n["bool"] > 1 {
		return nil
	}
	switch {
	case n["_Bool"]+n["bool"] == 1:
		if len(n) > 1 {
			return nil
		}
		return TUint8
	case n["char"] == 1:
		if n["int"]+n["short"]+n["long"] > 0 {
			return nil
		}
		return IntType(1, !unsigned)
	case n["short"] == 1:
		if n["long"] > 0 {
			return nil
		}
		return IntType(2, !unsigned)
	case n["long"] > 0:
		return IntType(8, !unsigned)
	}
	return IntType(4, !unsigned)
}

// ctype resolves a type specifier, defining the struct, union or enum
// it carries a body for. It returns TVoid for void.
func (c *checker) ctype(ct *syntax.CType) *Type {
	if ct.Kind == syntax.IDENT {
		switch ct.Name {
		case "void":
			return TVoid
		case "float":
			return FloatType(4, ct.Name)
		case "double":
			return FloatType(8, ct.Name)
		case "long double":
			return FloatType(16, ct.Name) // x86-64's and arm64's
		}
		if !isBaseWords(ct.Name) {
			return c.namedType(syntax.IDENT, ct.Name, ct)
		}
		if t := baseType(ct.Name); t != nil {
			return t
		}
		c.errorf(ct, "invalid type %s", ct.Name)
		return nil
	}
	tag := ct.Kind.String() + " " + ct.Name
	if !ct.Body {
		if c.decls.broken[tag] {
			return nil
		}
		if t := c.decls.tags[tag]; t != nil {
			return t
		}
		if t := c.namedType(ct.Kind, ct.Name, nil); t != nil {
			return t
		}
		// A forward declaration, or a type only pointed to: complete
		// (or kernel-defined) by the time it is used.
		t := &Type{Kind: Record, Name: tag}
		c.decls.tags[tag] = t
		return t
	}
	if ct.Name != "" && c.decls.complete[tag] {
		c.errorf(ct, "%s is defined twice", tag)
		return nil
	}
	if ct.Kind == syntax.ENUM {
		t := c.defineEnum(ct, tag)
		if t == nil {
			for _, e := range ct.Values {
				if _, ok := c.decls.enums[e.Name]; !ok {
					c.decls.broken[e.Name] = true
				}
			}
			if ct.Name != "" {
				c.decls.broken[tag] = true
			}
		}
		return t
	}
	t := &Type{Kind: Record, Name: tag}
	if ct.Name == "" {
		t.Name = "struct <anonymous>"
		if ct.Kind == syntax.UNION {
			t.Name = "union <anonymous>"
		}
	} else {
		if old := c.decls.tags[tag]; old != nil {
			t = old // fill in what earlier pointers refer to
		}
		c.decls.tags[tag] = t
	}
	if !c.layout(t, ct) {
		if ct.Name != "" {
			c.decls.broken[tag] = true
		}
		return nil
	}
	if ct.Name != "" {
		c.decls.complete[tag] = true
	}
	return t
}

func (c *checker) defineEnum(ct *syntax.CType, tag string) *Type {
	e := &Enum{Tag: tag, Names: map[int64]string{}}
	if ct.Name == "" {
		e.Tag = "enum <anonymous>"
	}
	t := &Type{Kind: Int, Size: 4, Signed: true, Name: tag, Enum: e}
	next := int64(0)
	for _, v := range ct.Values {
		if v.Value != nil {
			n, ok := c.declConst(v.Value)
			if !ok {
				return nil
			}
			next = n
		}
		if _, dup := c.decls.enums[v.Name]; dup {
			c.errorf(&syntax.Ident{NamePos: v.NamePos, Name: v.Name}, "enum constant %s is defined twice", v.Name)
			return nil
		}
		c.decls.enums[v.Name] = next
		c.decls.enumTypes[v.Name] = t
		if _, dup := e.Names[next]; !dup {
			e.Names[next] = v.Name
		}
		next++
	}
	if ct.Name != "" {
		c.decls.tags[tag] = t
		c.decls.complete[tag] = true
	}
	return t
}

// layout places a struct's or union's members as a C compiler for
// x86-64 and arm64 does: each at its natural alignment, bitfields packed
// into units of their declared type, the size rounded to the largest
// alignment.
func (c *checker) layout(t *Type, ct *syntax.CType) bool {
	union := ct.Kind == syntax.UNION
	var structAlign int
	if ct.Align != nil {
		n, ok := c.alignment(ct.Align)
		if !ok {
			return false
		}
		structAlign = n
	}
	bit, size, align := 0, 0, 1
	// place puts a field of type ft at the next free bit; width is -1
	// for an ordinary field, else a bitfield's width (0 only aligns).
	place := func(f *Field, ft *Type, width int, named bool, fieldAlign int) {
		a := cAlign(ft)
		if ct.Packed {
			a = 1
		}
		a = max(a, fieldAlign)
		switch {
		case union:
			f.Offset = 0
		case width >= 0:
			unit := ft.Size * 8
			if width == 0 || !ct.Packed && bit/unit != (bit+width-1)/unit {
				bit = alignUp(bit, unit)
			}
			f.Offset, f.BitOffset = bit/8, bit%8
			bit += width
		default:
			bit = alignUp(alignUp(bit, 8)/8, a) * 8
			f.Offset = bit / 8
			bit += ft.Size * 8
		}
		if union {
			n := ft.Size * 8
			if width >= 0 {
				n = width
			}
			bit = max(bit, n)
		}
		if named {
			align = max(align, a)
		}
		size = max(size, bit)
	}
	for _, cf := range ct.Fields {
		base := c.ctype(cf.Type)
		if base == nil {
			return false
		}
		// In a field, aligned(N) on the type, as on the declarator, only
		// raises the alignment.
		typeAlign := 0
		if cf.Type.Kind == syntax.IDENT && cf.Type.Align != nil {
			n, ok := c.alignment(cf.Type.Align)
			if !ok {
				return false
			}
			typeAlign = n
		}
		if len(cf.Decls) == 0 {
			// An anonymous struct or union: its members are t's, moved
			// to where it lies.
			anon := &Field{}
			place(anon, base, -1, true, 0)
			for _, f := range base.Fields {
				g := *f
				g.Offset += anon.Offset
				t.Fields = append(t.Fields, &g)
			}
			continue
		}
		for _, d := range cf.Decls {
			ft := c.declarator(base, d)
			if ft == nil {
				return false
			}
			f := &Field{Name: d.Name, Type: ft}
			width := -1
			if d.Bits != nil {
				w, ok := c.declConst(d.Bits)
				if !ok {
					return false
				}
				if ft.Kind != Int || w < 0 || int(w) > ft.Size*8 || (w == 0 && d.Name != "") {
					c.errorf(d.Bits, "invalid width %d for bitfield %s of type %s", w, d.Name, ft)
					return false
				}
				width = int(w)
				f.Bits = width
			}
			if width < 0 && !complete(ft) {
				if c.decls.redefined != "" {
					c.errorf(d, "field %s has incomplete type %s: a program that redefines the kernel's %s defines every type its declarations use, as in bpftrace", d.Name, ft, c.decls.redefined)
				} else {
					c.errorf(d, "field %s has incomplete type %s", d.Name, ft)
				}
				return false
			}
			fieldAlign := typeAlign
			if d.Align != nil {
				n, ok := c.alignment(d.Align)
				if !ok {
					return false
				}
				fieldAlign = max(fieldAlign, n)
			}
			place(f, ft, width, d.Name != "", fieldAlign)
			if d.Name != "" {
				t.Fields = append(t.Fields, f)
			}
		}
	}
	align = max(align, structAlign)
	t.Size = alignUp(alignUp(size, 8)/8, align)
	t.calign = align
	return true
}

// alignment evaluates an aligned(N) attribute: a power of two.
func (c *checker) alignment(x syntax.Expr) (int, bool) {
	n, ok := c.declConst(x)
	if !ok {
		return 0, false
	}
	if n < 1 || n > 4096 || n&(n-1) != 0 {
		c.errorf(x, "alignment %d is not a power of two up to 4096", n)
		return 0, false
	}
	return int(n), true
}

// complete reports whether values of t have a known layout: a record
// only forward-declared (or only pointed to) has none; an empty struct
// the program defines has one, of size 0, as in GNU C.
func complete(t *Type) bool {
	return t.Kind != Void && !(t.Kind == Record && t.Size == 0 && t.BTF == nil && len(t.Fields) == 0 && t.calign == 0)
}

// declarator applies a declarator's pointers and array dimensions to
// base.
func (c *checker) declarator(base *Type, d *syntax.Declarator) *Type {
	t := base
	if d.Func {
		return &Type{Kind: Ptr, Size: 8}
	}
	for i := 0; i < d.Ptr; i++ {
		elem := t
		if elem.Kind == Void {
			elem = nil
		}
		t = &Type{Kind: Ptr, Size: 8, Elem: elem}
	}
	if len(d.Dims) > 0 && !complete(t) {
		c.errorf(d, "array %s has elements of incomplete type %s", d.Name, t)
		return nil
	}
	for i := len(d.Dims) - 1; i >= 0; i-- {
		n, ok := c.declConst(d.Dims[i])
		if !ok {
			return nil
		}
		if n < 0 || n > 1<<20 {
			c.errorf(d.Dims[i], "array size %d is out of range", n)
			return nil
		}
		// char arrays are strings, as in bpftrace; unsigned char
		// arrays stay arrays of numbers.
		if t.Kind == Int && t.Size == 1 && t.Signed && i == len(d.Dims)-1 {
			t = StrType(int(n))
			continue
		}
		t = &Type{Kind: Array, Size: t.Size * int(n), Elem: t, Len: int(n)}
	}
	if t.Kind == Void {
		c.errorf(d, "%s cannot have type void", d.Name)
		return nil
	}
	return t
}

// aligned gives a typedef's type the alignment its aligned(N) attribute
// asks for, which may lower it as well as raise it, as in gcc. It
// returns nil after reporting a bad N, or a struct not yet laid out,
// whose copy would never be.
func (c *checker) aligned(t *Type, attr syntax.Expr) *Type {
	n, ok := c.alignment(attr)
	if !ok {
		return nil
	}
	if n == cAlign(t) {
		return t
	}
	if t.Kind == Record && !complete(t) {
		c.errorf(attr, "aligned(%d) needs %s defined first", n, t)
		return nil
	}
	a := *t
	a.calign = n
	return &a
}

// cAlign is the alignment C gives a value of type t.
func cAlign(t *Type) int {
	if t.calign > 0 {
		return t.calign
	}
	switch t.Kind {
	case Int, Float:
		return t.Size
	case Str:
		return 1
	case Array:
		return cAlign(t.Elem)
	case Record:
		if t.BTF != nil {
			return btfAlign(t.BTF)
		}
		return 1
	}
	return 8
}

// namedType looks a type name up: the program's declarations first,
// then, in a uprobe, the binary's DWARF, then the kernel's BTF. at, when
// set, is where to report a failure.
func (c *checker) namedType(kind syntax.Token, name string, at syntax.Node) *Type {
	if c.decls.broken[typeName(kind, name)] {
		return nil
	}
	if kind == syntax.IDENT {
		if t := c.decls.typedefs[name]; t != nil {
			return t
		}
	} else if t := c.decls.tags[kind.String()+" "+name]; t != nil {
		return t
	}
	if c.probe != nil && c.probe.Targets[0].UserType != nil {
		// A probe in a user binary sees the binary's own types first.
		if t, err := c.probe.Targets[0].UserType(kind, name); err == nil {
			return t
		}
	}
	if c.decls.inDecls && c.decls.redefined != "" {
		if at != nil {
			c.errorf(at, "unknown type %s: a program that redefines the kernel's %s defines every type its declarations use, as in bpftrace", typeName(kind, name), c.decls.redefined)
		}
		return nil
	}
	if c.conf.Kernel == nil {
		if at != nil {
			c.errorf(at, "unknown type %s: it is not declared and kernel types are not available (no BTF)", typeName(kind, name))
		}
		return nil
	}
	t, err := c.conf.Kernel.Type(kind, name)
	if err != nil {
		if at != nil {
			c.errorf(at, "unknown type %s", typeName(kind, name))
		}
		return nil
	}
	return t
}

func typeName(kind syntax.Token, name string) string {
	if kind == syntax.IDENT {
		return name
	}
	return kind.String() + " " + name
}

// declConst evaluates an integer constant expression in a declaration.
func (c *checker) declConst(x syntax.Expr) (int64, bool) {
	switch x := x.(type) {
	case *syntax.IntLit:
		return int64(x.Value), true
	case *syntax.ParenExpr:
		return c.declConst(x.X)
	case *syntax.Ident:
		if v, ok := c.enumValue(x.Name); ok {
			return v, true
		}
		if !c.decls.broken[x.Name] {
			c.errorf(x, "unknown constant %s", x.Name)
		}
		return 0, false
	case *syntax.UnaryExpr:
		v, ok := c.declConst(x.X)
		switch {
		case !ok:
			return 0, false
		case x.Op == syntax.SUB:
			return -v, true
		case x.Op == syntax.TILDE:
			return ^v, true
		case x.Op == syntax.NOT:
			return int64(b2u(v == 0)), true
		}
	case *syntax.BinaryExpr:
		a, ok1 := c.declConst(x.X)
		b, ok2 := c.declConst(x.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		v, ok := fold(x.Op, uint64(a), uint64(b), true)
		if !ok {
			c.errorf(x, "division by zero")
			return 0, false
		}
		return int64(v), true
	}
	c.errorf(x, "%s is not an integer constant", syntax.String(x))
	return 0, false
}

// enumValue finds an enum constant: the program's, then the kernel's.
func (c *checker) enumValue(name string) (int64, bool) {
	if v, ok := c.decls.enums[name]; ok {
		return v, true
	}
	if c.conf.Kernel != nil {
		return c.conf.Kernel.Enum(name)
	}
	return 0, false
}
