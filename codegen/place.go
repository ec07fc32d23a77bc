package codegen

import (
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// A loc is where a record, an array or a field lives: in the probe's
// context (loaded directly), in memory the program owns, or behind a
// pointer into kernel or user memory (read with a helper).
type loc struct {
	kind  locKind
	off   int
	m     mem     // locMem
	ptr   operand // locPtr: the base address
	space check.AddrSpace
}

type locKind int

const (
	locCtx locKind = iota
	locMem
	locPtr
)

// fieldOf returns the record field a field expression names, or nil.
func (g *gen) fieldOf(x syntax.Expr) *check.Field {
	f, ok := x.(*syntax.FieldExpr)
	if !ok {
		return nil
	}
	t := g.typeOf(f.X)
	if t.Kind == check.Ptr && t.Elem != nil {
		t = t.Elem
	}
	return t.Field(f.Name)
}

// placeOf finds where the value of a field, index, dereference or
// record expression lives.
func (g *gen) placeOf(x syntax.Expr) loc {
	x = syntax.Unparen(x)
	if e, ok := g.p.Expand[x]; ok {
		return g.placeOf(e)
	}
	switch x := x.(type) {
	case *syntax.Ident:
		if f := builtinVars[x.Name].place; f != nil {
			return f(g, x)
		}
	case *syntax.UnaryExpr:
		if x.Op == syntax.MUL {
			t := g.typeOf(x.X)
			return loc{kind: locPtr, ptr: g.scalar(x.X), space: t.Space}
		}
	case *syntax.FieldExpr:
		bt := g.typeOf(x.X)
		if bt.Kind == check.Tuple {
			i := bt.ElemIndex(x.Name)
			base := g.memOf(x.X)
			return loc{kind: locMem, m: base, off: bt.Offsets[i]}
		}
		f := g.fieldOf(x)
		if bt.Kind == check.Ptr {
			return loc{kind: locPtr, ptr: g.scalar(x.X), off: f.Offset, space: bt.Space}
		}
		base := g.placeOf(x.X)
		base.off += f.Offset
		return base
	case *syntax.IndexExpr:
		bt := g.typeOf(x.X)
		if bt.Kind == check.Tuple {
			// The index is a constant, as for $t.1.
			i := int(g.p.Consts[x.Index].Int)
			return loc{kind: locMem, m: g.memOf(x.X), off: bt.Offsets[i]}
		}
		elem := bt.Elem
		if bt.Kind == check.Str {
			elem = check.TInt8
		}
		if bt.Kind == check.Ptr {
			p := g.owned(g.scalar(x.X))
			idx := g.scale(g.scalar(x.Index), bt)
			r := g.work(p, asm.R1)
			if idx.kind == opImm && fitsImm(idx.imm) {
				g.emit(asm.Add.Imm(r, int32(idx.imm)))
			} else {
				g.emit(asm.Add.Reg(r, g.reg(idx, asm.R2)))
			}
			g.set(p, r)
			g.free(idx)
			return loc{kind: locPtr, ptr: p, space: bt.Space}
		}
		base := g.placeOf(x.X)
		if v, ok := g.p.Consts[x.Index]; ok {
			base.off += int(v.Int) * elem.Size
			return base
		}
		// A variable index into an array: read through its address so
		// the verifier needs no bounds on the offset.
		return g.dynamicIndex(base, x, elem.Size)
	case *syntax.VarExpr:
		return loc{kind: locMem, m: g.vars[x.Name]}
	case *syntax.MapExpr, *syntax.CallExpr, *syntax.StringLit, *syntax.CastExpr, *syntax.TupleExpr, *syntax.BlockExpr:
		return loc{kind: locMem, m: g.memOf(x)}
	}
	g.c.errorf(x, "cannot take the address of %s", syntax.String(x))
	return loc{kind: locMem, m: g.alloc(8, 8)}
}

// dynamicIndex turns base[index] into a pointer location.
func (g *gen) dynamicIndex(base loc, x *syntax.IndexExpr, elemSize int) loc {
	p := g.newTemp()
	r := g.work(p, asm.R1)
	g.ptrArg(r, base)
	if base.kind == locPtr {
		g.free(base.ptr)
	}
	g.set(p, r)
	idx := g.owned(g.scalar(x.Index))
	ri := g.work(idx, asm.R2)
	if elemSize > 1 {
		g.emit(asm.Mul.Imm(ri, int32(elemSize)))
	}
	r = g.work(p, asm.R1)
	g.emit(asm.Add.Reg(r, ri))
	g.set(p, r)
	g.free(idx)
	space := base.space
	if base.kind != locPtr {
		space = check.KernelSpace
	}
	return loc{kind: locPtr, ptr: p, space: space}
}

// readHelper is the helper that copies from memory in space. Kernel
// pointers that BTF describes may still point into user memory (BTF
// mostly lacks __user), so they are read with bpf_probe_read, which on
// x86's separate address spaces picks the right access by the address.
func readHelper(space check.AddrSpace) asm.BuiltinFunc {
	if space == check.UserSpace {
		return asm.FnProbeReadUser
	}
	return asm.FnProbeRead
}

// ptrArg puts the address l denotes into register dst.
func (g *gen) ptrArg(dst asm.Register, l loc) {
	switch l.kind {
	case locCtx:
		g.emit(asm.Mov.Reg(dst, regCtx))
	case locMem:
		g.addr(dst, l.m)
	case locPtr:
		g.load(dst, l.ptr)
	}
	if l.off != 0 {
		g.emit(asm.Add.Imm(dst, int32(l.off)))
	}
}

// readScalar loads an integer or pointer of type t from l; f, when
// given, is the field being read (for bitfields).
func (g *gen) readScalar(l loc, t *check.Type, f *check.Field) operand {
	size := t.Size
	if t.Kind != check.Int {
		size = 8
	}
	if f != nil && f.Bits > 0 {
		size = (f.BitOffset + f.Bits + 7) / 8
		switch {
		case size > 4:
			size = 8
		case size > 2:
			size = 4
		}
	}
	dst := g.newTemp()
	switch l.kind {
	case locCtx:
		r := g.work(dst, asm.R0)
		switch {
		case g.mech == MechTracepoint:
			g.emit(asm.LoadMem(r, regCtx, int16(l.off), sizeOf(size)))
			if t.Kind == check.Int && t.Signed && (f == nil || f.Bits == 0) {
				g.extend(r, size, true)
			}
		case g.mech.regsContext():
			// A function's arguments, numbered by word, are in the
			// registers the calling convention passes them in.
			n := l.off / 8
			if n >= len(argRegs) {
				g.c.errs.Add(g.c.prog.Syntax.File, g.cur, g.cur+1, "argument %d of the function is passed on the stack, which a kprobe cannot read; fentry can", n)
				n = 0
			}
			g.emit(asm.LoadMem(r, regCtx, argRegs[n], asm.DWord))
			g.normalize(r, t)
		default:
			// Trampolines and raw tracepoints pass an array of words.
			g.emit(asm.LoadMem(r, regCtx, int16(l.off), asm.DWord))
			g.normalize(r, t)
		}
		g.set(dst, r)
	case locMem:
		src := l.m.at(l.off, size)
		if int(src.off)%size != 0 {
			// A struct in a tuple is a run of bytes, as bpftrace lays
			// it out; the verifier wants aligned loads from the stack.
			buf := g.allocStack(8)
			g.copyMem(buf.at(0, size), src)
			src = buf
		}
		r := g.work(dst, asm.R0)
		g.loadInt(r, src.base, src.off, intOrWord(t, size))
		g.set(dst, r)
	case locPtr:
		buf := g.allocStack(8)
		g.storeImm(asm.R10, buf.off, 0, asm.DWord)
		g.ptrArg(asm.R3, l)
		g.free(l.ptr)
		g.addr(asm.R1, buf)
		g.emit(asm.Mov.Imm(asm.R2, int32(size)))
		g.call(readHelper(l.space))
		r := g.work(dst, asm.R0)
		g.loadInt(r, asm.R10, buf.off, intOrWord(t, size))
		g.set(dst, r)
	}
	if f != nil && f.Bits > 0 {
		r := g.work(dst, asm.R0)
		if f.BitOffset > 0 {
			g.emit(asm.RSh.Imm(r, int32(f.BitOffset)))
		}
		if f.Bits < 32 {
			g.emit(asm.And.Imm(r, int32(1)<<f.Bits-1))
		} else {
			g.extend(r, f.Bits/8, false)
		}
		g.set(dst, r)
	}
	return dst
}

// intOrWord is the type to load: t itself for integers, else a word of
// the given size.
func intOrWord(t *check.Type, size int) *check.Type {
	if t.Kind == check.Int && t.Size == size {
		return t
	}
	return check.IntType(size, false)
}

// readMem copies a memory-class value of type t from l into dst.
func (g *gen) readMem(l loc, t *check.Type, f *check.Field, dst mem) {
	if f != nil && f.DataLoc {
		g.readDataLoc(l, dst)
		return
	}
	if l.kind == locMem {
		g.convertMem(dst, t, l.m.at(l.off, t.Size), t)
		return
	}
	if l.kind == locCtx && t.Kind == check.Record && g.mech != MechTracepoint {
		g.readArgWords(l, t, dst)
		return
	}
	n := min(dst.size, t.Size)
	g.ptrArg(asm.R3, l)
	if l.kind == locPtr {
		g.free(l.ptr)
	}
	g.addr(asm.R1, dst)
	g.emit(asm.Mov.Imm(asm.R2, int32(n)))
	space := l.space
	if l.kind == locCtx {
		space = check.KernelSpace
	}
	g.call(readHelper(space))
	if dst.size > n {
		g.zero(dst.at(n, dst.size-n))
	}
	// A char[N] with no NUL keeps all N bytes, as in bpftrace: whatever
	// reads a string stops at its size.
}

// readArgWords builds in dst a record of arguments whose fields the
// context holds a word each (in saved registers or a trampoline's array
// of words) rather than as the record's bytes. Each field is stored in
// its own size, the rest of its word zeroed, so that equal arguments
// make equal keys. A record in a tuple may start at any byte, as
// bpftrace lays tuples out, and the verifier wants aligned stores: it is
// then built aside and copied.
func (g *gen) readArgWords(l loc, t *check.Type, dst mem) {
	if dst.off%8 != 0 {
		buf := g.alloc(t.Size, 8)
		g.readArgWords(l, t, buf)
		g.copyMem(dst, buf)
		return
	}
	g.zero(dst)
	for _, f := range t.Fields {
		op := g.readScalar(loc{kind: locCtx, off: l.off + f.Offset}, f.Type, f)
		size := 8
		if f.Type.Kind == check.Int {
			size = f.Type.Size
		}
		g.emit(asm.StoreMem(dst.base, dst.off+int16(f.Offset), g.reg(op, asm.R0), sizeOf(size)))
		g.free(op)
	}
}

// readDataLoc reads a tracepoint __data_loc string: a 32-bit word in the
// record whose low half is the data's offset from the record's start.
func (g *gen) readDataLoc(l loc, dst mem) {
	g.zero(dst)
	g.emit(
		asm.LoadMem(asm.R3, regCtx, int16(l.off), asm.Word),
		asm.And.Imm(asm.R3, 0xffff),
		asm.Add.Reg(asm.R3, regCtx),
	)
	g.addr(asm.R1, dst)
	g.emit(asm.Mov.Imm(asm.R2, int32(dst.size)))
	g.call(asm.FnProbeReadKernelStr)
}
